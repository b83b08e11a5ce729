"""The steps of a run: what a person saw, read back from its effect log (a tagged union).

One shape for a run after the fact: ``trace/cells_view.py`` builds these from the log;
``GET agent/runs/{id}`` serves them as ``steps`` (codec JSON, large fields cut unless
``?full=1``); the notebook export (``trace/notebook.py``) and ``jupyter agent trace show``
(``cli/render.py``) render them; the panel rebuilds a chat from them after a reload
(``labextension/src/events.ts`` mirrors them, generated with the events of
:mod:`jupyter_agent.core.events.types`).

A step's fields mean what the event of the same name means: a ``cell`` step carries its
``cell_start`` (``cell_id``, ``code``) and ``cell_end`` (``outputs``, ``execution_count``,
``duration_s``, ``digest``; ``end_status`` is ``cell_end.status``, None when the cell never
ended), a ``bubble``/``reply`` its ``message_id``, a ``user``/``steering`` step the message's
``message_id`` (None in logs written before message ids). ``status`` says how the effect
ended: ``ok``; ``failed`` (an error result, or a cell or command that ended in error:
``end_status`` ``error``); ``cancelled`` (a hard break); ``timed_out``;
``unfinished`` (no result line: the run crashed or still runs); ``unreadable`` (a result
that does not parse); ``error`` is the effect's error object, if any.

Waits and notices are steps too: an ``approval.wait`` is an :class:`ApprovalStep`
(its ``approval`` and ``approval_end`` events), top level (a cell or a command waiting) or
nested (``parent``: the ``app.call`` of an MCP call that waited); a mailbox ``notice`` the
run took is a :class:`NoticeStep`.

Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, Final, Literal

from jupyter_agent.codec import tagged
from jupyter_agent.core.events.types import ApprovalKind, CellStatus

__all__ = [
    "STEPS",
    "ApprovalBy",
    "ApprovalStep",
    "BashStep",
    "BreakStep",
    "BubbleStep",
    "CellStep",
    "ModelCallStep",
    "NoticeStep",
    "RecallStep",
    "ReplyStep",
    "SteeringStep",
    "Step",
    "StepStatus",
    "UserStep",
]

StepStatus = Literal["ok", "failed", "cancelled", "timed_out", "unfinished", "unreadable"]
#: Who ended an approval wait (``approval.wait``'s ``by``).
ApprovalBy = Literal["person", "timeout", "break"]
JsonObject = dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class UserStep:
    """The message that opened the run."""

    type: Literal["user"] = field(default="user", init=False)
    seq: int
    text: str
    at: str
    view: JsonObject | None = None
    attachments: tuple[str, ...] = ()
    message_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class SteeringStep:
    """A message the run took while it was going (from a drain, or held at a final reply)."""

    type: Literal["steering"] = field(default="steering", init=False)
    seq: int
    text: str
    at: str
    view: JsonObject | None = None
    attachments: tuple[str, ...] = ()
    message_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class BreakStep:
    """A break read from the mailbox (a hard one is normally acted on by the host at once)."""

    type: Literal["break"] = field(default="break", init=False)
    seq: int
    hard: bool
    at: str


@dataclass(frozen=True, kw_only=True)
class BubbleStep:
    """A progress message (``chat.post`` done false); ``seq`` is its effect's."""

    type: Literal["bubble"] = field(default="bubble", init=False)
    seq: int
    text: str
    t: str
    status: StepStatus
    message_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class ReplyStep:
    """The final reply (``chat.post`` done true)."""

    type: Literal["reply"] = field(default="reply", init=False)
    seq: int
    text: str
    t: str
    status: StepStatus
    message_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class CellStep:
    """A ``cell.run``: its code, outputs (nbformat), digest, and how it ended.

    ``seqs`` is the ``cell.run`` seq then every effect nested under it; ``failed`` is true
    when the cell raised; ``deterministic`` when re-running the code alone should give the
    recorded outputs (it finished, made no app call, does not use ``sh``); ``bubbles`` are
    the progress messages the cell posted while it ran (shown after it); ``copies`` one line
    per value it copied from the person's kernel (``notebook.fetch``: name, type, size,
    blob).
    """

    type: Literal["cell"] = field(default="cell", init=False)
    seq: int
    seqs: tuple[int, ...]
    cell_id: str
    code: str
    status: StepStatus
    t: str
    execution_count: int | None = None
    duration_s: float | None = None
    failed: bool | None = None
    app_calls: int = 0
    digest: str | None = None
    outputs: tuple[JsonObject, ...] = ()
    error: JsonObject | None = None
    timeout_s: float | None = None
    deterministic: bool = False
    outputs_truncated: bool = False
    end_status: CellStatus | None = None
    bubbles: tuple[str, ...] = ()
    copies: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class BashStep:
    """A ``bash.run``: ``cell_id`` is the run's ``c<n>`` (its event's and its notebook cell's)."""

    type: Literal["bash"] = field(default="bash", init=False)
    seq: int
    cell_id: str
    command: str
    status: StepStatus
    t: str
    returncode: int | None = None
    stdout: str | None = None
    stderr: str | None = None
    digest: str | None = None
    error: JsonObject | None = None
    timeout_s: float | None = None
    timed_out: bool = False
    duration_s: float | None = None
    outputs_truncated: bool = False
    end_status: CellStatus | None = None


