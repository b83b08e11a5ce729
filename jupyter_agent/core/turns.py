"""The turn record and the run summary: what a run leaves in the agent database.

:class:`TurnRecord` is ``agent_turns`` as REST JSON (DESIGN section 3)::

    {id, chat_id, run_id, userText, steering: [{text, at}], replies: [{text, done}],
     fromAgent, traceRef, interrupted, created, durationMs, model,
     llm: {stopReason, endCause, modelCalls, cells,
           usage: {in, out, cacheRead, cacheWrite, reasoning}, cost,
           fingerprints: {system, identity},
           window: {raw, l1, l2, omitted, tokens}},
     recall: {program, hits: [{kind, id, chat_id, score, text}], tokens},
     programs: [name@vN]}

``llm.window`` (``toolcaller@v3``) says what the boot window held: raw turns,
level-1 and level-2 summaries, turns named by the omission line, and its tokens; it is
absent in older records (and in runs that ended before building a window).

``recall`` (``toolcaller@v4``) is what ``autorecall@v1`` showed the model before
the message: each hit's kind, id, chat and score with its text clipped to
:data:`RECALL_TEXT_CHARS` characters, and the tokens the injected result took; absent when
nothing was recalled. ``programs`` names the programs the turn ran (``["toolcaller@v4",
"autorecall@v1"]``); absent in records of older versions. Neither is ever rendered into
a later prompt (the window reads only the messages and replies).

``stopReason`` is one of ``done``, ``wrapup``, ``break_hard``, ``error``; ``endCause`` one
of :data:`END_CAUSES`. :class:`RunSummary` is the one ``agent_runs`` row per run.

The JSON comes from the types through :mod:`jupyter_agent.codec`: fields in wire order,
camelCase names (ids keep theirs); ``to_json``/``from_json`` are thin names for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from jupyter_agent.codec import OMIT_NONE, camel_case, dump_dict, load
from jupyter_agent.messages import Usage

__all__ = [
    "END_CAUSES",
    "RECALL_TEXT_CHARS",
    "EndCause",
    "RecallRef",
    "Reply",
    "RunStatus",
    "RunSummary",
    "Steering",
    "StopReason",
    "TurnLLM",
    "TurnRecall",
    "TurnRecord",
    "TurnWindow",
]

StopReason = Literal["done", "wrapup", "break_hard", "error"]
EndCause = Literal[
    "done",
    "length",
    "ceiling:model_calls",
    "ceiling:cells",
    "ceiling:wall_s",
    "ceiling:cost_usd",
    "break_soft",
    "break_hard",
    "error",
    "restart",
    "repeating",
]
END_CAUSES: Final = frozenset(
    {
        "done",
        "length",
        "ceiling:model_calls",
        "ceiling:cells",
        "ceiling:wall_s",
        "ceiling:cost_usd",
        "break_soft",
        "break_hard",
        "error",
        "restart",
        "repeating",
    }
)
RunStatus = Literal["running", "done", "interrupted", "error"]
#: A recalled hit's text as the turn record keeps it (the model read it whole).
RECALL_TEXT_CHARS: Final = 200


@dataclass(frozen=True, kw_only=True)
class Steering:
    """A user message that reached a run mid-way through its mailbox."""

    text: str
    at: str

    def to_json(self) -> dict[str, Any]:
        return dump_dict(self)


@dataclass(frozen=True, kw_only=True)
class Reply:
    """A message the user saw: a progress bubble (``done`` false) or the final reply."""

    text: str
    done: bool

    def to_json(self) -> dict[str, Any]:
        return dump_dict(self)


@dataclass(frozen=True, kw_only=True)
class TurnWindow:
    """What a turn's boot window held (``llm.window``): ``raw`` turns in full, ``l1`` and
    ``l2`` summaries, ``omitted`` turns named by the omission line, ``tokens`` in all."""

    raw: int = 0
    l1: int = 0
    l2: int = 0
    omitted: int = 0
    tokens: int = 0

    def to_json(self) -> dict[str, Any]:
        return dump_dict(self)


@dataclass(frozen=True, kw_only=True)
class RecallRef:
    """One recalled hit as the turn record names it (``recall.hits``)."""

    kind: str
    id: str
    chat_id: str | None = None
    score: float
    text: str

    def to_json(self) -> dict[str, Any]:
        return dump_dict(self)


@dataclass(frozen=True, kw_only=True)
class TurnRecall:
    """What a recall step showed the model (``recall``): its program, hits and tokens."""

    program: str
    hits: tuple[RecallRef, ...] = ()
    tokens: int = 0

    def to_json(self) -> dict[str, Any]:
        return dump_dict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TurnRecall:
        return load(cls, data)


@camel_case
@dataclass(frozen=True, kw_only=True)
class TurnLLM:
    """The ``llm`` object of a turn record."""

    stop_reason: StopReason
    end_cause: EndCause
    model_calls: int = 0
    cells: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    fingerprints: dict[str, str] = field(default_factory=dict)
    window: TurnWindow | None = field(default=None, metadata=OMIT_NONE)

    def to_json(self) -> dict[str, Any]:
        return dump_dict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TurnLLM:
        return load(cls, data)


@camel_case
@dataclass(frozen=True, kw_only=True)
class TurnRecord:
    """One conversation turn as stored and served (REST JSON via :meth:`to_json`).

    The fields are declared in the REST JSON's key order. ``trace_ref`` is not passed: it is
    the run id whose effect log holds this turn's trace (written, never read back).
    """

    id: str
    chat_id: str
    run_id: str
    user_text: str
    steering: tuple[Steering, ...] = ()
    replies: tuple[Reply, ...] = ()
    from_agent: str = "agent"
    trace_ref: str = field(default="", init=False, repr=False, compare=False)
    interrupted: bool = False
    created: str
    duration_ms: int = 0
    model: str | None = None
    llm: TurnLLM
    recall: TurnRecall | None = field(default=None, metadata=OMIT_NONE)
    programs: tuple[str, ...] | None = field(default=None, metadata=OMIT_NONE)

    def __post_init__(self) -> None:
        object.__setattr__(self, "trace_ref", self.run_id)

    def to_json(self) -> dict[str, Any]:
        return dump_dict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TurnRecord:
        return load(cls, data)


@camel_case
@dataclass(frozen=True, kw_only=True)
class RunSummary:
    """One ``agent_runs`` row: the lean summary of a run (its trace body stays in the log)."""

    run_id: str
    chat_id: str
    program: str
    status: RunStatus
    started: str
    ended: str | None = None
    model: str | None = None
    model_calls: int = 0
    cells: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    stop_reason: StopReason | None = None
    end_cause: EndCause | None = None
    #: Every program the run used, ``name@vN#hash``: the run program first
    #: (empty in rows written before programs were recorded).
    programs: tuple[str, ...] = ()
    #: The agent (its space) the run answered as.
    agent: str = "agent"
    #: Whose run it is: its chat's owner ("" = the server's user).
    owner: str = ""
    #: The run this one re-ran with that run's recorded inputs (None: a run of its chat);
    #: ``rerun_of`` on the wire, as the run and chat ids.
    rerun_of: str | None = field(default=None, metadata={"alias": "rerun_of"})

    def to_json(self) -> dict[str, Any]:
        return dump_dict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunSummary:
        return load(cls, data)
