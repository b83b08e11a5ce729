"""A run's effect log read as the steps a person saw: messages, bubbles, cells, the reply.

:func:`build_view` turns a :class:`~jupyter_agent.trace.log.TraceFile` into a
:class:`RunView`: the ordered :data:`Step` list that both the notebook export
(:mod:`jupyter_agent.trace.notebook`) and ``jupyter agent trace show`` render.

Contract:

- Steps come in seq order of their top-level effects (those without ``parent``). Nested
  effects (an ``app.call`` made by a cell, and what the host did for it) belong to the
  top-level ``cell.run`` they descend from: :attr:`CellStep.nested`.
- The first top-level ``mailbox.drain`` holds the opening user message (``kind`` "user");
  every other message, in that drain or a later one, is ``kind`` "steering". Break items
  become :class:`BreakStep`. Unknown mailbox kinds and unknown effect names are skipped.
- ``cell.run`` and ``bash.run`` share one counter, as in the loop (``c<n>`` with n the
  count of tool runs so far). A python cell keeps its recorded ``cell_id`` (so
  ``values.get("c3", ...)`` in a later cell still names it); a bash step gets ``c<n>`` from
  that counter, or the next free ``c<n>`` when a python cell already has that id.
- Every step has a :data:`Status`: ``ok``; ``failed`` (the result line has ``error``);
  ``cancelled`` (a hard break: data ``{"cancelled": "break_hard"}``); ``timed_out`` (a
  cell or command that ran past its timeout: see :mod:`jupyter_agent.core.cell_status`);
  ``unfinished`` (an intent without a result: the run crashed or is still going);
  ``unreadable`` (a result whose data does not parse as a cell or bash result).
- A cell or bash step has its parsed ``result`` when it finished (``ok``, ``timed_out``)
  and when it was cancelled with a partial result (what it printed before the break).
- Reading never raises on a well-formed log (one :func:`~jupyter_agent.trace.log.read_log`
  accepted): what cannot be understood is reported through the statuses.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from jupyter_agent.core.cell_status import bash_status, cell_status, partial_bash, partial_cell
from jupyter_agent.core.cells import BashResult, CellResult
from jupyter_agent.core.digest import DigestOptions
from jupyter_agent.core.effects import (
    APP_CALL,
    BASH_RUN,
    CELL_RUN,
    CHAT_POST,
    CONFIG_GET,
    HTTP_POST,
    MAILBOX_DRAIN,
    TURN_APPEND,
)
from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.trace.log import LoggedEffect, TraceFile, pair_effects

__all__ = [
    "BashStep",
    "BreakStep",
    "CellStep",
    "MessageStep",
    "ModelCallStep",
    "PostStep",
    "RunView",
    "Status",
    "Step",
    "build_view",
    "effect_status",
]

Status = Literal["ok", "failed", "cancelled", "timed_out", "unfinished", "unreadable"]

# A python cell that names the in-kernel ``sh`` depends on the host's shell, like bash.
_USES_SH = re.compile(r"\bsh\s*[.(]")


@dataclass(frozen=True, kw_only=True)
class MessageStep:
    """A user message: the one that opened the run (``user``) or one that came mid-run."""

    kind: Literal["user", "steering"]
    seq: int
    text: str
    at: str
    view: dict[str, Any] | None = None
    attachments: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class BreakStep:
    """A break read from the mailbox (a hard one is normally acted on by the host at once)."""

    seq: int
    hard: bool
    at: str


@dataclass(frozen=True, kw_only=True)
class PostStep:
    """A ``chat.post``: a progress bubble (``done`` false) or the final reply."""

    kind: Literal["bubble", "reply"]
    seq: int
    text: str
    t: str
    status: Status


@dataclass(frozen=True, kw_only=True)
class CellStep:
    """A ``cell.run`` with its nested effects and parsed result (see the module docstring)."""

    seq: int
    cell_id: str
    code: str
    timeout_s: float | None
    status: Status
    result: CellResult | None
    error: dict[str, Any] | None = None
    nested: tuple[LoggedEffect, ...] = ()
    t: str = ""

    @property
    def seqs(self) -> tuple[int, ...]:
        """The ``cell.run`` seq, then every effect nested under it, in seq order."""
        return (self.seq, *(e.seq for e in self.nested))

    @property
    def app_calls(self) -> int:
        """How many app calls the cell made (logged nested effects or reported records)."""
        logged = sum(1 for e in self.nested if e.name == APP_CALL)
        reported = len(self.result.app_calls) if self.result is not None else 0
        return max(logged, reported)

    @property
    def deterministic(self) -> bool:
        """True when re-running the code alone should give the recorded outputs.

        A finished cell (status ``ok``) with no app call and no use of ``sh``; a cell
        without a whole recorded result (cancelled, timed out, ...) is not deterministic.
        """
        return (
            self.status == "ok"
            and self.result is not None
            and self.app_calls == 0
            and not _USES_SH.search(self.code)
        )


@dataclass(frozen=True, kw_only=True)
class BashStep:
    """A ``bash.run``: ``cell_id`` is the notebook id it gets; ``result`` as for a cell."""

    seq: int
    cell_id: str
    command: str
    timeout_s: float | None
    status: Status
    result: BashResult | None
    error: dict[str, Any] | None = None
    t: str = ""


@dataclass(frozen=True, kw_only=True)
class ModelCallStep:
    """A top-level ``http.post`` (one model call of the loop)."""

    seq: int
    status: Status
    http_status: int | None
    attempts: int | None
    t: str


Step = MessageStep | BreakStep | PostStep | CellStep | BashStep | ModelCallStep


@dataclass(frozen=True, kw_only=True)
class RunView:
    """One run's log as steps, with what the export needs besides them."""

    header: dict[str, Any]
    steps: tuple[Step, ...]
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
        ceilings = self.config.get("ceilings")
        ceilings = ceilings if isinstance(ceilings, dict) else {}
        spaces = self.config.get("spaces")
        spaces = spaces if isinstance(spaces, dict) else {}
        defaults = DigestOptions()
        return DigestOptions(
            value_budget_tokens=_int(
                ceilings.get("value_budget_tokens"), defaults.value_budget_tokens
            ),
            total_budget_tokens=_int(
                ceilings.get("total_budget_tokens"), defaults.total_budget_tokens
            ),
            vision=self._vision(),
            env_prefix=str(spaces.get("env_prefix", "")),
            home=str(spaces.get("home", "")),
        )

    def _vision(self) -> bool:
        model = self.model
        if model is None:
            return False
        overrides = self.config.get(f"llm.profile.{model}")
        # Imported here: the profiles table is only needed for an export, not to read a log.
        from jupyter_agent.llm.profiles import get_profile

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # an unknown model's warning is not ours
                return get_profile(model, overrides if isinstance(overrides, dict) else None).vision
        except Exception:  # a bad override was the run's problem; the export goes on
            return False


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def effect_status(effect: LoggedEffect) -> Status:
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


