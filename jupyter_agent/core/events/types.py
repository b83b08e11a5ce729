"""The chat events, one tagged dataclass per type: the one definition of the vocabulary.

Every event travels as ``{type, chat_id, run_id, seq, ...fields}`` (the envelope is the
event bus's: :class:`~jupyter_agent.runtime.events.EventBus`); the fields are the
dataclass's, under their own snake_case names, in declaration order (the codec of
:mod:`jupyter_agent.codec`). :data:`EVENTS` lists the types in the order a run emits them;
``runtime/events.py`` derives ``EVENT_FIELDS`` from it, ``docs/api.md`` documents it, and
``labextension/src/events.ts`` mirrors it (generated: ``python -m jupyter_agent.core.events.types
--ts``; a test keeps the committed file equal to the generated text).

Identities: a person's message has a ``message_id`` (answered by ``POST .../messages``,
carried by ``run_start`` for the message that opened the run and by ``steering`` for one the
run took later); a bubble or reply has the ``message_id`` its ``chat.post`` answered; a cell
has its ``cell_id`` (``c<n>``, the run's counter shared by python cells and bash commands,
the same id its notebook cell and its step get). Nothing is ever matched by text.

Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Annotated, Any, Final, Literal

from jupyter_agent.codec import tagged

__all__ = [
    "EVENTS",
    "LIVE_ONLY_TYPES",
    "ApprovalEnd",
    "ApprovalEvent",
    "ApprovalKind",
    "BubbleEvent",
    "CellEnd",
    "CellKind",
    "CellOutput",
    "CellStart",
    "CellStatus",
    "Delta",
    "Event",
    "ProposalEnd",
    "ProposalEvent",
    "ProposalOutcome",
    "RecallEvent",
    "ReplyEvent",
    "Retry",
    "RunEnd",
    "RunStart",
    "SteeringEvent",
    "SummaryEvent",
    "event_type",
]

CellKind = Literal["python", "bash"]
#: How a cell or command ended (``cell_end.status``).
CellStatus = Literal["ok", "error", "cancelled", "timed_out"]
JsonObject = dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class RunStart:
    """A run started; ``text`` and ``message_id`` are the message that started it."""

    type: Literal["run_start"] = field(default="run_start", init=False)
    started: str
    text: str
    message_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class RecallEvent:
    """Autorecall (``autorecall@v1``) put ``hits`` (RecallHit JSON, packed: exactly what the
    model reads, in its order) in front of the model, taking ``tokens``; published only
    when something was recalled, before the run's first model call."""

    type: Literal["recall"] = field(default="recall", init=False)
    hits: tuple[JsonObject, ...]
    tokens: int
    program: str


@dataclass(frozen=True, kw_only=True)
class Delta:
    """Streamed text of the reply being written (live only)."""

    type: Literal["delta"] = field(default="delta", init=False)
    text: str


@dataclass(frozen=True, kw_only=True)
class BubbleEvent:
    """A progress message (``done`` false), posted by the loop or by a cell."""

    type: Literal["bubble"] = field(default="bubble", init=False)
    text: str
    done: bool = False
    message_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class CellStart:
    """A cell (``kind`` ``python``) or a bash command (``kind`` ``bash``) starts."""

    type: Literal["cell_start"] = field(default="cell_start", init=False)
    cell_id: str
    kind: CellKind
    code: str


@dataclass(frozen=True, kw_only=True)
class CellOutput:
    """One output of the running cell, in nbformat's shape, live while it runs."""

    type: Literal["cell_output"] = field(default="cell_output", init=False)
    cell_id: str
    output: JsonObject


@dataclass(frozen=True, kw_only=True)
class CellEnd:
    """The cell ended.

    ``error`` is true unless ``status`` is ``ok``; ``digest`` is the text the model read
    (None when it read none: a cancelled cell). A ``python`` cell has ``outputs`` (nbformat
    outputs) and ``execution_count``, a ``bash`` command ``stdout``, ``stderr`` and
    ``returncode``; the other kind's fields are null.
    """

    type: Literal["cell_end"] = field(default="cell_end", init=False)
    cell_id: str
    kind: CellKind
    status: CellStatus
    error: bool
    digest: str | None
    duration_s: float | None
    outputs: tuple[JsonObject, ...] | None = None
    execution_count: int | None = None
    stdout: str | None = None
    stderr: str | None = None
    returncode: int | None = None


ApprovalKind = Literal["cell", "bash", "proposal", "mcp"]
#: How a proposal ended (``proposal_end.outcome``); ``undone`` follows an applied one.
ProposalOutcome = Literal["applied", "partly", "discarded", "conflict", "undone"]


