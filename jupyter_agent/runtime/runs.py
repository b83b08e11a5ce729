"""The run manager: starts runs, routes messages to mailboxes, breaks runs, recovers.

One run at a time per chat; chats run concurrently, each in its own kernel. The answer to
a message always names the run whose turn will hold it (as ``userText`` or ``steering``):

- a chat with no run: a new run starts (``routed: "run"``);
- a run that is open (it still drains its mailbox): the message lands in its mailbox
  (``routed: "mailbox"``) and the driver makes sure the turn takes it (see
  :mod:`jupyter_agent.runtime.driver`: a final reply waits while mail is queued);
- a run that is closed (its final reply posted, or broken): the message is for the next
  run, whose id is reserved now and answered at once (``routed: "run"``); that run starts
  the moment the current one has ended, with every message queued for it, in order.

Nothing is dropped, and a message is never answered with a run that will not hold it.

Handlers (``server/``) translate HTTP into these calls and nothing else.

The ceilings and budgets of new runs are the manager's traits (``c.RunManager.max_cells =
30`` in a ``jupyter_server_config.py``): one per field of
:class:`~jupyter_agent.core.runstate.Ceilings` (same names, same defaults) and
``model_deadline_s`` (the driver's cap on each model call). :attr:`RunManager.ceilings` is
the value a run reads through ``config.get {"key": "ceilings"}``, recorded in its log, so
a replay never reads today's config.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from traitlets import Bool, Float, Int, TraitError, validate
from traitlets.config import LoggingConfigurable

from jupyter_agent.core.events import RunEnd, RunStart
from jupyter_agent.core.loop import PROGRAM
from jupyter_agent.core.runstate import Ceilings
from jupyter_agent.core.turns import RunSummary, TurnRecord
from jupyter_agent.exceptions import RunCancelled
from jupyter_agent.runtime.driver import RunConfig, RunDriver, RunServices
from jupyter_agent.runtime.ids import new_id, now_iso
from jupyter_agent.runtime.run_records import (
    ended_summary,
    minimal_turn,
    store_call,
    with_counts,
)
from jupyter_agent.trace.log import EffectLog

__all__ = ["ActiveRun", "BreakState", "RunManager"]

log = logging.getLogger(__name__)

BreakState = Literal["breaking", "ended"]

_DEFAULT = Ceilings()


@dataclass(kw_only=True)
class ActiveRun:
    """A run in progress: its driver and the task running it."""

    run_id: str
    chat_id: str
    driver: RunDriver
    task: asyncio.Task[None]
    soft_break: bool = False

    @property
    def closed(self) -> bool:
        """True once the run takes no more mail (final reply posted, or broken)."""
        return self.soft_break or self.driver.closed


@dataclass(kw_only=True)
class NextRun:
    """A run reserved for a chat whose current run is closed: it starts when that ends."""

    run_id: str
    items: list[dict[str, Any]] = field(default_factory=list)
    hard_break: bool = False
    started: asyncio.Event = field(default_factory=asyncio.Event)


class RunManager(LoggingConfigurable):
    """Owns the runs of one server (see the module docstring).

    ``run_config`` gives the snapshot each new run starts with (its ``ceilings`` are
    usually this manager's :attr:`ceilings`); effect logs go in ``runs_dir``.
    The ceiling traits are given as keyword arguments or through ``config`` / ``parent``.
    """

    max_model_calls = Int(
        _DEFAULT.max_model_calls,
        min=0,
        help="Ceiling: model calls in one run before the agent must wrap up.",
    ).tag(config=True)

    max_cells = Int(
        _DEFAULT.max_cells,
        min=0,
        help="Ceiling: cells run in one run before the agent must wrap up.",
    ).tag(config=True)

    max_wall_s = Float(
        _DEFAULT.max_wall_s,
        help="Ceiling: wall-clock seconds of one run before the agent must wrap up.",
    ).tag(config=True)

    max_cost_usd = Float(
        _DEFAULT.max_cost_usd,
        help="Ceiling: model cost of one run in USD before the agent must wrap up.",
    ).tag(config=True)

    cell_timeout_s = Float(
        _DEFAULT.cell_timeout_s,
        help="Seconds one cell (or bash command) may run before it is interrupted.",
    ).tag(config=True)

    model_deadline_s = Float(
        300.0, help="Deadline in seconds of one model call, retries included."
    ).tag(config=True)

    bash_enabled = Bool(
        _DEFAULT.bash_enabled,
        help="Offer the bash tool to the model (commands run on the kernel's host).",
    ).tag(config=True)

    history_budget_tokens = Int(
        _DEFAULT.history_budget_tokens,
        min=0,
        help=(
            "Tokens of the chat's earlier turns a run starts with (at most a quarter of "
            "the model's context window; older turns are left out)."
        ),
    ).tag(config=True)

    value_budget_tokens = Int(
        _DEFAULT.value_budget_tokens,
        min=1,
        help=(
            "Tokens one printed or last value may take in a cell's digest; a longer one "
            "becomes a stub naming the call that returns it whole."
        ),
    ).tag(config=True)

    total_budget_tokens = Int(
        _DEFAULT.total_budget_tokens,
        min=1,
        help="Tokens one cell's digest (what the model reads of it) may take in all.",
    ).tag(config=True)

    @validate("max_wall_s", "max_cost_usd", "cell_timeout_s", "model_deadline_s")
    def _validate_positive(self, proposal: Mapping[str, Any]) -> float:
        """Durations and budgets must be positive."""
        value = float(proposal["value"])
        if not value > 0:
            raise TraitError(
                f"{type(self).__name__}.{proposal['trait'].name} must be > 0, not {value}"
            )
        return value

    @property
    def ceilings(self) -> dict[str, Any]:
        """The ``ceilings`` config value of a new run: each ceiling trait's value."""
        return {name: getattr(self, name) for name in RunManager.class_own_traits(config=True)}

    def __init__(
        self,
        *,
        services: RunServices,
        run_config: Callable[[], RunConfig],
        runs_dir: Path,
        **traits: Any,
    ) -> None:
        super().__init__(**traits)
        self.services = services
        self._config = run_config
        self.runs_dir = Path(runs_dir)
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self._active: dict[str, ActiveRun] = {}  # chat id -> run
        self._by_run: dict[str, ActiveRun] = {}
        self._next: dict[str, NextRun] = {}  # chat id -> the run reserved after a closed one

    # --- queries ---------------------------------------------------------------------

    def active_run_id(self, chat_id: str) -> str | None:
        """The id of the chat's run in progress, if any."""
        run = self._active.get(chat_id)
        return run.run_id if run else None

    def log_path(self, run_id: str) -> Path:
        """Where the run's effect log lives."""
        return self.runs_dir / f"{run_id}.jsonl"

    # --- commands --------------------------------------------------------------------

    def send(
        self,
        chat_id: str,
        *,
        text: str,
        view: dict[str, Any] | None = None,
        attachments: Sequence[dict[str, Any]] = (),
    ) -> dict[str, Any]:
        """Queue a user message; start a run unless one is going.

        ``{run_id, routed, message_id}``: the message's id travels with it (its mailbox item's
        ``id``, the ``message_id`` of its ``run_start`` or ``steering`` event and step).
        """
        message_id = new_id("msg")
        item: dict[str, Any] = {"kind": "message", "text": text, "at": now_iso(), "id": message_id}
        if view:
            item["view"] = view
        if attachments:
            item["attachments"] = list(attachments)
        active = self._active.get(chat_id)
        if active is not None:
            if not active.closed:
                self.services.mailbox.put(chat_id, item)
                return {"run_id": active.run_id, "routed": "mailbox", "message_id": message_id}
            # Closed (its final reply is out, or it is stopping on request): this message
            # opens the next run, reserved now so the answer names it.
            nxt = self._next.get(chat_id)
            if nxt is None:
                nxt = self._next[chat_id] = NextRun(run_id=new_id("run"))
            nxt.items.append(item)
            return {"run_id": nxt.run_id, "routed": "run", "message_id": message_id}
        run_id = self._start(chat_id, view=view, text=text, message_id=message_id)
        # Queued only once the run exists (its first drain comes after this returns).
        self.services.mailbox.put(chat_id, item)
        return {"run_id": run_id, "routed": "run", "message_id": message_id}

    async def break_run(self, run_id: str, *, hard: bool) -> BreakState | None:
        """Break a run: soft at its next drain, hard at once. None for an unknown run."""
        active = self._by_run.get(run_id)
        reserved = self._reserved(run_id)
        if active is None and reserved is not None:
            # Not started yet: it starts (so its turn holds its messages) and stops at once.
            # A soft break too: there is no step to wrap up before its first model call.
            reserved.hard_break = True
            return "breaking"
        if active is None:
            exists = await asyncio.to_thread(self.services.store.get_run, run_id)
            return "ended" if exists is not None or self.log_path(run_id).exists() else None
        if hard:
            await active.driver.hard_break()
        else:
            active.soft_break = True
            self.services.mailbox.put(
                active.chat_id, {"kind": "break", "hard": False, "at": now_iso()}
            )
        return "breaking"

    async def wait(self, run_id: str) -> None:
        """Wait until the run (if in progress, or reserved) has ended."""
        reserved = self._reserved(run_id)
        if reserved is not None:
            await reserved.started.wait()
        active = self._by_run.get(run_id)
        if active is not None:
            await asyncio.shield(active.task)

    async def stop_chat(self, chat_id: str, *, timeout_s: float = 30) -> None:
        """Hard-break the chat's run and the runs reserved after it; wait until none is left.

        For deleting a chat: a reserved run still starts (so its turn holds its messages)
        but is broken at once, and nothing starts after it.
        """
        deadline = asyncio.get_running_loop().time() + timeout_s
        while True:
            nxt = self._next.get(chat_id)
            if nxt is not None:
                nxt.hard_break = True
            active = self._active.get(chat_id)
            if active is None:
                return
            await active.driver.hard_break()
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                log.warning("the runs of chat %s did not stop within %s s", chat_id, timeout_s)
                return
            await asyncio.wait({active.task}, timeout=left)

    async def shutdown(self) -> None:
        """Hard-break every run (and the runs reserved after them) and wait for them to end."""
        for _ in range(10):  # a reserved run starts when its predecessor ends: break it too
            for nxt in self._next.values():
                nxt.hard_break = True
            runs = list(self._by_run.values())
            if not runs:
                return
            for run in runs:
                await run.driver.hard_break()
            await asyncio.gather(*(r.task for r in runs), return_exceptions=True)

    async def recover(self) -> list[str]:
        """Runs left running by a crashed server become interrupted, with a minimal turn.

        No cell is re-run: the run simply ends as ``error`` / ``restart``.
        """
        store = self.services.store
        left = await asyncio.to_thread(store.runs_with_status, "running")
        recovered = []
        for summary in left:
            if summary.run_id in self._by_run:
                continue
            now = now_iso()
            if await asyncio.to_thread(store.get_turn_by_run, summary.run_id) is None:
                turn = minimal_turn(summary, "error", "restart", self.log_path(summary.run_id))
                await asyncio.to_thread(store.append_turn, turn)
            await asyncio.to_thread(
                store.upsert_run,
                ended_summary(summary, now, status="interrupted", stop="error", cause="restart"),
            )
            recovered.append(summary.run_id)
        return recovered

    # --- internals -------------------------------------------------------------------

    def _reserved(self, run_id: str) -> NextRun | None:
        for nxt in self._next.values():
            if nxt.run_id == run_id:
                return nxt
        return None

    def _start(
        self,
        chat_id: str,
        *,
        view: dict[str, Any] | None,
        text: str,
        run_id: str | None = None,
        message_id: str | None = None,
    ) -> str:
        run_id = run_id or new_id("run")
        config = self._config()
        started = now_iso()
        model = (config.tiers.get("codegen") or {}).get("model")
        header = {
            "run_id": run_id,
            "chat_id": chat_id,
            "program": PROGRAM,
            "created": started,
            "tiers": config.tiers,
            "profile": model,
        }
        history = self.services.store.list_turns(chat_id)
        effect_log = EffectLog.create(self.log_path(run_id), header)
        summary = RunSummary(
            run_id=run_id,
            chat_id=chat_id,
            program=PROGRAM,
            status="running",
            started=started,
            model=str(model) if model else None,
        )
        self.services.store.upsert_run(summary)
        try:
            return self._launch(summary, effect_log, config, history, view, text, message_id)
        except Exception:
            # Nothing ran: the run must not stay "running" until the next restart.
            effect_log.close()
            self.services.store.upsert_run(
                ended_summary(summary, now_iso(), status="error", stop="error", cause="error")
            )
            raise

    def _launch(
        self,
        summary: RunSummary,
        effect_log: EffectLog,
        config: RunConfig,
        history: list[TurnRecord],
        view: dict[str, Any] | None,
        text: str,
        message_id: str | None,
    ) -> str:
        run_id, chat_id, started = summary.run_id, summary.chat_id, summary.started
        path = (view or {}).get("path")
        cwd = str(Path(path).parent) if isinstance(path, str) and path else None
        driver = RunDriver(
            run_id=run_id,
            chat_id=chat_id,
            log_=effect_log,
            config=config,
            history=history,
            services=self.services,
            cwd=cwd,
        )
        self.services.store.touch_chat(chat_id, now=started, active_run_id=run_id)
        # The opening message rides on run_start so every client shows it at once.
        self.services.events.publish(
            chat_id, run_id, RunStart(started=started, text=text, message_id=message_id)
        )
        task = asyncio.get_running_loop().create_task(self._run(summary, driver))
        active = ActiveRun(run_id=run_id, chat_id=chat_id, driver=driver, task=task)
        self._active[chat_id] = active
        self._by_run[run_id] = active
        return run_id

    async def _run(self, summary: RunSummary, driver: RunDriver) -> None:
        """Run to the end; whatever happens, the run gets a turn, a summary and a successor."""
        store = self.services.store
        chat_id, run_id = summary.chat_id, summary.run_id
        turn: TurnRecord | None = None
        try:
            turn = await driver.run()
        except (Exception, RunCancelled):  # a bug must not wedge the chat: end the run
            log.exception("run %s failed", run_id)
        if turn is None:
            turn = minimal_turn(summary, "error", "error", self.log_path(summary.run_id))
        leftover = driver.take_deferred()
        if leftover:
            # Mail a hard break took that the loop never read: it starts the next run.
            nxt = self._next.setdefault(chat_id, NextRun(run_id=new_id("run")))
            nxt.items[:0] = leftover
        if not driver.turn_written:
            await store_call(store.append_turn, turn, attempts=3)
        status = {"done": "done", "wrapup": "done", "break_hard": "interrupted"}.get(
            turn.llm.stop_reason, "error"
        )
        ended = ended_summary(
            summary, now_iso(), status=status, stop=turn.llm.stop_reason, cause=turn.llm.end_cause
        )
        await store_call(store.upsert_run, with_counts(ended, turn))
        # No await from here to the next start: a message arriving now either finds this
        # run gone and starts its own, or is already reserved and starts the next one below.
        self._active.pop(chat_id, None)
        self._by_run.pop(run_id, None)
        self.services.events.publish(
            chat_id,
            run_id,
            RunEnd(
                stop_reason=turn.llm.stop_reason,
                end_cause=turn.llm.end_cause,
                turn=turn.to_json(),
            ),
        )
        if not self._start_next(chat_id):
            await store_call(store.touch_chat, chat_id, now=ended.ended, active_run_id=None)

    def _start_next(self, chat_id: str) -> bool:
        """Start the run reserved after the one that just ended, if any. True if started."""
        mailbox = self.services.mailbox
        mailbox.drop_breaks(chat_id)
        # Left over from a run that ended without draining them (a bug or a failed start):
        # they go first, as they came first.
        items = mailbox.drain(chat_id)
        nxt = self._next.pop(chat_id, None)
        if nxt is not None:
            items.extend(nxt.items)
        first = next((i for i in items if i.get("kind") == "message"), None)
        if first is None:
            if nxt is not None:
                nxt.started.set()
            return False
        try:
            new_run = self._start(
                chat_id,
                view=first.get("view"),
                text=str(first.get("text", "")),
                run_id=nxt.run_id if nxt is not None else None,
                message_id=first.get("id") if isinstance(first.get("id"), str) else None,
            )
        except Exception:
            log.exception("could not start the next run of %s", chat_id)
            for item in items:  # kept for the next message, which starts a run with them
                mailbox.put(chat_id, item)
            if nxt is not None:
                nxt.started.set()
            return False
        for item in items:
            mailbox.put(chat_id, item)
        if nxt is not None:
            if nxt.hard_break:
                self._by_run[new_run].driver.request_hard_break()
            nxt.started.set()
        return True
