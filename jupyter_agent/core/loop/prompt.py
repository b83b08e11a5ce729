"""Prompt assembly (pure): the system prompt from the spaces, and the current user message.

The spaces reach the loop as the value of ``config.get {"key": "spaces"}`` (see
:func:`jupyter_agent.runtime.settings.spaces.load_spaces`)::

    {"agent_name", "agent_space", "files": {"_soul": md, "_core": md, "_any": md, ...,
     "skills/<name>": md}, "paths": {key: path}?, "repos": [{name, path | url,
     description?}], "memory_categories": [str], "env_prefix", "home"}

:func:`build_system` composes, in this order (the seed's "Prompt assembly"):

1. the identity: ``_soul``, first and verbatim;
2. the system skills: ``_core``, ``_any``, ``_memory``, then the other ``_*`` files by name
   (but the skills of other programs, :data:`PROGRAM_SKILLS`: ``_history`` is the prompt of
   ``history@v1``, not something the chat agent reads);
3. the user skills: one line each (name, summary, where to read it), never their text;
4. the tools: each tool's description, then the in-cell apps (doc, one line per method);
5. ``tool_prompt``: text-mode tool instructions from an adapter, when any;
6. the configured repos; 7. the memory categories in use ("none yet" when empty);
8. the runtime context: agent space, chat id, agent name, installed apps, working folder.

The memory categories come from the spaces' ``memory_categories`` (``toolcaller@v1..v3``)
or, given ``memory`` (``toolcaller@v4``: the ``config.get memory`` answer's categories),
as ``- {category} ({count})`` lines. ``fingerprint_system`` is then the hash of the text
with the counts left out: saving one more fact in a category does not change it, a new
(or emptied) category does.

The output is deterministic: unordered inputs are sorted, so the same spaces and context
give the same text and fingerprints; ``fingerprint_identity`` changes exactly when
``_soul`` does. Fields the prompt does not show (``env_prefix``, unknown keys) do not
change it. Paths under ``home`` are shown as ``~/...``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jupyter_agent.core.app_spec import AppSpec
from jupyter_agent.messages import File, Message, Part, Text
from jupyter_agent.tools import ToolSpec

__all__ = [
    "PROGRAM_SKILLS",
    "RuntimeContext",
    "SystemPrompt",
    "build_system",
    "kernel_packages_of",
    "skill_summary",
    "user_message",
]

_SYSTEM_SKILL_ORDER = ("_core", "_any", "_memory")
#: Space files that are the prompts of other programs, never in the chat's system prompt.
PROGRAM_SKILLS = frozenset({"_history"})
_SUMMARY_MAX = 160
_SELECTION_MAX = 2000


@dataclass(frozen=True)
class RuntimeContext:
    """Where this run happens, shown to the model in the last section of the prompt."""

    agent_space: str
    chat_id: str
    agent_name: str
    installed_apps: tuple[str, ...]
    cwd: str | None = None
    #: ``(name, version)`` of the data packages the kernel can import (none: not known,
    #: the line is left out: logs recorded before it render as they did).
    packages: tuple[tuple[str, str], ...] = ()


def kernel_packages_of(spaces: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The spaces snapshot's ``kernel_packages`` (``[[name, version], ...]``) as pairs;
    ``()`` when absent (a log recorded before the host sent them) or malformed."""
    raw = spaces.get("kernel_packages")
    if not isinstance(raw, list):
        return ()
    pairs = [p for p in raw if isinstance(p, (list, tuple)) and len(p) == 2]
    return tuple((str(name), str(version)) for name, version in pairs)


@dataclass(frozen=True)
class SystemPrompt:
    """The system text and its fingerprints (sha256 hex of the text and of ``_soul``)."""

    text: str
    fingerprint_system: str
    fingerprint_identity: str


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _tilde(path: str, home: str) -> str:
    """``path`` with the home folder shown as ``~``."""
    home = home.rstrip("/")
    if home and (path == home or path.startswith(home + "/")):
        return "~" + path[len(home) :]
    return path


def skill_summary(text: str) -> str:
    """A skill's one-line summary: its front-matter ``description``, else its first line.

    Leading ``#`` marks are dropped; the result is cut to 160 characters.
    """
    lines = text.splitlines()
    body_start = 0
    if lines and lines[0].strip() == "---":
        for i, line in enumerate(lines[1:], start=1):
            if line.strip() == "---":
                body_start = i + 1
                break
            key, sep, value = line.partition(":")
            if sep and key.strip() == "description" and value.strip():
                return _cut(value.strip().strip("\"'"))
    for line in lines[body_start:]:
        stripped = line.strip().lstrip("#").strip()
        if stripped:
            return _cut(stripped)
    return "(empty)"


def _cut(text: str) -> str:
    return text if len(text) <= _SUMMARY_MAX else text[: _SUMMARY_MAX - 1].rstrip() + "…"