@dataclass(frozen=True, kw_only=True)
class ApprovalEvent:
    """The run waits for the person (the ``approval`` policy): ``kind`` says what asks,
    ``code`` is the cell's code or the command (``""`` for other kinds), ``summary`` one
    line of what it does. ``POST agent/runs/{run_id}/approvals/{approval_id}`` answers."""

    type: Literal["approval"] = field(default="approval", init=False)
    approval_id: str
    kind: ApprovalKind
    code: str = ""
    summary: str = ""


@dataclass(frozen=True, kw_only=True)
class ApprovalEnd:
    """The wait ended: approved or not (denied, a break, the wall-time ceiling)."""

    type: Literal["approval_end"] = field(default="approval_end", init=False)
    approval_id: str
    approve: bool


@dataclass(frozen=True, kw_only=True)
class ProposalEvent:
    """The agent proposed edits of the notebook at ``path`` (contents path); ``edits`` are
    the stored edit JSON (``{op, cell_id, after?, cell_type?, source?, old_source?, reason,
    diff, base}``). Nothing changes before the person applies."""

    type: Literal["proposal"] = field(default="proposal", init=False)
    proposal_id: str
    path: str
    edits: tuple[JsonObject, ...]


@dataclass(frozen=True, kw_only=True)
class ProposalEnd:
    """A proposal was decided (``applied``, ``partly``, ``discarded``, ``conflict``) or an
    applied one undone (``undone``); ``run_id`` is the run that proposed it."""

    type: Literal["proposal_end"] = field(default="proposal_end", init=False)
    proposal_id: str
    outcome: ProposalOutcome


@dataclass(frozen=True, kw_only=True)
class SteeringEvent:
    """The run took a message sent while it was going (it joins this turn, here)."""

    type: Literal["steering"] = field(default="steering", init=False)
    message_id: str | None
    text: str
    at: str


@dataclass(frozen=True, kw_only=True)
class Retry:
    """The provider asked to wait (``status``: its HTTP status); ``attempt`` follows (live only)."""

    type: Literal["retry"] = field(default="retry", init=False)
    attempt: int
    status: int | None
    wait_s: float | None


@dataclass(frozen=True, kw_only=True)
class ReplyEvent:
    """The final reply (``done`` true)."""

    type: Literal["reply"] = field(default="reply", init=False)
    text: str
    done: bool = True
    message_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class RunEnd:
    """The run ended; ``turn`` is its turn record (REST JSON), for the footer."""

    type: Literal["run_end"] = field(default="run_end", init=False)
    stop_reason: str
    end_cause: str
    turn: JsonObject


@dataclass(frozen=True, kw_only=True)
class SummaryEvent:
    """History made: a ``history@v1`` run stored a chunk summary of this chat (``chunk``:
    the item of ``GET agent/chats/{id}/history``); ``run_id`` is the summary run's."""

    type: Literal["summary"] = field(default="summary", init=False)
    chunk: JsonObject


#: Every event type, in the order a run emits them (a summary run: ``summary`` alone).
EVENTS: Final = (
    RunStart,
    RecallEvent,
    Delta,
    BubbleEvent,
    CellStart,
    CellOutput,
    CellEnd,
    ApprovalEvent,
    ApprovalEnd,
    ProposalEvent,
    ProposalEnd,
    SteeringEvent,
    Retry,
    ReplyEvent,
    RunEnd,
    SummaryEvent,
)

Event = Annotated[
    RunStart
    | RecallEvent
    | Delta
    | BubbleEvent
    | CellStart
    | CellOutput
    | CellEnd
    | ApprovalEvent
    | ApprovalEnd
    | ProposalEvent
    | ProposalEnd
    | SteeringEvent
    | Retry
    | ReplyEvent
    | RunEnd
    | SummaryEvent,
    tagged("type"),
]
"""Any event, read by its ``type`` tag (``codec.load(Event, data)``)."""

#: The types delivered live only, never kept for ``?since=`` catch-up.
LIVE_ONLY_TYPES: Final = frozenset({"delta", "retry"})


def event_type(cls: type) -> str:
    """The ``type`` tag of an event (or step) class."""
    tag: str = dataclasses.fields(cls)[0].default  # type: ignore[assignment]
    return tag


if __name__ == "__main__":  # python -m jupyter_agent.core.events.types --ts
    import sys

    from jupyter_agent.core.events.ts_mirror import main

    sys.exit(main(sys.argv[1:]))
