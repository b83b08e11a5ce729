"""A run's effect log read as the steps a person saw: the one builder of a run's steps.

:func:`build_view` turns a :class:`~jupyter_agent.trace.log.TraceFile` into a
:class:`RunView`: the ordered steps (:mod:`jupyter_agent.core.events.steps`, a tagged union) that
``GET agent/runs/{id}`` serves, the notebook export (:mod:`jupyter_agent.trace.notebook`)
and ``jupyter agent trace show`` render, and the panel rebuilds a chat from.

Contract:

- Steps come in seq order of their top-level effects (those without ``parent``). Nested
  effects (an ``app.call`` made by a cell, and what the host did for it) belong to the
  top-level ``cell.run`` they descend from: :attr:`CellStep.seqs`.
- The first message the run took (in its first top-level ``mailbox.drain``) is the
  :class:`UserStep`; every later one is a :class:`SteeringStep`, where the run took it: in
  a drain, in a final reply the host held back (``chat.post`` answered ``{"deferred":
  items}``: no reply step, the messages instead), or in a hard break's cancelled result.
  Break items become :class:`BreakStep`. Unknown mailbox kinds and effect names are skipped.
- ``cell.run`` and ``bash.run`` share one counter, as in the loop (``c<n>`` with n the
  count of tool runs so far). A python cell keeps its recorded ``cell_id`` (so
  ``values.get("c3", ...)`` in a later cell still names it); a bash step gets ``c<n>`` from
  that counter (the id its live events had), or the next free ``c<n>`` when a python cell
  already has that id.
- ``status`` (:data:`~jupyter_agent.core.events.steps.StepStatus`): ``ok``; ``failed`` (the result
  line has ``error``, or the cell raised, its kernel died or the command exited non-zero:
  ``end_status`` ``error``, never beside ``ok``); ``cancelled`` (a hard break: data
  ``{"cancelled": "break_hard"}``); ``timed_out`` (see
  :mod:`jupyter_agent.core.digest.cell_status`); ``unfinished`` (an intent without a result: the
  run crashed or is still going); ``unreadable`` (a result that does not parse as a cell or
  bash result).
- A cell or bash step's ``digest`` is the one its result recorded (what the model read:
  :mod:`jupyter_agent.core.digest.record`), else, for logs written before, the digest
  rebuilt with the run's recorded options; None when the model read none (cancelled,
  unfinished). ``end_status`` is what its ``cell_end`` event said.
- A cancelled cell or command keeps what it printed before the break (its partial result).
- A ``recall.search`` (``autorecall@v1``, ``toolcaller@v4``) is a :class:`RecallStep`:
  synthetic, not run; its ``code`` and ``text`` are the ``run_cell`` call and result the
  model was shown (rebuilt from the intent and the result by the loop's own function,
  :func:`~jupyter_agent.core.memory.program.recalled`), empty when nothing was recalled.
- An ``approval.wait`` is an :class:`ApprovalStep` (issue 18). A top-level one (a cell or
  a command waiting for the person) comes in seq order, before the cell or command it let
  run (none follows a denied one). A nested one (an MCP call made by a cell, ``parent``:
  its ``app.call``) is not attached to the cell: it follows the cell's step (its
  top-level effect's), in seq order with the other nested waits of that cell, as the
  live ``approval`` event followed the cell's ``cell_start``.
- A mailbox ``notice`` the run took (in a drain, a held reply's or a cut effect's
  ``deferred``) is a :class:`NoticeStep` where it was taken, like a message; it never
  opens the run (the first *message* is the user step).
- Reading never raises on a well-formed log (one :func:`~jupyter_agent.trace.log.read_log`
  accepted): what cannot be understood is reported through the statuses.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from jupyter_agent.core.digest.cell_status import (
    bash_status,
    cell_status,
    partial_bash,
    partial_cell,
)
from jupyter_agent.core.digest.cells import BashResult, CellResult
from jupyter_agent.core.digest.record import digest_options_from_config, recorded
from jupyter_agent.core.digest.render import Digest, DigestOptions, digest_bash, digest_cell
from jupyter_agent.core.events.steps import (
    ApprovalStep,
    BashStep,
    BreakStep,
    BubbleStep,
    CellStep,
    ModelCallStep,
    NoticeStep,
    RecallStep,
    ReplyStep,
    SteeringStep,
    StepStatus,
    UserStep,
)
from jupyter_agent.core.events.types import CellStatus
from jupyter_agent.core.memory.program import AUTORECALL_PROGRAM, recalled
from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.effects import (
    APP_CALL,
    APPROVAL_WAIT,
    BASH_RUN,
    CELL_RUN,
    CHAT_POST,
    CONFIG_GET,
    HTTP_POST,
    MAILBOX_DRAIN,
    RECALL_SEARCH,
    TURN_APPEND,
)
from jupyter_agent.trace.log import LoggedEffect, TraceFile, pair_effects
from jupyter_agent.trace.wait_steps import approval_step

__all__ = ["AnyStep", "RunView", "build_view", "effect_status"]

AnyStep = (
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
    | NoticeStep
)

# A python cell that names the in-kernel ``sh`` depends on the host's shell, like bash.
_USES_SH = re.compile(r"\bsh\s*[.(]")


@dataclass(frozen=True, kw_only=True)
class RunView:
    """One run's log as steps, with what the export needs besides them."""

    header: dict[str, Any]
    steps: tuple[AnyStep, ...]
    turn: TurnRecord | None
    config: dict[str, Any] = field(default_factory=dict)
    unfinished: tuple[LoggedEffect, ...] = ()
    cancelled: tuple[LoggedEffect, ...] = ()
    truncated: bool = False

    @property
    def run_id(self) -> str | None:
        value = self.header.get("run_id") or (self.turn.run_id if self.turn else None)
        return value if isinstance(value, str) else None

    @property
    def chat_id(self) -> str | None:
        value = self.header.get("chat_id") or (self.turn.chat_id if self.turn else None)
        return value if isinstance(value, str) else None

    @property
    def model(self) -> str | None:
        """The codegen model: from the turn record, else the ``llm.tier.codegen`` config."""
        if self.turn is not None and self.turn.model:
            return self.turn.model
        tier = self.config.get("llm.tier.codegen")
        model = tier.get("model") if isinstance(tier, dict) else None
        return model if isinstance(model, str) else None

    def digest_options(self) -> DigestOptions:
        """The digest options the loop used, rebuilt from the recorded config results."""
        return _options(self.config)