def _system_skills(files: Mapping[str, str]) -> list[str]:
    names = [n for n in _SYSTEM_SKILL_ORDER if n in files]
    names += sorted(
        n
        for n in files
        if n.startswith("_") and n not in (*_SYSTEM_SKILL_ORDER, "_soul", *PROGRAM_SKILLS)
    )
    return [files[n].strip("\n") for n in names if files[n].strip()]


def _user_skills(files: Mapping[str, str], paths: Mapping[str, str], home: str) -> str:
    names = sorted(n for n in files if n.startswith("skills/"))
    if not names:
        return ""
    lines = [
        "# Your skills",
        "",
        "Skills are notes on how to do a kind of task. Before such a task, read the whole "
        "skill in a cell (`print(open(os.path.expanduser(PATH)).read())`).",
        "",
    ]
    for key in names:
        where = paths.get(key)
        suffix = f" (`{_tilde(where, home)}`)" if where else ""
        lines.append(f"- **{key[len('skills/') :]}**: {skill_summary(files[key])}{suffix}")
    return "\n".join(lines)


def _tools_section(tools: Sequence[ToolSpec], apps: Sequence[AppSpec]) -> str:
    lines = ["# Your tools", ""]
    for tool in tools:
        lines += [f"## {tool.name}", "", tool.description.strip(), ""]
    if apps:
        lines += [
            "## Apps inside a cell",
            "",
            "These objects are already bound in the kernel's namespace. Each call is performed "
            "by the host and recorded; it shows up in the cell's digest under side effects.",
            "",
        ]
        for app in apps:
            lines.append(f"### {app.name}: {app.doc.strip()}")
            lines += [f"- `{m.signature}`: {m.doc.strip()}" for m in app.methods]
            lines.append("")
    return "\n".join(lines).rstrip("\n")


def _repos_section(repos: Any, home: str) -> str:
    if not isinstance(repos, Sequence) or isinstance(repos, str) or not repos:
        return ""
    entries = sorted(
        (r for r in repos if isinstance(r, Mapping) and r.get("name")),
        key=lambda r: str(r["name"]),
    )
    if not entries:
        return ""
    lines = ["# Repositories", ""]
    for repo in entries:
        where = str(repo.get("path") or repo.get("url") or "")
        line = (
            f"- **{repo['name']}**: `{_tilde(where, home)}`" if where else f"- **{repo['name']}**"
        )
        if repo.get("description"):
            line += f": {str(repo['description']).strip()}"
        lines.append(line)
    return "\n".join(lines)


def _memory_section(categories: Any) -> str:
    names: list[str] = []
    if isinstance(categories, Sequence) and not isinstance(categories, str):
        names = sorted({str(c) for c in categories if str(c).strip()})
    body = "\n".join(f"- {c}" for c in names) if names else "none yet"
    return "# Memory categories in use\n\n" + body


def _counted_memory_section(memory: Sequence[tuple[str, int]], *, counts: bool) -> str:
    """The v4 section: one ``- {category} ({count})`` line each (``counts`` False: the
    fingerprint's text, ``- {category}``), sorted by category."""
    counted: dict[str, int] = {}
    for category, count in memory:
        if str(category).strip():
            counted[str(category)] = counted.get(str(category), 0) + int(count)
    if not counted:
        return "# Memory categories in use\n\nnone yet"
    lines = [f"- {c} ({counted[c]})" if counts else f"- {c}" for c in sorted(counted)]
    return "# Memory categories in use\n\n" + "\n".join(lines)


def _context_section(context: RuntimeContext, home: str) -> str:
    apps = ", ".join(sorted(context.installed_apps)) or "none"
    cwd = _tilde(context.cwd, home) if context.cwd else "the Jupyter server's root folder"
    space = _tilde(context.agent_space, home) if context.agent_space else "(none)"
    return "\n".join(
        [
            "# Runtime context",
            "",
            f"- Agent space: `{space}`",
            f"- Chat id: {context.chat_id}",
            f"- Agent name: {context.agent_name}",
            f"- Installed apps: {apps}",
            f"- Working folder of the kernel: `{cwd}`",
            *(
                [
                    "- Data packages the kernel can import: "
                    + ", ".join(f"{name} {version}" for name, version in context.packages)
                ]
                if context.packages
                else []
            ),
        ]
    )


