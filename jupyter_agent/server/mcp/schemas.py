"""The MCP endpoint's tools as data: names, descriptions, input schemas, permissions, and the
argument parser (:class:`Args`) the tools read their typed arguments with.

A bad argument is ``BadRequest`` (reason ``bad_argument``) naming the tool and the argument,
which :mod:`.tools` answers as a tool error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import mcp_types as types

from jupyter_agent.exceptions import BadRequest
from jupyter_agent.text import has_lone_surrogate

__all__ = ["TOOL_SCHEMAS", "Args", "ToolSchema", "tool_list"]


class Args:
    """The arguments of one tool call, read as typed values."""

    def __init__(self, tool: str, raw: Mapping[str, Any]) -> None:
        if not isinstance(raw, Mapping):
            raise BadRequest(f"{tool}: the arguments are not an object", reason="bad_argument")
        known = TOOL_SCHEMAS[tool].input_schema["properties"]
        unknown = sorted(str(k) for k in raw if k not in known)
        if unknown:
            raise BadRequest(
                f"unknown argument(s) {', '.join(unknown)}; known: {', '.join(known)}",
                reason="bad_argument",
            )
        self.tool = tool
        self.raw = raw

    def _bad(self, key: str, what: str) -> BadRequest:
        return BadRequest(f"'{key}' must be {what}", reason="bad_argument")

    def optional_string(self, key: str) -> str | None:
        """A string, or None when absent, null or empty."""
        value = self.raw.get(key)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            raise self._bad(key, "a string")
        # As REST refuses them (server/parse.py): neither can be stored (PostgreSQL).
        if "\x00" in value or has_lone_surrogate(value):
            raise BadRequest(
                f"'{key}' holds a NUL character or a lone surrogate: send valid text",
                reason="bad_unicode",
            )
        return value

    def string(self, key: str, *, strip: bool = True) -> str:
        """A non-empty string (``strip``: not only blanks)."""
        value = self.optional_string(key)
        if value is None or (strip and not value.strip()):
            raise BadRequest(f"'{key}' is required", reason="bad_argument")
        return value

    def flag(self, key: str, *, default: bool) -> bool:
        """A boolean."""
        value = self.raw.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self._bad(key, "true or false")
        return value

    def number(self, key: str, *, default: float, low: float, high: float) -> float:
        """A finite number in ``[low, high]``."""
        value = self.raw.get(key, default)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self._bad(key, "a number")
        if not math.isfinite(value) or not low <= value <= high:
            raise self._bad(key, f"between {low:g} and {high:g}")
        return float(value)

    def strings(self, key: str) -> list[str]:
        """A list of non-empty strings; ``[]`` when absent or null."""
        value = self.raw.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self._bad(key, "a list of non-empty strings")
        return list(value)

    def integer(self, key: str, *, default: int, low: int, high: int) -> int:
        """An integer in ``[low, high]``."""
        value = self.raw.get(key, default)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise self._bad(key, f"an integer between {low} and {high}")
        return value


@dataclass(frozen=True)
class ToolSchema:
    """One tool: what ``tools/list`` shows, and the permission a call needs (``read`` or
    ``execute``; ``permission(args)`` for a call, ``listed`` for the listing)."""

    name: str
    description: str
    input_schema: dict[str, Any]
    listed: str
    read_only: bool
    permission: Callable[[Args], str]

    def tool(self) -> types.Tool:
        """The ``tools/list`` entry."""
        return types.Tool(
            name=self.name,
            description=self.description,
            input_schema=self.input_schema,
            annotations=types.ToolAnnotations(
                read_only_hint=self.read_only, destructive_hint=False if self.read_only else None
            ),
        )


def _object(required: tuple[str, ...], **props: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": list(required),
        "additionalProperties": False,
    }


def _s(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _b(description: str, default: bool) -> dict[str, Any]:
    return {"type": "boolean", "description": description, "default": default}


def _n(description: str, default: float, low: float, high: float) -> dict[str, Any]:
    return {
        "type": "number",
        "description": description,
        "default": default,
        "minimum": low,
        "maximum": high,
    }


_RUN_ID = _s("A run id (run_...), as chat or list_runs answer it.")


def _always(permission: str) -> Callable[[Args], str]:
    return lambda args: permission


_SCHEMAS: Final = (
    ToolSchema(
        "chat",
        "Send a message to the Jupyter agent (a new chat unless chat_id is given) and, with "
        "wait (the default), wait for the turn that holds it: answers {chat_id, run_id, "
        "reply, turn} (turn: the same JSON as GET agent/chats/{id}). The agent writes and "
        "runs Python in its own kernel; progress notifications report its cells and reply "
        "while it works. Cancelling the call asks the run to stop at its next step.",
        _object(
            ("text",),
            text=_s("The message, as the person would type it."),
            chat_id=_s("The chat to continue (chat_...); absent: a new chat."),
            wait=_b("Wait for the turn to end (else answer {chat_id, run_id} at once).", True),
            timeout_s=_n("The longest wait in seconds; the run goes on after it.", 600, 1, 3600),
            agent=_s("The agent a new chat talks to (GET agent/agents); default 'agent'."),
        ),
        "execute",
        False,
        _always("execute"),
    ),
    ToolSchema(
        "break_run",
        "Stop a run: soft (default) at its next step, hard at once. Answers {run_id, state}.",
        _object(("run_id",), run_id=_RUN_ID, hard=_b("Stop at once (cancel the cell).", False)),
        "execute",
        False,
        _always("execute"),
    ),
    ToolSchema(
        "list_runs",
        "The agent's runs, newest first: {runs: [{run_id, chat_id, status, program, started, "
        "ended, ...}], next}. Filter by chat_id or by program (a name or name@vN).",
        _object(
            (),
            chat_id=_s("Only this chat's runs."),
            program=_s("Only runs of this program (toolcaller, toolcaller@v6, ...)."),
            limit={
                "type": "integer",
                "description": "At most this many.",
                "default": 20,
                "minimum": 1,
                "maximum": 1000,
            },
        ),
        "read",
        True,
        _always("read"),
    ),
    ToolSchema(
        "show_run",
        "One run: its turn record, its steps (model calls, cells with their digests, "
        "replies) and summary, as GET agent/runs/{id}. Large fields are cut unless full.",
        _object(("run_id",), run_id=_RUN_ID, full=_b("Leave large fields uncut.", False)),
        "read",
        True,
        _always("read"),
    ),
    ToolSchema(
        "export_notebook",
        "A run's turn (run_id) or a whole chat (chat_id) as a Jupyter notebook: the nbformat "
        "JSON, or with write=true the notebook written into the server's trace folder "
        "({path, created}; needs 'execute').",
        _object(
            (),
            run_id=_RUN_ID,
            chat_id=_s("The chat to export (instead of run_id)."),
            write=_b("Write it into the trace folder instead of answering it.", False),
        ),
        "read",
        False,
        lambda args: "execute" if args.flag("write", default=False) else "read",
    ),
    ToolSchema(
        "run_cell",
        "Run Python code in a fresh agent kernel (shut down after) and answer the digest the "
        "agent's model reads of that cell (printed values, the last value, errors, images), "
        "with {status, digest, outputs} as structured content.",
        _object(
            ("code",),
            code=_s("The cell's Python code."),
            timeout_s=_n("Seconds before the cell is interrupted.", 60, 0.001, 3600),
        ),
        "execute",
        False,
        _always("execute"),
    ),
)


def _i(description: str, default: int, low: int, high: int) -> dict[str, Any]:
    return {
        "type": "integer",
        "description": description,
        "default": default,
        "minimum": low,
        "maximum": high,
    }


_MODEL = _s("A tier name (classify) or a model of the codegen tier's provider.")
_PROGRAM = _s("toolcaller@vN (default: the original's, or the agent's).")
_LIST = {"type": "array", "items": {"type": "string"}}

#: Time travel and evaluation (issue 31): :mod:`.time_tools` calls them.
_TIME_SCHEMAS: Final = (
    ToolSchema(
        "fork_chat",
        "A new chat whose history is turns 1..turn of a chat (copies; the original is "
        "unchanged): answers the new chat, with forked_from {chat_id, turn}.",
        _object(
            ("chat_id", "turn"),
            chat_id=_s("The chat to fork (chat_...)."),
            turn=_i("The last turn the fork keeps (0: none).", 0, 0, 1_000_000),
            title=_s("The new chat's title (default: the chat's, marked as a fork)."),
        ),
        "execute",
        False,
        _always("execute"),
    ),
    ToolSchema(
        "diff_runs",
        "Where two runs first part (the prompt's system and conversation as unified diffs, "
        "the model, a reply, a cell's code or output) and both runs' totals side by side, "
        "as GET agent/runs/{a}/diff/{b}: {identical, divergence, summary, ...}.",
        _object(("run_a", "run_b"), run_a=_RUN_ID, run_b=_RUN_ID),
        "read",
        True,
        _always("read"),
    ),
    ToolSchema(
        "rerun",
        "Re-run a run with its recorded inputs (message, view, history, recall, approvals) "
        "live on another model or program, as a run of its own (rerun_of), never a turn of "
        "its chat: answers {run_id, rerun_of, program, model} at once.",
        _object(("run_id",), run_id=_RUN_ID, model=_MODEL, program=_PROGRAM),
        "execute",
        False,
        _always("execute"),
    ),
    ToolSchema(
        "run_eval",
        "Run an eval: the cases of a suite (a notebook or folder under the server's root: "
        "each case a markdown message followed by a code cell of checks) and recorded runs, "
        "once per model and repeat, checked and reported as a notebook. Answers the eval's "
        "state (as GET agent/evals/{id}); with wait, once it is done.",
        _object(
            (),
            suite=_s("The suite's contents path."),
            runs={**_LIST, "description": "Recorded run ids to re-run against their reply."},
            models={**_LIST, "description": "Models to compare (tier or model names)."},
            program=_PROGRAM,
            repeats=_i("Runs of each case per model.", 1, 1, 20),
            concurrency=_i("Cases at once.", 4, 1, 16),
            wait=_b("Answer once the eval is done (progress is reported meanwhile).", False),
            timeout_s=_n("The longest wait in seconds; the eval goes on after it.", 600, 1, 3600),
        ),
        "execute",
        False,
        _always("execute"),
    ),
    ToolSchema(
        "eval_status",
        "An eval's state: status, pass rate per model, each case's result, the report's path.",
        _object(("eval_id",), eval_id=_s("The eval's id (eval_...), as run_eval answers it.")),
        "read",
        True,
        _always("read"),
    ),
)

#: The tools by name, in the order ``tools/list`` shows them.
TOOL_SCHEMAS: Final[Mapping[str, ToolSchema]] = {s.name: s for s in (*_SCHEMAS, *_TIME_SCHEMAS)}


def tool_list(may: Callable[[str], bool]) -> list[types.Tool]:
    """The tools a caller holding the permissions ``may`` answers true for may call."""
    return [s.tool() for s in TOOL_SCHEMAS.values() if may(s.listed)]