def _options(config: dict[str, Any]) -> DigestOptions:
    try:
        return digest_options_from_config(config.get)
    except ValueError:  # a strange ceilings value: the loop would not have run with it
        return DigestOptions()


def effect_status(effect: LoggedEffect) -> StepStatus:
    """How an effect ended: ok, failed, cancelled or unfinished (never ``unreadable``)."""
    if effect.result is None:
        return "unfinished"
    if effect.result.error is not None:
        return "failed"
    data = effect.result.data
    if isinstance(data, dict) and data.get("cancelled") == "break_hard":
        return "cancelled"
    return "ok"


def _attachment_names(raw: Any) -> tuple[str, ...]:
    names = []
    for item in raw if isinstance(raw, list) else ():
        if isinstance(item, dict):
            name = item.get("name") or item.get("media_type") or "attachment"
            names.append(str(name))
    return tuple(names)


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class _Messages:
    """The messages a run took, in order: the first is the opening one, the rest steering."""

    def __init__(self) -> None:
        self.opened = False

    def steps(
        self, items: Any, seq: int
    ) -> Iterable[UserStep | SteeringStep | BreakStep | NoticeStep]:
        for item in items if isinstance(items, list) else ():
            if not isinstance(item, dict):
                continue
            kind = item.get("kind")
            if kind == "message":
                view = item.get("view")
                cls = SteeringStep if self.opened else UserStep
                self.opened = True
                yield cls(
                    seq=seq,
                    text=str(item.get("text") or ""),
                    at=str(item.get("at") or ""),
                    view=view if isinstance(view, dict) else None,
                    attachments=_attachment_names(item.get("attachments")),
                    message_id=_str_or_none(item.get("id")),
                )
            elif kind == "break":
                yield BreakStep(seq=seq, hard=bool(item.get("hard")), at=str(item.get("at", "")))
            elif kind == "notice":
                text, at = item.get("text"), item.get("at")
                yield NoticeStep(seq=seq, text=str(text or ""), at=str(at or ""))


