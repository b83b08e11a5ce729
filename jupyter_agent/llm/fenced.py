"""Text tool modes for tool-weak models: ``fenced`` and ``xml``.

In a text mode no tool schema is sent; the tools are described in the system prompt
(:func:`render_tools_for_prompt`) and the model calls them in plain text:

- ``fenced``: a fenced block whose info string is ``python`` (also ``py``, ``python3``,
  ``ipython``) calls ``run_cell``; ``bash`` (also ``sh``, ``shell``) calls ``bash``. A fence
  of any other language, or with none, is ordinary text and is not run.
- ``xml``: ``<run_cell>code</run_cell>`` and ``<bash>command</bash>``.
- A tool that takes ``writes`` (``toolcaller@v5``'s) is marked as writing files with
  ```` ```python writes ```` / ``<run_cell writes>``: the call's ``writes`` is true. For a
  tool without it the marked line is prose, as it always was (older logs replay).

:func:`parse_text_tool_calls` turns a reply's text into Text and ToolCall parts, in the
order written; a malformed call (an unclosed fence or tag, an empty block, a tag or fence
naming a tool that is not offered) gives no calls and an error string meant for the model.
Tool results come back to the model as a ```` ```result ```` fence or a ``<result>`` tag; if
the model writes one itself (a hallucinated result), the text from there on is dropped, and
:func:`stop_sequences` lets the adapter stop generation at that point where the API allows.

:func:`to_text_mode` rewrites a conversation for a text mode: an assistant's ToolCalls are
rendered back as the blocks the model wrote and ToolResults become user text (their File
parts follow as File parts), so the history reads as one coherent text conversation.
ToolCall ids are derived from the reply text, so replays get the same ids.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from jupyter_agent.messages import File, Message, Part, Text, Thinking, ToolCall, ToolResult
from jupyter_agent.tools import ToolSpec

__all__ = [
    "TEXT_MODES",
    "parse_text_tool_calls",
    "render_tools_for_prompt",
    "stop_sequences",
    "to_text_mode",
]

TEXT_MODES = frozenset({"fenced", "xml"})
_FENCE_LANGS = {
    "python": "run_cell",
    "py": "run_cell",
    "python3": "run_cell",
    "ipython": "run_cell",
    "bash": "bash",
    "sh": "bash",
    "shell": "bash",
}
_MAIN_LANG = {"run_cell": "python", "bash": "bash"}
# Tags a model plausibly meant as a tool call; anything else in angle brackets is prose.
_TOOLISH_TAGS = frozenset(
    {
        "python",
        "code",
        "execute",
        "run",
        "run_code",
        "run_python",
        "cell",
        "shell",
        "sh",
        "tool",
        "tool_call",
        "function_call",
        "ipython",
        "run_cell",
        "bash",
    }
)
_OPEN_FENCE = re.compile(r"^([ \t]*)(`{3,})[ \t]*([A-Za-z0-9_+.-]*)[ \t]*$")
# A tool fence or tag marked as writing files (``toolcaller@v5``'s ``writes`` argument):
# only for a tool that takes ``writes``; for any other the line is prose, as it always was.
_OPEN_WRITES_FENCE = re.compile(r"^([ \t]*)(`{3,})[ \t]*([A-Za-z0-9_+.-]+)[ \t]+writes[ \t]*$")
_TAG = re.compile(r"<([A-Za-z_][A-Za-z0-9_-]*)( writes)?>")


def _takes_writes(tool: ToolSpec | None) -> bool:
    return tool is not None and "writes" in tool.input_schema.get("properties", {})


def stop_sequences(mode: str) -> list[str]:
    """Where generation should stop in ``mode``: where the model starts writing a result."""
    if mode == "fenced":
        return ["```result"]
    if mode == "xml":
        return ["<result"]
    return []


def render_tools_for_prompt(tools: Sequence[ToolSpec], mode: str) -> str:
    """The system-prompt section describing ``tools`` and exactly how to call them in ``mode``."""
    if mode not in TEXT_MODES:
        raise ValueError(f"not a text tool mode: {mode!r}")
    lines = ["# Tools", ""]
    if mode == "fenced":
        lines.append(
            "You call a tool by writing a fenced code block in your reply. Every block runs, "
            "in order, when your message ends; the results come back in the next message."
        )
    else:
        lines.append(
            "You call a tool by writing its XML tag in your reply. Every tag runs, in order, "
            "when your message ends; the results come back in the next message."
        )
    lines.append("")
    for tool in tools:
        arg = tool.argument
        lines.append(f"## {tool.name}")
        lines.append(tool.description)
        lines.append("Call it like this:")
        if mode == "fenced":
            lang = _MAIN_LANG.get(tool.name, tool.name)
            lines += [f"```{lang}", f"<the {arg}>", "```", ""]
            if _takes_writes(tool):
                lines += [
                    f"When it writes or deletes files, open the block with ```{lang} writes "
                    "instead (the person may have to approve it first).",
                    "",
                ]
        else:
            lines += [f"<{tool.name}>", f"<the {arg}>", f"</{tool.name}>", ""]
            if _takes_writes(tool):
                lines += [
                    f"When it writes or deletes files, open it with <{tool.name} writes> "
                    "instead (the person may have to approve it first).",
                    "",
                ]
    lines.append("Rules:")
    if mode == "fenced":
        names = " or ".join(f"```{_MAIN_LANG.get(t.name, t.name)}" for t in tools)
        lines += [
            f"- Every {names} block is run. To show code without running it, "
            "use another info string such as ```text.",
            "- Close every block with ``` on a line of its own. Never leave a block empty.",
            "- After your last block, stop: never write a result yourself. Results arrive "
            "in the next message as ```result blocks.",
            f"- When you need no tool, answer in plain text without any {names} block.",
        ]
    else:
        lines += [
            "- Put the raw code inside the tag: no markdown fence, no escaping.",
            "- Close every tag. Never leave a tag empty. Use no other tool tags.",
            "- After your last tag, stop: never write a result yourself. Results arrive "
            'in the next message as <result tool="..."> tags.',
            "- When you need no tool, answer in plain text without tool tags.",
        ]
    return "\n".join(lines)


def _call_id(text: str, index: int) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    return f"txt_{digest}_{index}"


def _cut_hallucinated_result(text: str, mode: str) -> str:
    for marker in stop_sequences(mode):
        at = text.find(marker)
        if at >= 0:
            return text[:at]
    return text


def parse_text_tool_calls(
    text: str, mode: str, tools: Sequence[ToolSpec]
) -> tuple[tuple[Part, ...], str | None]:
    """Split ``text`` into Text and ToolCall parts; ``(parts, None)`` or ``((Text,), error)``.

    On error the parts are the whole text (no calls) and the error says what to fix.
    """
    if mode not in TEXT_MODES:
        raise ValueError(f"not a text tool mode: {mode!r}")
    offered = {t.name: t for t in tools}
    body = _cut_hallucinated_result(text, mode)
    pieces, error = (_parse_fenced if mode == "fenced" else _parse_xml)(body, offered)
    if error is not None:
        return ((Text(text=text),) if text else ()), error
    if not any(isinstance(piece, tuple) for piece in pieces):
        return ((Text(text=body),) if body.strip() else ()), None
    parts: list[Part] = []
    index = 0
    for piece in pieces:
        if isinstance(piece, str):
            if piece.strip():
                parts.append(Text(text=piece.strip("\n")))
            continue
        name, code, writes = piece
        arg = offered[name].argument
        args: dict[str, object] = {arg: code}
        if writes:
            args["writes"] = True
        parts.append(ToolCall(id=_call_id(text, index), name=name, args=args))
        index += 1
    return tuple(parts), None


_Piece = str | tuple[str, str, bool]  # prose, or (tool, its argument, marked writes)


def _parse_fenced(text: str, offered: dict[str, ToolSpec]) -> tuple[list[_Piece], str | None]:
    pieces: list[_Piece] = []
    prose: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = _OPEN_FENCE.match(lines[i])
        writes = False
        if m is None:
            m = _OPEN_WRITES_FENCE.match(lines[i])
            writes = m is not None and _takes_writes(
                offered.get(_FENCE_LANGS.get(m.group(3).lower(), ""))
            )
            if not writes:
                m = None
        if m is None:
            prose.append(lines[i])
            i += 1
            continue
        indent, ticks, lang = len(m.group(1)), m.group(2), m.group(3).lower()
        close = re.compile(rf"^[ \t]*`{{{len(ticks)},}}[ \t]*$")
        end = next((j for j in range(i + 1, len(lines)) if close.match(lines[j])), None)
        tool = _FENCE_LANGS.get(lang)
        if tool is None:  # an ordinary fence: text, skipped whole so its inside is not parsed
            stop = len(lines) if end is None else end + 1
            prose.extend(lines[i:stop])
            i = stop
            continue
        if tool not in offered:
            return [], (
                f"a ```{lang} block calls the {tool} tool, which is not available here; "
                f"available: {', '.join(offered) or 'none'}"
            )
        if end is None:
            return [], (
                f"the ```{lang} block opened on line {i + 1} is never closed: "
                f"end it with {ticks} on a line of its own"
            )
        body = [ln[indent:] if ln[:indent].strip() == "" else ln for ln in lines[i + 1 : end]]
        code = "\n".join(body)
        if not code.strip():
            return [], f"the ```{lang} block on line {i + 1} is empty: put the code inside it"
        if prose:
            pieces.append("\n".join(prose))
            prose = []
        pieces.append((tool, code, writes))
        i = end + 1
    if prose:
        pieces.append("\n".join(prose))
    return pieces, None


def _strip_inner_fence(code: str) -> str:
    lines = code.strip("\n").split("\n")
    if len(lines) >= 2 and _OPEN_FENCE.match(lines[0]) and lines[-1].strip().startswith("```"):
        return "\n".join(lines[1:-1])
    return code


def _parse_xml(text: str, offered: dict[str, ToolSpec]) -> tuple[list[_Piece], str | None]:
    pieces: list[_Piece] = []
    pos = 0
    for m in _TAG.finditer(text):
        if m.start() < pos:
            continue
        name = m.group(1)
        if name not in _TOOLISH_TAGS:
            continue
        writes = m.group(2) is not None
        if writes and not _takes_writes(offered.get(name)):
            continue  # prose, as such a tag always was
        if name not in offered:
            return [], (
                f"<{name}> is not a tool here; call one of: "
                + ", ".join(f"<{n}>...</{n}>" for n in offered)
            )
        end = text.find(f"</{name}>", m.end())
        if end < 0:
            return [], f"the <{name}> tag is never closed: end it with </{name}>"
        code = _strip_inner_fence(text[m.end() : end].strip("\n"))
        if not code.strip():
            return [], f"the <{name}> tag is empty: put the {offered[name].argument} inside it"
        if text[pos : m.start()].strip():
            pieces.append(text[pos : m.start()])
        pieces.append((name, code, writes))
        pos = end + len(f"</{name}>")
    if text[pos:].strip():
        pieces.append(text[pos:])
    return pieces, None


def _fence_for(body: str) -> str:
    if "```" not in body:  # the common case, and a str search is far cheaper than a regex
        return "```"
    longest = max((len(run) for run in re.findall(r"`{3,}", body)), default=0)
    return "`" * max(3, longest + 1)


def _render_call(call: ToolCall, mode: str) -> str:
    value = next(iter(call.args.values()), "") if call.args else ""
    code = value if isinstance(value, str) else str(value)
    mark = " writes" if call.args.get("writes") is True else ""
    if mode == "fenced":
        fence = _fence_for(code)
        return f"{fence}{_MAIN_LANG.get(call.name, call.name)}{mark}\n{code}\n{fence}"
    return f"<{call.name}{mark}>\n{code}\n</{call.name}>"


def _render_result(result: ToolResult, name: str, mode: str) -> str:
    digest = "\n".join(p.text for p in result.content if isinstance(p, Text))
    if mode == "fenced":
        fence = _fence_for(digest)
        head = f"Result of {name}" + (" (error)" if result.is_error else "") + ":"
        return f"{head}\n{fence}result\n{digest}\n{fence}"
    flag = ' is_error="true"' if result.is_error else ""
    return f'<result tool="{name}"{flag}>\n{digest}\n</result>'


def _flush(parts: list[Part], chunks: list[str]) -> None:
    if chunks:
        parts.append(Text(text="\n\n".join(c for c in chunks if c)))
        chunks.clear()


def to_text_mode(messages: Sequence[Message], mode: str) -> list[Message]:
    """``messages`` rewritten for text mode ``mode`` (see the module doc).

    The system prompt is not touched: the caller composes it with
    :func:`render_tools_for_prompt` (the loop does, so the text is fingerprinted with it).
    """
    if mode not in TEXT_MODES:
        raise ValueError(f"not a text tool mode: {mode!r}")
    names: dict[str, str] = {}
    out: list[Message] = []
    for msg in messages:
        parts: list[Part] = []
        chunks: list[str] = []

        for part in msg.parts:
            if isinstance(part, ToolCall):
                names[part.id] = part.name
                chunks.append(_render_call(part, mode))
            elif isinstance(part, ToolResult):
                chunks.append(_render_result(part, names.get(part.call_id, "run_cell"), mode))
                files = [p for p in part.content if isinstance(p, File)]
                if files:
                    _flush(parts, chunks)
                    parts.extend(files)
            elif isinstance(part, Text):
                chunks.append(part.text)
            else:
                assert isinstance(part, (Thinking, File))
                _flush(parts, chunks)
                parts.append(part)
        _flush(parts, chunks)
        out.append(Message(role=msg.role, parts=tuple(parts)))
    return out