def build_system(
    spaces: Mapping[str, Any],
    *,
    tools: Sequence[ToolSpec],
    apps: Sequence[AppSpec],
    context: RuntimeContext,
    tool_prompt: str = "",
    memory: Sequence[tuple[str, int]] | None = None,
) -> SystemPrompt:
    """Compose the system prompt from the spaces snapshot (order in the module docstring).

    ``memory``: the categories in use with their counts (``toolcaller@v4``); None: the
    spaces' ``memory_categories``, without counts (v1..v3, unchanged).
    """
    raw_files = spaces.get("files") or {}
    files = {str(k): str(v) for k, v in raw_files.items()} if isinstance(raw_files, Mapping) else {}
    raw_paths = spaces.get("paths") or {}
    paths = {str(k): str(v) for k, v in raw_paths.items()} if isinstance(raw_paths, Mapping) else {}
    home = str(spaces.get("home") or "")
    soul = files.get("_soul", "")

    def compose(memory_section: str) -> str:
        sections: list[str] = [
            *_system_skills(files),
            _user_skills(files, paths, home),
            _tools_section(tools, apps),
            tool_prompt.strip("\n"),
            _repos_section(spaces.get("repos"), home),
            memory_section,
            _context_section(context, home),
        ]
        rest = "\n\n".join(s for s in sections if s.strip()) + "\n"
        # The identity goes first and verbatim; only a separating blank line is added.
        separator = "\n" if soul.endswith("\n") else "\n\n"
        return soul + separator + rest if soul else rest

    if memory is None:
        text = compose(_memory_section(spaces.get("memory_categories")))
        fingerprinted = text
    else:
        text = compose(_counted_memory_section(memory, counts=True))
        fingerprinted = compose(_counted_memory_section(memory, counts=False))
    return SystemPrompt(
        text=text, fingerprint_system=_sha256(fingerprinted), fingerprint_identity=_sha256(soul)
    )


def _view_header(
    at: str, view: Mapping[str, Any] | None, attachments: Sequence[File], *, cell_ids: bool
) -> str:
    bits = [f"sent {at}"]
    if view:
        path, cell = view.get("path"), view.get("cell")
        cell_id = view.get("cell_id") if cell_ids else None
        if path:
            where = f"the person has `{path}` open"
            if cell is not None and cell != "":
                where += f", at cell {cell}"
            if isinstance(cell_id, str) and cell_id:
                where += f" (id `{cell_id}`)"
            if cell_ids and str(path).endswith(".ipynb"):
                where += "; notebook.read() shows it"
            bits.append(where)
        elif cell is not None and cell != "":
            bits.append(f"the person is at cell {cell}")
    if attachments:
        names = ", ".join(f.name or f.media_type for f in attachments)
        bits.append(f"attached: {names}")
    return "[" + "; ".join(bits) + "]"


def _mentioned(mentions: Sequence[Any], path: Any) -> str:
    """The ``@`` mentions a message carries (a view made before they existed has none, so
    a recorded run's prompt never changes)."""
    out = ["Mentioned:"]
    where = f" of `{path}`" if isinstance(path, str) and path else ""
    for item in mentions:
        if not isinstance(item, Mapping):
            continue
        if item.get("kind") == "cell":
            cell_id, own = item.get("cell_id"), item.get("path")
            ident = f" (id `{cell_id}`)" if isinstance(cell_id, str) and cell_id else ""
            of = f" of `{own}`" if isinstance(own, str) and own else where
            out.append(f"- cell {item.get('cell')}{ident}{of}")
        elif item.get("kind") == "variable":
            summary = item.get("summary")
            said = f": {summary}" if isinstance(summary, str) and summary else ""
            out.append(f"- `{item.get('name')}`, a variable of the person's kernel{said}")
    return "\n".join(out)


def user_message(
    text: str,
    *,
    at: str,
    view: Mapping[str, Any] | None = None,
    attachments: Sequence[File] = (),
    cell_ids: bool = False,
) -> Message:
    """The current user message: a short header (time, view, attachments), then the text.

    The header reads like ``[sent 2025-01-02T03:04:05.678Z; the person has `a.ipynb` open,
    at cell 3]``; a selection in the view follows as a quoted block (cut to 2,000
    characters), then the ``@`` mentions (``Mentioned:``, one line per cell or variable of
    the person's kernel, with its summary); attachments follow the text as File parts, in
    order. ``cell_ids``
    (``toolcaller@v5``): the header names the cell by its id too (the view's ``cell_id``)
    and, for a notebook, says ``notebook.read()`` shows it: ``[sent ...; the person has
    `a.ipynb` open, at cell 3 (id `9f1c`); notebook.read() shows it]``.
    """
    lines = [_view_header(at, view, attachments, cell_ids=cell_ids)]
    selection = view.get("selection") if view else None
    if isinstance(selection, str) and selection.strip():
        shown = selection if len(selection) <= _SELECTION_MAX else selection[:_SELECTION_MAX] + "…"
        lines.append("Selected:\n" + "\n".join("> " + ln for ln in shown.splitlines()))
    mentions = view.get("mentions") if view else None
    if isinstance(mentions, list) and mentions:
        lines.append(_mentioned(mentions, view.get("path") if view else None))
    lines.append("")
    lines.append(text)
    parts: list[Part] = [Text(text="\n".join(lines))]
    parts.extend(attachments)
    return Message(role="user", parts=tuple(parts))