def _drain_steps(effect: LoggedEffect, first: bool) -> Iterable[MessageStep | BreakStep]:
    if effect_status(effect) != "ok" or effect.result is None:
        return
    items = effect.result.data if isinstance(effect.result.data, list) else []
    opening = first
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("kind")
        if kind == "message":
            view = item.get("view")
            yield MessageStep(
                kind="user" if opening else "steering",
                seq=effect.seq,
                text=str(item.get("text") or ""),
                at=str(item.get("at") or ""),
                view=view if isinstance(view, dict) else None,
                attachments=_attachment_names(item.get("attachments")),
            )
            opening = False
        elif kind == "break":
            yield BreakStep(seq=effect.seq, hard=bool(item.get("hard")), at=str(item.get("at", "")))


def _num(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _cell_step(effect: LoggedEffect, nested: tuple[LoggedEffect, ...]) -> CellStep:
    data = effect.data if isinstance(effect.data, dict) else {}
    status: Status = effect_status(effect)
    result: CellResult | None = None
    if status == "ok" and effect.result is not None:
        try:
            result = CellResult.from_json(effect.result.data)
        except (KeyError, TypeError, ValueError, AttributeError):
            status = "unreadable"
        if result is not None and cell_status(result) == "timed_out":
            status = "timed_out"
    elif status == "cancelled" and effect.result is not None:
        result = partial_cell(effect.result.data)
    return CellStep(
        seq=effect.seq,
        cell_id=str(data.get("cell_id") or ""),
        code=str(data.get("code") or ""),
        timeout_s=_num(data.get("timeout_s")),
        status=status,
        result=result,
        error=effect.result.error if effect.result is not None else None,
        nested=nested,
        t=effect.intent.t,
    )


def _bash_step(effect: LoggedEffect, cell_id: str) -> BashStep:
    data = effect.data if isinstance(effect.data, dict) else {}
    status: Status = effect_status(effect)
    result: BashResult | None = None
    if status == "ok" and effect.result is not None:
        try:
            result = BashResult.from_json(effect.result.data)
        except (KeyError, TypeError, ValueError, AttributeError):
            status = "unreadable"
        if result is not None and bash_status(result) == "timed_out":
            status = "timed_out"
    elif status == "cancelled" and effect.result is not None:
        result = partial_bash(effect.result.data)
    return BashStep(
        seq=effect.seq,
        cell_id=cell_id,
        command=str(data.get("command") or ""),
        timeout_s=_num(data.get("timeout_s")),
        status=status,
        result=result,
        error=effect.result.error if effect.result is not None else None,
        t=effect.intent.t,
    )


def _model_call_step(effect: LoggedEffect) -> ModelCallStep:
    data = effect.result.data if effect.result is not None else None
    data = data if isinstance(data, dict) else {}
    status, attempts = data.get("status"), data.get("attempts")
    return ModelCallStep(
        seq=effect.seq,
        status=effect_status(effect),
        http_status=status if isinstance(status, int) else None,
        attempts=attempts if isinstance(attempts, int) else None,
        t=effect.intent.t,
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


def build_view(trace: TraceFile) -> RunView:
    """Read a parsed log as steps (see the module docstring)."""
    effects = pair_effects(trace)
    nested = _top_level(effects)
    python_ids = {
        str(e.data.get("cell_id"))
        for e in effects
        if e.parent is None and e.name == CELL_RUN and isinstance(e.data, dict)
    }
    used_ids: set[str] = set(python_ids)
    steps: list[Step] = []
    config: dict[str, Any] = {}
    turn: TurnRecord | None = None
    drains = 0
    tool_runs = 0
    for effect in effects:
        if effect.parent is not None:
            continue
        name = effect.name
        if name == CONFIG_GET and effect.result is not None and isinstance(effect.data, dict):
            config.setdefault(str(effect.data.get("key")), effect.result.data)
        elif name == MAILBOX_DRAIN:
            steps.extend(_drain_steps(effect, first=drains == 0))
            drains += 1
        elif name == CHAT_POST and isinstance(effect.data, dict):
            done = bool(effect.data.get("done"))
            steps.append(
                PostStep(
                    kind="reply" if done else "bubble",
                    seq=effect.seq,
                    text=str(effect.data.get("text") or ""),
                    t=effect.intent.t,
                    status=effect_status(effect),
                )
            )
        elif name == HTTP_POST:
            steps.append(_model_call_step(effect))
        elif name == CELL_RUN:
            tool_runs += 1
            steps.append(_cell_step(effect, tuple(nested.get(effect.seq, ()))))
        elif name == BASH_RUN:
            tool_runs += 1
            n = tool_runs
            while f"c{n}" in used_ids:
                n += 1
            used_ids.add(f"c{n}")
            steps.append(_bash_step(effect, f"c{n}"))
        elif name == TURN_APPEND and isinstance(effect.data, dict):
            try:
                turn = TurnRecord.from_json(effect.data)
            except (KeyError, TypeError, ValueError, AttributeError):
                turn = None
    return RunView(
        header=dict(trace.header),
        steps=tuple(steps),
        turn=turn,
        config=config,
        unfinished=tuple(e for e in effects if e.result is None),
        cancelled=tuple(e for e in effects if effect_status(e) == "cancelled"),
        truncated=trace.truncated,
    )