@dataclass(frozen=True, kw_only=True)
class ModelCallStep:
    """A top-level ``http.post`` (one model call of the loop)."""

    type: Literal["model_call"] = field(default="model_call", init=False)
    seq: int
    status: StepStatus
    t: str
    http_status: int | None = None
    attempts: int | None = None


@dataclass(frozen=True, kw_only=True)
class RecallStep:
    """A ``recall.search`` (``autorecall@v1``): synthetic, not run. ``code`` and ``text`` are
    the ``run_cell`` call and result the model was shown before the message (both empty when
    nothing was recalled), ``hits`` the RecallHit JSON they show, ``tokens`` their cost;
    ``query`` is what was searched for."""

    type: Literal["recall"] = field(default="recall", init=False)
    seq: int
    status: StepStatus
    t: str
    program: str
    query: str
    code: str = ""
    text: str = ""
    hits: tuple[JsonObject, ...] = ()
    tokens: int = 0
    error: JsonObject | None = None


@dataclass(frozen=True, kw_only=True)
class ApprovalStep:
    """An ``approval.wait``: a cell, a command, a proposal or an MCP call waited for the person.

    ``kind``, ``code`` and ``summary`` are the wait's (its ``approval`` event's); ``approve``,
    ``rest`` and ``by`` its answer: ``by`` ``person`` (the person decided: ``approve`` says
    how, ``rest`` whether they approved the rest of the turn), ``timeout`` (the turn's time
    ran out first) or ``break`` (a soft break: the person asked the run to stop); ``by`` is
    None when no answer was recorded (``status`` ``unfinished``: ``approve`` None;
    ``cancelled`` by a hard break, ``failed`` when the host could not ask, ``unreadable``:
    ``approve`` false, as the loop read it). ``parent`` is the ``app.call`` seq of a nested
    wait (an MCP call made in a cell), None for a cell's or command's own wait.
    """

    type: Literal["approval"] = field(default="approval", init=False)
    seq: int
    approval_id: str
    kind: ApprovalKind
    code: str = ""
    summary: str = ""
    status: StepStatus
    t: str
    approve: bool | None = None
    rest: bool = False
    by: ApprovalBy | None = None
    parent: int | None = None


@dataclass(frozen=True, kw_only=True)
class NoticeStep:
    """A notice the run took from the mailbox (a proposal's outcome, ...): ``text`` as the
    host queued it (the model read it as ``[notice] <text>``), ``at`` when it was queued."""

    type: Literal["notice"] = field(default="notice", init=False)
    seq: int
    text: str
    at: str


#: Every step type.
STEPS: Final = (
    UserStep,
    SteeringStep,
    BreakStep,
    BubbleStep,
    ReplyStep,
    CellStep,
    BashStep,
    ModelCallStep,
    RecallStep,
    ApprovalStep,
    NoticeStep,
)

Step = Annotated[
    UserStep
    | SteeringStep
    | BreakStep
    | BubbleStep
    | ReplyStep
    | CellStep
    | BashStep
    | ModelCallStep
    | RecallStep
    | ApprovalStep
    | NoticeStep,
    tagged("type"),
]
"""Any step, read by its ``type`` tag (``codec.load(Step, data)``)."""