def _num(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _digest(data: Any, render: Callable[[], Digest]) -> tuple[str | None, bool]:
    """(text, is_error) of the digest the model read: the recorded one, else rebuilt."""
    found = recorded(data)
    if found is not None:
        return found
    try:
        digest = render()
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return None, False
    return digest.text, digest.is_error


def _end_status(status: StepStatus, finished: CellStatus | None) -> CellStatus | None:
    """What the cell's ``cell_end`` said, from the effect's status and the result's own."""
    if status == "cancelled":
        return "cancelled"
    if status == "failed":
        return "error"
    return finished


def _agreeing(status: StepStatus, end: CellStatus | None) -> StepStatus:
    """The step's status as its ``end_status`` says it: a cell that ran to its end but
    raised, or whose kernel died, or a command that exited non-zero, is ``failed`` (its
    ``end_status`` is ``error``), not ``ok``."""
    return "failed" if status == "ok" and end == "error" else status


def _cell_step(
    effect: LoggedEffect, nested: tuple[LoggedEffect, ...], options: DigestOptions
) -> CellStep:
    data = effect.data if isinstance(effect.data, dict) else {}
    status: StepStatus = effect_status(effect)
    raw = effect.result.data if effect.result is not None else None
    result: CellResult | None = None
    if status == "ok":
        try:
            result = CellResult.from_json(raw)  # type: ignore[arg-type]
        except (KeyError, TypeError, ValueError, AttributeError):
            status = "unreadable"
        if result is not None and cell_status(result) == "timed_out":
            status = "timed_out"
    elif status == "cancelled":
        result = partial_cell(raw)
    read = result if status in ("ok", "timed_out") else None  # what the model read, if any
    digest = _digest(raw, lambda: digest_cell(read, options)) if read else (None, False)
    code = str(data.get("code") or "")
    logged_calls = sum(1 for e in nested if e.name == APP_CALL)
    app_calls = max(logged_calls, len(result.app_calls) if result is not None else 0)
    bubbles = raw.get("bubbles") if isinstance(raw, dict) else None
    end_status = _end_status(status, cell_status(read) if read is not None else None)
    return CellStep(
        seq=effect.seq,
        seqs=(effect.seq, *(e.seq for e in nested)),
        cell_id=str(data.get("cell_id") or ""),
        code=code,
        status=_agreeing(status, end_status),
        t=effect.intent.t,
        execution_count=result.execution_count if result is not None else None,
        duration_s=result.duration_s if result is not None else None,
        failed=result.error is not None if result is not None else None,
        app_calls=app_calls,
        digest=digest[0],
        outputs=tuple(result.outputs) if result is not None else (),
        error=effect.result.error if effect.result is not None else None,
        timeout_s=_num(data.get("timeout_s")),
        deterministic=(
            status == "ok" and result is not None and app_calls == 0 and not _USES_SH.search(code)
        ),
        outputs_truncated=result.outputs_truncated if result is not None else False,
        end_status=end_status,
        bubbles=tuple(str(b) for b in bubbles) if isinstance(bubbles, list) else (),
    )


def _bash_step(effect: LoggedEffect, cell_id: str, options: DigestOptions) -> BashStep:
    data = effect.data if isinstance(effect.data, dict) else {}
    status: StepStatus = effect_status(effect)
    raw = effect.result.data if effect.result is not None else None
    result: BashResult | None = None
    if status == "ok":
        try:
            result = BashResult.from_json(raw)  # type: ignore[arg-type]
        except (KeyError, TypeError, ValueError, AttributeError):
            status = "unreadable"
        if result is not None and bash_status(result) == "timed_out":
            status = "timed_out"
    elif status == "cancelled":
        result = partial_bash(raw)
    read = result if status in ("ok", "timed_out") else None
    text, is_error = _digest(raw, lambda: digest_bash(read, options)) if read else (None, False)
    finished: CellStatus | None = None
    if read is not None:
        finished = bash_status(read)
        finished = "error" if finished == "ok" and is_error else finished
    end_status = _end_status(status, finished)
    return BashStep(
        seq=effect.seq,
        cell_id=cell_id,
        command=str(data.get("command") or ""),
        status=_agreeing(status, end_status),
        t=effect.intent.t,
        returncode=result.returncode if result is not None else None,
        stdout=result.stdout.text if result is not None else None,
        stderr=result.stderr.text if result is not None else None,
        digest=text,
        error=effect.result.error if effect.result is not None else None,
        timeout_s=_num(data.get("timeout_s")),
        timed_out=result.timed_out if result is not None else False,
        duration_s=result.duration_s if result is not None else None,
        outputs_truncated=(
            result.stdout.truncated or result.stderr.truncated if result is not None else False
        ),
        end_status=end_status,
    )


def _model_call_step(effect: LoggedEffect) -> ModelCallStep:
    data = effect.result.data if effect.result is not None else None
    data = data if isinstance(data, dict) else {}
    status, attempts = data.get("status"), data.get("attempts")
    return ModelCallStep(
        seq=effect.seq,
        status=effect_status(effect),
        t=effect.intent.t,
        http_status=status if isinstance(status, int) else None,
        attempts=attempts if isinstance(attempts, int) else None,
    )


def _recall_step(effect: LoggedEffect) -> RecallStep:
    data = effect.data if isinstance(effect.data, dict) else {}
    status = effect_status(effect)
    shown = recalled(data, effect.result.data) if effect.result and status == "ok" else None
    return RecallStep(
        seq=effect.seq,
        status=status,
        t=effect.intent.t,
        program=AUTORECALL_PROGRAM,
        query=str(data.get("query") or ""),
        code=shown.code if shown else "",
        text=shown.text if shown else "",
        hits=tuple(h.to_json() for h in shown.hits) if shown else (),
        tokens=shown.record().tokens if shown else 0,
        error=effect.result.error if effect.result is not None else None,
    )


def _post_step(effect: LoggedEffect) -> BubbleStep | ReplyStep:
    data = effect.data if isinstance(effect.data, dict) else {}
    cls = ReplyStep if data.get("done") else BubbleStep
    answer = effect.result.data if effect.result is not None else None
    return cls(
        seq=effect.seq,
        text=str(data.get("text") or ""),
        t=effect.intent.t,
        status=effect_status(effect),
        message_id=_str_or_none(answer),
    )


def _top_level(effects: list[LoggedEffect]) -> dict[int, list[LoggedEffect]]:
    """Nested effects grouped under the top-level effect they descend from."""
    root: dict[int, int] = {}
    grouped: dict[int, list[LoggedEffect]] = {}
    for effect in effects:
        if effect.parent is None:
            root[effect.seq] = effect.seq
            continue
        top = root.get(effect.parent, effect.parent)
        root[effect.seq] = top
        grouped.setdefault(top, []).append(effect)
    return grouped


def _deferred(effect: LoggedEffect) -> Any:
    """The messages a result hands the loop beside its own answer (``deferred``)."""
    data = effect.result.data if effect.result is not None else None
    return data.get("deferred") if isinstance(data, dict) else None


def build_view(trace: TraceFile) -> RunView:
    """Read a parsed log as steps (see the module docstring)."""
    effects = pair_effects(trace)
    nested = _top_level(effects)
    top = [e for e in effects if e.parent is None]
    config: dict[str, Any] = {}
    for effect in top:
        if effect.name == CONFIG_GET and effect.result is not None:
            key = effect.data.get("key") if isinstance(effect.data, dict) else None
            config.setdefault(str(key), effect.result.data)
    options = _options(config)
    used_ids = {
        str(e.data.get("cell_id")) for e in top if e.name == CELL_RUN and isinstance(e.data, dict)
    }
    steps: list[AnyStep] = []
    messages = _Messages()
    turn: TurnRecord | None = None
    tool_runs = 0
    for effect in top:
        name = effect.name
        if name == MAILBOX_DRAIN and effect_status(effect) == "ok" and effect.result is not None:
            steps.extend(messages.steps(effect.result.data, effect.seq))
        elif name == CHAT_POST and isinstance(effect.data, dict):
            if _deferred(effect) is None:  # a reply held back for mail is not a reply
                steps.append(_post_step(effect))
        elif name == HTTP_POST:
            steps.append(_model_call_step(effect))
        elif name == RECALL_SEARCH:
            steps.append(_recall_step(effect))
        elif name == APPROVAL_WAIT:
            steps.append(approval_step(effect, effect_status(effect)))
        elif name == CELL_RUN:
            tool_runs += 1
            steps.append(_cell_step(effect, tuple(nested.get(effect.seq, ())), options))
        elif name == BASH_RUN:
            tool_runs += 1
            n = tool_runs
            while f"c{n}" in used_ids:
                n += 1
            used_ids.add(f"c{n}")
            steps.append(_bash_step(effect, f"c{n}", options))
        elif name == TURN_APPEND and isinstance(effect.data, dict):
            try:
                turn = TurnRecord.from_json(effect.data)
            except (KeyError, TypeError, ValueError, AttributeError):
                turn = None
        # Waits nested under this effect (an MCP call of a cell): after its step.
        waits = (e for e in nested.get(effect.seq, ()) if e.name == APPROVAL_WAIT)
        steps.extend(approval_step(e, effect_status(e)) for e in waits)
        if name in (CHAT_POST, CELL_RUN, BASH_RUN, HTTP_POST, APPROVAL_WAIT):
            steps.extend(messages.steps(_deferred(effect), effect.seq))
    return RunView(
        header=dict(trace.header),
        steps=tuple(steps),
        turn=turn,
        config=config,
        unfinished=tuple(e for e in effects if e.result is None),
        cancelled=tuple(e for e in effects if effect_status(e) == "cancelled"),
        truncated=trace.truncated,
    )
