"""The fake provider's script: a list of steps, each answering one model request.

The format is documented in ``docs/fake-script.md``. :func:`parse_script` turns JSON data
(or a file, or a JSON string) into a :class:`Script`, raising
:class:`~jupyter_agent.exceptions.ConfigError` naming the step index and the field when
something is wrong, so a typo in a test's script fails loudly instead of silently.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from jupyter_agent.exceptions import ConfigError

__all__ = ["ErrorSpec", "Route", "Script", "Step", "user_texts", "parse_script", "parse_step"]

STOPS = ("done", "tool", "length")
TOOL_MODES = ("native", "fenced", "xml")
USAGE_KEYS = ("in", "out", "cache_read", "cache_write", "reasoning")
EXPECT_KEYS = ("last_user_contains", "system_contains", "model")
STEP_KEYS = (
    "text",
    "thinking",
    "cells",
    "bash",
    "writes",
    "stop",
    "usage",
    "delay_s",
    "error",
    "malformed",
    "raw_body",
    "raw_stream",
    "timeout",
    "stream_error_after",
    "stream_error_type",
    "expect",
    "tool_mode",
    "comment",
)


@dataclass(frozen=True, kw_only=True)
class ErrorSpec:
    """An HTTP error reply: ``status``, optional ``retry-after`` / ``retry-after-ms``."""

    status: int
    retry_after: str | None = None
    retry_after_ms: int | None = None
    type: str | None = None
    message: str | None = None


@dataclass(frozen=True, kw_only=True)
class Step:
    """One scripted answer. See ``docs/fake-script.md`` for every field."""

    text: str | None = None
    thinking: str | None = None
    cells: tuple[str, ...] = ()
    bash: tuple[str, ...] = ()
    #: Native tool calls of the step say ``writes: true`` (``toolcaller@v5``'s argument).
    writes: bool = False
    stop: str | None = None
    usage: Mapping[str, int] = field(default_factory=dict)
    delay_s: float = 0.0
    error: ErrorSpec | None = None
    malformed: bool = False
    raw_body: str | None = None
    raw_stream: str | None = None
    timeout: bool = False
    stream_error_after: int | None = None
    stream_error_type: str = "overloaded_error"
    expect: Mapping[str, str] = field(default_factory=dict)
    tool_mode: str = "native"

    @property
    def effective_stop(self) -> str:
        """``stop`` if given, else ``tool`` when the step calls a tool natively, else ``done``."""
        if self.stop is not None:
            return self.stop
        has_tools = bool(self.cells or self.bash)
        return "tool" if has_tools and self.tool_mode == "native" else "done"


@dataclass(frozen=True, kw_only=True)
class Route:
    """Steps played for a turn whose opening user message contains ``when``."""

    when: str
    steps: tuple[Step, ...]


@dataclass(frozen=True, kw_only=True)
class Script:
    """The steps, answered in order; with ``repeat`` the script loops forever.

    With ``per_turn`` each conversation turn plays the script from its first step: the step
    answered is the number of model replies in the request since its last plain user message
    (see :func:`turn_position`), not the number of requests served, so concurrent
    conversations never share (or interleave) steps. With ``prefix_cache`` the replies'
    usage reports the request's longest prefix answered before as cache reads.
    """

    steps: tuple[Step, ...]
    repeat: bool = False
    per_turn: bool = False
    #: Emulate prompt caching (:mod:`jupyter_agent.llm.fake.cache`): report ``cache_read``.
    prefix_cache: bool = False
    #: ``per_turn`` only: the first route whose ``when`` the turn's opening user message
    #: contains plays its steps instead of ``steps`` (several scripted questions, one fake).
    routes: tuple[Route, ...] = ()

    def steps_for(self, wire: str, body: dict[str, Any]) -> tuple[Step, ...]:
        """The steps that answer ``body``: those of the route its turn's opening message
        names (the newest user message that is no tool result: a native one, or a text
        mode's ``Result of``/``<result`` message), else ``steps``."""
        if not self.routes:
            return self.steps
        for text in reversed(user_texts(wire, body)):
            if text.lstrip().startswith(_TEXT_RESULTS):
                continue  # a fenced or xml tool loop's cell result
            return next((r.steps for r in self.routes if r.when in text), self.steps)
        return self.steps


#: How a text tool mode's result message begins (:mod:`jupyter_agent.llm.fenced`).
_TEXT_RESULTS: Final = ("Result of ", "```result", "<result")


def _fail(index: int, name: str, problem: str) -> ConfigError:
    return ConfigError(f"fake script step {index}: field {name!r}: {problem}")


def _str(index: int, name: str, value: Any, *, empty_ok: bool = False) -> str:
    if not isinstance(value, str) or (not empty_ok and not value):
        raise _fail(index, name, "must be a non-empty string")
    return value


def _strings(index: int, name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise _fail(index, name, "must be a list of non-empty strings")
    return tuple(value)


def _number(index: int, name: str, value: Any, *, integer: bool = False) -> float:
    ok_type = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, ok_type) or value < 0:
        kind = "integer" if integer else "number"
        raise _fail(index, name, f"must be a non-negative {kind}")
    return float(value)


def _flag(index: int, name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise _fail(index, name, "must be true or false")
    return value


def _error(index: int, value: Any) -> ErrorSpec:
    if not isinstance(value, dict):
        raise _fail(index, "error", 'must be an object like {"status": 429}')
    unknown = set(value) - {"status", "retry_after", "retry_after_ms", "type", "message"}
    if unknown:
        raise _fail(index, f"error.{sorted(unknown)[0]}", "unknown field")
    status = value.get("status")
    if isinstance(status, bool) or not isinstance(status, int) or not 400 <= status <= 599:
        raise _fail(index, "error.status", "must be an HTTP error status (400-599)")
    retry_after = value.get("retry_after")
    if retry_after is not None:
        if isinstance(retry_after, (int, float)) and not isinstance(retry_after, bool):
            retry_after = f"{retry_after:g}"
        retry_after = _str(index, "error.retry_after", retry_after)
    retry_ms = value.get("retry_after_ms")
    if retry_ms is not None:
        retry_ms = int(_number(index, "error.retry_after_ms", retry_ms, integer=True))
    kind = value.get("type")
    message = value.get("message")
    return ErrorSpec(
        status=status,
        retry_after=retry_after,
        retry_after_ms=retry_ms,
        type=None if kind is None else _str(index, "error.type", kind),
        message=None if message is None else _str(index, "error.message", message),
    )


def _mapping(
    index: int, name: str, value: Any, keys: tuple[str, ...], *, ints: bool
) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(index, name, "must be an object")
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key not in keys:
            raise _fail(index, f"{name}.{key}", f"unknown field (known: {', '.join(keys)})")
        if ints:
            out[key] = int(_number(index, f"{name}.{key}", item, integer=True))
        else:
            out[key] = _str(index, f"{name}.{key}", item)
    return out


def parse_step(index: int, data: Any) -> Step:
    """Validate one step (``index`` is only used in error messages)."""
    if not isinstance(data, dict):
        raise ConfigError(f"fake script step {index}: must be an object, got {type(data).__name__}")
    for key in data:
        if key not in STEP_KEYS:
            raise _fail(index, key, "unknown field")
    get = data.get
    stop = get("stop")
    if stop is not None and stop not in STOPS:
        raise _fail(index, "stop", f"must be one of {', '.join(STOPS)}")
    tool_mode = get("tool_mode", "native")
    if tool_mode not in TOOL_MODES:
        raise _fail(index, "tool_mode", f"must be one of {', '.join(TOOL_MODES)}")
    after = get("stream_error_after")
    return Step(
        text=None if get("text") is None else _str(index, "text", get("text")),
        thinking=None if get("thinking") is None else _str(index, "thinking", get("thinking")),
        cells=_strings(index, "cells", get("cells", [])),
        bash=_strings(index, "bash", get("bash", [])),
        writes=_flag(index, "writes", get("writes", False)),
        stop=stop,
        usage=_mapping(index, "usage", get("usage", {}), USAGE_KEYS, ints=True),
        delay_s=_number(index, "delay_s", get("delay_s", 0)),
        error=None if get("error") is None else _error(index, get("error")),
        malformed=_flag(index, "malformed", get("malformed", False)),
        raw_body=None if get("raw_body") is None else _str(index, "raw_body", get("raw_body")),
        raw_stream=None
        if get("raw_stream") is None
        else _str(index, "raw_stream", get("raw_stream")),
        timeout=_flag(index, "timeout", get("timeout", False)),
        stream_error_after=None
        if after is None
        else int(_number(index, "stream_error_after", after, integer=True)),
        stream_error_type=_str(
            index, "stream_error_type", get("stream_error_type", "overloaded_error")
        ),
        expect=_mapping(index, "expect", get("expect", {}), EXPECT_KEYS, ints=False),
        tool_mode=tool_mode,
    )


def parse_script(source: Script | list[Any] | dict[str, Any] | str | Path) -> Script:
    """A :class:`Script` from steps, ``{"steps": [...], "repeat": bool}``, JSON text or a file.

    A ``str`` starting with ``[`` or ``{`` is JSON text; any other ``str`` is a file path.
    """
    if isinstance(source, Script):
        return source
    data: Any = source
    if isinstance(source, Path) or (isinstance(source, str) and source.lstrip()[:1] not in "[{"):
        try:
            data = Path(source).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"fake script file cannot be read: {exc}") from exc
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"fake script is not valid JSON: {exc}") from exc
    repeat = per_turn = prefix_cache = False
    routes: tuple[Route, ...] = ()
    if isinstance(data, dict):
        unknown = set(data) - {"steps", "repeat", "per_turn", "prefix_cache", "routes"}
        if unknown:
            raise ConfigError(f"fake script: unknown top-level field {sorted(unknown)[0]!r}")
        repeat = data.get("repeat", False)
        per_turn = data.get("per_turn", False)
        prefix_cache = data.get("prefix_cache", False)
        flags = (("repeat", repeat), ("per_turn", per_turn), ("prefix_cache", prefix_cache))
        for name, flag in flags:
            if not isinstance(flag, bool):
                raise ConfigError(f"fake script: field {name!r} must be true or false")
        routes = _routes(data.get("routes", []), per_turn)
        data = data.get("steps", [] if routes else None)
    if not isinstance(data, list):
        raise ConfigError('fake script: must be a list of steps or {"steps": [...]}')
    if repeat and not data:
        raise ConfigError("fake script: a repeating script needs at least one step")
    steps = tuple(parse_step(i, s) for i, s in enumerate(data))
    return Script(
        steps=steps, repeat=repeat, per_turn=per_turn, prefix_cache=prefix_cache, routes=routes
    )


