"""Effects: the loop's only way out, and the results it gets back.

The loop is a generator that yields :class:`Effect` values and receives :class:`Result`
values (``result = yield effect``), like httpx's ``auth_flow``. The driver performs each
effect and records it in the run's log as two lines: an intent line before it happens and
a result line after (see :mod:`jupyter_agent.trace.log`). Replay feeds the same loop from
the log instead.

The catalogue (DESIGN section 3), as ``name: intent data -> result data``:

- ``config.get``: ``{key}`` -> the value
- ``clock.now``: ``{}`` -> ISO time ending in ``Z``
- ``id.new``: ``{kind}`` -> a new id
- ``mailbox.drain``: ``{}`` -> the queued items
- ``http.post``: a RequestSpec intent (llm.spec) -> ``{status, json, attempts}``
- ``cell.run``: ``{cell_id, code, timeout_s}`` -> a structured cell result
- ``bash.run``: ``{command, timeout_s}`` -> ``{stdout, stderr, returncode}``
- ``app.call``: ``{app, method, args}`` with ``parent`` -> the value, or an error
- ``chat.post``: ``{text, done}`` -> a message id
- ``turn.append``: a turn record -> ``{"ok": true}``
- ``chunk.store``: ``{level, first_turn, last_turn, text, model}`` -> ``{"stored": bool}``
  (``history@v1``: a summary of the run's chat; idempotent, the first write of a span
  wins and a later one answers ``stored: false``)
- ``chat.retitle``: ``{title, expected}`` -> ``{"retitled": bool}`` (``title@v1``: the run's
  chat is named ``title`` only while its title is still ``expected``, the one its first
  message gave it; a rename by the person wins)
- ``recall.search``: ``{query, k, threshold, budget_tokens, chat_id, exclude_since,
  exclude_chunks}`` -> ``{hits: [RecallHit JSON]}`` (``autorecall@v1``: memory and the
  user's earlier chats searched for the message, the hits packed within the budget; a
  read of the store, so not an outside effect)
- ``approval.wait``: ``{approval_id, kind, code, summary, timeout_s}`` -> ``{approve, rest,
  by}`` (``toolcaller@v5``, the ``approval`` policy: the person's decision, ``by``
  ``person``, ``break`` or ``timeout``; ``rest``: approve the rest of this turn)

A failed effect has ``error`` set (a JSON object with at least ``type`` and ``message``);
an effect cancelled by a hard break has data ``{"cancelled": "break_hard"}``.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Final, TypeVar

__all__ = [
    "APPROVAL_WAIT",
    "APP_CALL",
    "BASH_RUN",
    "CELL_RUN",
    "CHAT_POST",
    "CHAT_RETITLE",
    "CHUNK_STORE",
    "CLOCK_NOW",
    "CONFIG_GET",
    "EFFECT_NAMES",
    "Effect",
    "EffectGen",
    "HTTP_POST",
    "ID_NEW",
    "MAILBOX_DRAIN",
    "OUTSIDE_EFFECTS",
    "RECALL_SEARCH",
    "Result",
    "TURN_APPEND",
]

CONFIG_GET: Final = "config.get"
CLOCK_NOW: Final = "clock.now"
ID_NEW: Final = "id.new"
MAILBOX_DRAIN: Final = "mailbox.drain"
HTTP_POST: Final = "http.post"
CELL_RUN: Final = "cell.run"
BASH_RUN: Final = "bash.run"
APP_CALL: Final = "app.call"
CHAT_POST: Final = "chat.post"
TURN_APPEND: Final = "turn.append"
CHUNK_STORE: Final = "chunk.store"
CHAT_RETITLE: Final = "chat.retitle"
RECALL_SEARCH: Final = "recall.search"
APPROVAL_WAIT: Final = "approval.wait"

EFFECT_NAMES: Final = frozenset(
    {
        CONFIG_GET,
        CLOCK_NOW,
        ID_NEW,
        MAILBOX_DRAIN,
        HTTP_POST,
        CELL_RUN,
        BASH_RUN,
        APP_CALL,
        CHAT_POST,
        TURN_APPEND,
        CHUNK_STORE,
        CHAT_RETITLE,
        RECALL_SEARCH,
        APPROVAL_WAIT,
    }
)

# Effects that reach outside the process: the log is fsynced before each of them.
OUTSIDE_EFFECTS: Final = frozenset(
    {
        HTTP_POST,
        CELL_RUN,
        BASH_RUN,
        APP_CALL,
        CHAT_POST,
        TURN_APPEND,
        CHUNK_STORE,
        CHAT_RETITLE,
        APPROVAL_WAIT,
    }
)


@dataclass(frozen=True, kw_only=True)
class Effect:
    """What the loop asks the host to do. ``data`` must be JSON-serialisable."""

    name: str
    data: dict[str, Any]
    parent: int | None = None

    def __post_init__(self) -> None:
        if self.name not in EFFECT_NAMES:
            raise ValueError(f"unknown effect: {self.name!r}")

    def intent(self) -> dict[str, Any]:
        """The comparable part of the intent line: ``{name, data, parent?}``."""
        out: dict[str, Any] = {"name": self.name, "data": self.data}
        if self.parent is not None:
            out["parent"] = self.parent
        return out


@dataclass(frozen=True, kw_only=True)
class Result:
    """What the host answered. ``seq`` is the effect's sequence number in the run's log."""

    seq: int
    name: str
    data: Any = None
    error: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """True when the effect succeeded and was not cancelled."""
        return self.error is None and not self.cancelled

    @property
    def cancelled(self) -> bool:
        """True when a hard break cancelled the effect in flight."""
        return isinstance(self.data, dict) and self.data.get("cancelled") == "break_hard"


T = TypeVar("T")

EffectGen = Generator[Effect, Result, T]
"""A pure computation that yields effects, receives results and returns a ``T``."""
