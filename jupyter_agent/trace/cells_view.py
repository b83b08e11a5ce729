"""A run's effect log read as the steps a person saw: the one builder of a run's steps.

:func:`build_view` turns a :class:`~jupyter_agent.trace.log.TraceFile` into a
:class:`RunView`: the ordered steps (:mod:`jupyter_agent.core.events.steps`, a tagged union) that
``GET agent/runs/{id}`` serves, the notebook export (:mod:`jupyter_agent.trace.notebook`)
and ``jupyter agent trace show`` render, and the panel rebuilds a chat from. Each effect's
own step is read by :mod:`jupyter_agent.trace.effect_steps` (a wait's by
:mod:`jupyter_agent.trace.wait_steps`); this module orders them and reads the mailbox.

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
- An ``approval.wait`` is an :class:`ApprovalStep`. A top-level one (a cell or
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

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from jupyter_agent.core.digest.options import DigestOptions
from jupyter_agent.core.digest.record import digest_options_from_config
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
    UserStep,
)
from jupyter_agent.core.loop.start import START_KEY, StartAnswer
from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.effects import (
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
from jupyter_agent.trace.effect_steps import (
    bash_step,
    cell_step,
    effect_status,
    model_call_step,
    post_step,
    recall_step,
    str_or_none,
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


def _attachment_names(raw: Any) -> tuple[str, ...]:
    names = []
    for item in raw if isinstance(raw, list) else ():
        if isinstance(item, dict):
            name = item.get("name") or item.get("media_type") or "attachment"
            names.append(str(name))
    return tuple(names)


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
                    message_id=str_or_none(item.get("id")),
                )
            elif kind == "break":
                yield BreakStep(seq=seq, hard=bool(item.get("hard")), at=str(item.get("at", "")))
            elif kind == "notice":
                text, at = item.get("text"), item.get("at")
                yield NoticeStep(seq=seq, text=str(text or ""), at=str(at or ""))


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
            if key == START_KEY:  # v7's one read: its parts under v6's keys
                for part, value in StartAnswer.from_json(effect.result.data).config_view().items():
                    config.setdefault(part, value)
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
                steps.append(post_step(effect))
        elif name == HTTP_POST:
            steps.append(model_call_step(effect))
        elif name == RECALL_SEARCH:
            steps.append(recall_step(effect))
        elif name == APPROVAL_WAIT:
            steps.append(approval_step(effect, effect_status(effect)))
        elif name == CELL_RUN:
            tool_runs += 1
            steps.append(cell_step(effect, tuple(nested.get(effect.seq, ())), options))
        elif name == BASH_RUN:
            tool_runs += 1
            n = tool_runs
            while f"c{n}" in used_ids:
                n += 1
            used_ids.add(f"c{n}")
            steps.append(bash_step(effect, f"c{n}", options))
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