def _routes(data: Any, per_turn: bool) -> tuple[Route, ...]:
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise ConfigError('fake script: "routes" must be a list of {"when", "steps"}')
    if data and not per_turn:
        raise ConfigError('fake script: "routes" needs "per_turn": true')
    out = []
    for k, route in enumerate(data):
        unknown = set(route) - {"when", "steps"}
        when, steps = route.get("when"), route.get("steps")
        if unknown or not isinstance(when, str) or not when or not isinstance(steps, list):
            steps = None
        if not steps:
            raise ConfigError(
                f'fake script: route {k} must be {{"when": non-empty text, "steps": [a step, ...]}}'
            )
        out.append(Route(when=when, steps=tuple(parse_step(i, s) for i, s in enumerate(steps))))
    return tuple(out)


def user_texts(wire: str, body: dict[str, Any]) -> list[str]:
    """The texts of the request's user messages that carry no tool result, oldest first
    (a message of blocks: its text blocks joined)."""
    items = body.get("input" if wire == "responses" else "messages")
    out = []
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict) or item.get("role") != "user":
            continue
        content = item.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list) and not _has_tool_result(content):
            texts = [b.get("text") for b in content if isinstance(b, dict)]
            out.append("\n".join(t for t in texts if isinstance(t, str)))
    return out


def turn_position(wire: str, body: dict[str, Any]) -> int:
    """How many model replies a request holds since its last plain user message.

    A plain user message is one that carries no tool result (a new turn's question; the
    result of a :data:`SYNTHETIC_CALLS` call does not count); the replies after it are this
    turn's earlier steps. Works on the three wires' request shapes.
    """
    if wire == "responses":
        items = body.get("input")
        count = 0
        assistant_side = False
        for item in items if isinstance(items, list) else ():
            if not isinstance(item, dict):
                continue
            kind, role = item.get("type"), item.get("role")
            if role == "user" and kind in (None, "message"):
                count, assistant_side = 0, False
            elif kind == "function_call_output":
                assistant_side = False
            elif role == "assistant" or kind in ("function_call", "reasoning"):
                count += 0 if assistant_side else 1
                assistant_side = True
        return count
    messages = body.get("messages")
    count = 0
    for message in messages if isinstance(messages, list) else ():
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "assistant":
            count += 1
        elif role == "user" and not _has_tool_result(message.get("content")):
            count = 0
    return count


#: Tool calls the host makes up, not the model (``toolcaller@v4``'s recall call,
#: ``jupyter_agent.core.memory.recall.CALL_ID``): their result opens a new turn's message, so a
#: user message answering only them is still a plain one (a new turn's question).
SYNTHETIC_CALLS = frozenset({"recall_1"})


def _has_tool_result(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(block, dict)
        and block.get("type") == "tool_result"
        and block.get("tool_use_id") not in SYNTHETIC_CALLS
        for block in content
    )
