"""The run manager: starts runs, routes messages to mailboxes, breaks runs, recovers.

One run at a time per chat; chats run concurrently, each in its own kernel. The answer to
a message always names the run whose turn will hold it (as ``userText`` or ``steering``):

- a chat with no run: a new run starts (``routed: "run"``);
- a run that is open (it still drains its mailbox): the message lands in its mailbox
  (``routed: "mailbox"``) and the driver makes sure the turn takes it (see
  :mod:`jupyter_agent.runtime.loop.driver`: a final reply waits while mail is queued);
- a run that is closed (its final reply posted, or broken): the message is for the next
  run, whose id is reserved now and answered at once (``routed: "run"``); that run starts
  the moment the current one has ended, with every message queued for it, in order.

Nothing is dropped, and a message is never answered with a run that will not hold it.

Durability (the order every path keeps): a message is stored in the durable mailbox
(``agent_mail``) before it is acknowledged, and a store that cannot take it refuses it
(:class:`~jupyter_agent.exceptions.StoreUnavailable`, 503) with nothing left behind; it
leaves the mailbox in the transaction that stores the turn holding it. A run's turn and
summary are written with :func:`~jupyter_agent.runtime.runs.records.durable_call`
(retried until the store takes them; at a stop, the next start recovers them from the
run's log, see :mod:`jupyter_agent.runtime.runs.recovery`). Store calls never run on the
event loop. A chat's sends and its run-to-run hand-over are serialised by one lock per
chat, so a message never meets a run half ended.

Handlers (``server/``) translate HTTP into these calls and nothing else.

The ceilings and budgets of new runs are the manager's traits (``c.RunManager.max_cells =
30`` in a ``jupyter_server_config.py``): one per field of
:class:`~jupyter_agent.core.loop.runstate.Ceilings` (same names, same defaults) and
``model_deadline_s`` (the driver's cap on each model call). :attr:`RunManager.ceilings` is
the value a run reads through ``config.get {"key": "ceilings"}``, recorded in its log, so
a replay never reads today's config.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from traitlets import Bool, Float, Int, TraitError, validate
from traitlets.config import LoggingConfigurable

from jupyter_agent.core.events.types import RunEnd, RunStart
from jupyter_agent.core.loop.runstate import Ceilings
from jupyter_agent.core.turns import RunSummary, TurnRecord
from jupyter_agent.exceptions import NotFound, RunCancelled
from jupyter_agent.runtime.ids import new_id, now_iso
from jupyter_agent.runtime.loop.driver import RunConfig, RunDriver, RunServices
from jupyter_agent.runtime.runs import log_sync as logsync
from jupyter_agent.runtime.runs.opening import ActiveRun, NextRun, Opening, open_run, unstart
from jupyter_agent.runtime.runs.records import (
    durable_call,
    ended_by,
    log_facts,
    minimal_turn,
    store_call,
)
from jupyter_agent.runtime.runs.recovery import queued_by_chat, recover_runs

__all__ = ["ActiveRun", "BreakState", "RunManager"]

log = logging.getLogger(__name__)

BreakState = Literal["breaking", "ended"]

_DEFAULT = Ceilings()
_RECALL_TRAITS = {
    "recall",
    "recall_k",
    "recall_budget_tokens",
    "recall_threshold",
    "recall_timeout_ms",
}
_NOT_CEILINGS = (
    logsync.LOG_SYNC_TRAITS
    | {"chunk_turns", "l2_chunks", "program_step_timeout_s"}
    | _RECALL_TRAITS
)


def _trait(kind: Callable[..., Any], default: Any, help_: str, **kw: Any) -> Any:
    """A config trait of the manager (``c.RunManager.<name>``)."""
    return kind(default, help=help_, **kw).tag(config=True)


def _ceiling(kind: Callable[..., Any], name: str, what: str, **kw: Any) -> Any:
    """A ceiling trait: :class:`Ceilings`' default, help ``Ceiling: <what>.``."""
    return _trait(kind, getattr(_DEFAULT, name), f"Ceiling: {what}.", **kw)


class RunManager(LoggingConfigurable):
    """Owns the runs of one server (see the module docstring).

    ``run_config(agent, owner=owner)`` gives the snapshot each new run of a chat of that
    agent and owner starts with (its ``ceilings`` are usually this manager's
    :attr:`ceilings`; the chat's agent and owner are read once per chat); effect logs go
    in ``runs_dir``.
    The ceiling traits are given as keyword arguments or through ``config`` / ``parent``;
    so are the effect logs' sync traits (``log_sync``: :mod:`~jupyter_agent.runtime.runs.log_sync`).
    """

    max_model_calls = _ceiling(
        Int, "max_model_calls", "model calls in one run before the agent must wrap up", min=0
    )
    max_cells = _ceiling(
        Int, "max_cells", "cells run in one run before the agent must wrap up", min=0
    )
    max_wall_s = _ceiling(
        Float, "max_wall_s", "wall-clock seconds of one run before the agent must wrap up"
    )
    max_cost_usd = _ceiling(
        Float, "max_cost_usd", "model cost of one run in USD before the agent must wrap up"
    )
    cell_timeout_s = _trait(
        Float,
        _DEFAULT.cell_timeout_s,
        "Seconds one cell (or bash command) may run before it is interrupted.",
    )
    model_deadline_s = _trait(
        Float, 300.0, "Deadline in seconds of one model call, retries included."
    )
    bash_enabled = _trait(
        Bool,
        _DEFAULT.bash_enabled,
        "Offer the bash tool to the model (commands run on the kernel's host).",
    )
    history_budget_tokens = _trait(
        Int,
        _DEFAULT.history_budget_tokens,
        "Tokens of the chat's earlier turns a run starts with (at most a quarter of the "
        "model's context window; older turns are left out).",
        min=0,
    )
    value_budget_tokens = _trait(
        Int,
        _DEFAULT.value_budget_tokens,
        "Tokens one printed or last value may take in a cell's digest; a longer one "
        "becomes a stub naming the call that returns it whole.",
        min=1,
    )
    total_budget_tokens = _trait(
        Int,
        _DEFAULT.total_budget_tokens,
        "Tokens one cell's digest (what the model reads of it) may take in all.",
        min=1,
    )

    log_sync = logsync.log_sync_trait()
    log_sync_interval_ms = logsync.log_sync_interval_trait()
    # The chunk layout of chats' history (issue 14; not ceilings: runs read it as
    # ``history_layout``). A change applies to new summaries; stored ones are kept.
    chunk_turns = _trait(Int, 10, "Turns per level-1 chunk of a chat's history.", min=1)
    l2_chunks = _trait(Int, 5, "Level-1 chunks per level-2 chunk of the history.", min=2)
    # Autorecall (issue 15; runs read them with the memory categories, ``config.get
    # memory``): before a run's first model call, memory and earlier chats are searched
    # for the message and the best hits shown to the model.
    recall = _trait(
        Bool, True, "Recall memories and earlier chats relevant to each message (autorecall)."
    )
    recall_k = _trait(Int, 5, "The most hits autorecall shows the model.", min=0)
    recall_budget_tokens = _trait(
        Int, 800, "Tokens the recalled hits may take in the prompt, in all.", min=0
    )
    recall_threshold = _trait(
        Float,
        0.3,
        "The least score (0 to 1: the share of the message's rare terms a hit covers) a "
        "recalled hit needs; nothing is shown when no hit reaches it.",
        min=0.0,
        max=1.0,
    )
    recall_timeout_ms = _trait(
        Int,
        250,
        "How long autorecall's search may take (it runs before the first model call, so "
        "its time is time to first token); past it the run goes on without recall.",
        min=1,
    )

    # A deployed program's step deadline (issue 16; not a ceiling: the driver's).
    program_step_timeout_s = _trait(
        Float,
        10.0,
        "Seconds a deployed program's step (between two effects) may compute before the "
        "watchdog stops it and its run ends with an error.",
    )

    @validate(
        "max_wall_s", "max_cost_usd", "cell_timeout_s", "model_deadline_s", "program_step_timeout_s"
    )
    def _validate_positive(self, proposal: Mapping[str, Any]) -> float:
        """Durations and budgets must be positive."""
        value = float(proposal["value"])
        if not value > 0:
            raise TraitError(
                f"{type(self).__name__}.{proposal['trait'].name} must be > 0, not {value}"
            )
        return value

    @property
    def recall_settings(self) -> dict[str, Any]:
        """Autorecall's settings of a new run (``RunConfig.recall``): the recall traits."""
        return {
            "enabled": bool(self.recall),
            "k": int(self.recall_k),
            "budget_tokens": int(self.recall_budget_tokens),
            "threshold": float(self.recall_threshold),
        }

    @property
    def ceilings(self) -> dict[str, Any]:
        """The ``ceilings`` config value of a new run: each ceiling trait's value."""
        traits = RunManager.class_own_traits(config=True)
        return {name: getattr(self, name) for name in traits if name not in _NOT_CEILINGS}

    def __init__(
        self,
        *,
        services: RunServices,
        run_config: Callable[..., RunConfig],
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
        self._locks: dict[str, asyncio.Lock] = {}  # chat id -> its sends and hand-overs
        self._agents: dict[str, str] = {}  # chat id -> its agent (it never changes)
        self._owners: dict[str, str] = {}  # chat id -> its owner (read with its agent)
        self._stopping = False
        self._retries: set[asyncio.Task[None]] = set()
        self._syncer = logsync.ServerSyncer()

    # --- queries ---------------------------------------------------------------------

    def active_run_id(self, chat_id: str) -> str | None:
        """The id of the chat's run in progress, if any."""
        run = self._active.get(chat_id)
        return run.run_id if run else None

    def run_chat(self, run_id: str) -> str | None:
        """The chat of a run going or reserved here (none stored yet for a reserved one),
        or None."""
        for chat_id, run in self._active.items():
            if run.run_id == run_id:
                return chat_id
        for chat_id, nxt in self._next.items():
            if nxt.run_id == run_id:
                return chat_id
        return None

    def log_path(self, run_id: str) -> Path:
        """Where the run's effect log lives."""
        return self.runs_dir / f"{run_id}.jsonl"

    # --- commands --------------------------------------------------------------------

    async def send(
        self,
        chat_id: str,
        *,
        text: str,
        view: dict[str, Any] | None = None,
        attachments: Sequence[dict[str, Any]] = (),
    ) -> dict[str, Any]:
        """Store a user message, then route it; start a run unless one is going.

        ``{run_id, routed, message_id}``: the message's id travels with it (its mailbox item's
        ``id``, the ``message_id`` of its ``run_start`` or ``steering`` event and step).
        Raises StoreError (StoreUnavailable when a retry may cure it) when the message
        could not be stored: then it was not taken, and nothing is left behind.
        """
        message_id = new_id("msg")
        item: dict[str, Any] = {"kind": "message", "text": text, "at": now_iso(), "id": message_id}
        if view:
            item["view"] = view
        if attachments:
            item["attachments"] = list(attachments)
        async with self._lock(chat_id):
            active = self._active.get(chat_id)
            if active is None:
                # Mail a failed start left behind goes first, as it came first (and the run
                # it was promised to, if any, is the one that starts).
                mailbox = self.services.mailbox
                items = [i for i in mailbox.drain(chat_id) if i.get("kind") != "break"]
                nxt = self._next.get(chat_id)
                earlier = [*items, *(nxt.items if nxt else ())]
                try:
                    run_id = await self._start(
                        chat_id, [*earlier, item], run_id=nxt.run_id if nxt else None, new=item
                    )
                except BaseException:
                    for left in items:
                        mailbox.put(chat_id, left)
                    raise
                self._reserved_started(chat_id, run_id)
                return {"run_id": run_id, "routed": "run", "message_id": message_id}
            if not await asyncio.to_thread(self.services.store.accept_message, chat_id, item):
                raise NotFound(f"no chat {chat_id[:120]}")
            # The run cannot have ended meanwhile (its end takes this lock), but it may
            # have closed: decided now, with no await until the message is placed.
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
            # A wait for the person ends now (not approved): the loop ends at its next drain.
            self.services.approvals.break_run(run_id)
        return "breaking"

    async def notify(self, chat_id: str, text: str) -> dict[str, Any]:
        """Queue a notice for the chat's agent (a proposal's outcome, ...): ``{kind:
        "notice", text, at, id}``, stored in the durable mailbox first (StoreError when it
        cannot be; NotFound for an unknown chat). It never starts a run: the chat's open
        run takes it at its next drain (``toolcaller@v5``; older programs leave it
        queued), else the next run at its opening drain. The turn that holds it (as a
        ``[notice] ...`` steering entry) has the durable mailbox forget it. Returns the item.
        """
        item: dict[str, Any] = {
            "kind": "notice",
            "text": text,
            "at": now_iso(),
            "id": new_id("ntc"),
        }
        async with self._lock(chat_id):
            if not await asyncio.to_thread(self.services.store.accept_message, chat_id, item):
                raise NotFound(f"no chat {chat_id[:120]}")
            active = self._active.get(chat_id)
            nxt = self._next.get(chat_id)
            if active is not None and active.closed and nxt is not None:
                nxt.items.append(item)  # after the messages that open the next run
            else:
                self.services.mailbox.put(chat_id, item)
        return item

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
                lock = self._lock(chat_id)
                if not lock.locked():
                    return
                # A hand-over (or a send starting a run) is under way: let it finish, then
                # look again (the run it starts is broken at once, being reserved).
                async with lock:
                    pass
                continue
            await active.driver.hard_break()
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                log.warning("the runs of chat %s did not stop within %s s", chat_id, timeout_s)
                return
            await asyncio.wait({active.task}, timeout=left)

    async def shutdown(self) -> None:
        """Hard-break every run and wait for them to end; no run starts after this.

        Store writes still retrying give up (the next start recovers them from the logs),
        and mail for reserved runs stays in the durable mailbox for the next start.
        """
        self._stopping = True  # from here no run starts: queued mail waits in the store
        for task in list(self._retries):
            task.cancel()
        for _ in range(10):
            for lock in list(self._locks.values()):
                if lock.locked():  # a send or a hand-over under way: let it finish
                    async with lock:
                        pass
            runs = list(self._by_run.values())
            if not runs:
                break
            for run in runs:
                await run.driver.hard_break()
            await asyncio.gather(*(r.task for r in runs), return_exceptions=True)
        await asyncio.to_thread(self._syncer.close)  # the runs' logs are closed (synced)

    async def recover(self) -> list[str]:
        """At a start: end the runs a crashed server left running (see
        :mod:`jupyter_agent.runtime.runs.recovery`; no cell is re-run), then start a run for
        each chat whose acknowledged messages no run took. Returns the recovered run ids.
        """
        store = self.services.store
        recovered = await recover_runs(store, self.log_path, skip=set(self._by_run))
        for chat_id, items in (await queued_by_chat(store)).items():
            async with self._lock(chat_id):
                if chat_id in self._active:
                    continue
                if not any(i.get("kind") == "message" for i in items):
                    for item in items:  # notices alone start no run: they wait for one
                        self.services.mailbox.put(chat_id, item)
                    continue
                try:
                    await self._start(chat_id, items)
                except Exception:
                    log.exception("could not start a run for the queued mail of %s", chat_id)
        return recovered

    # --- internals -------------------------------------------------------------------

    def _reserved(self, run_id: str) -> NextRun | None:
        for nxt in self._next.values():
            if nxt.run_id == run_id:
                return nxt
        return None

    def _lock(self, chat_id: str) -> asyncio.Lock:
        """The lock of the chat's sends and hand-overs (made at its first use)."""
        return self._locks.setdefault(chat_id, asyncio.Lock())

    async def _start(
        self,
        chat_id: str,
        items: list[dict[str, Any]],
        *,
        run_id: str | None = None,
        new: dict[str, Any] | None = None,
    ) -> str:
        """Start a run with ``items`` (its first message opens it); under the chat's lock.

        ``new``: the one item not stored yet (see :func:`open_run`).
        """
        agent = await self._agent_of(chat_id)
        owner = self._owners.get(chat_id, "")
        opening = await open_run(
            self.services,
            self._config(agent, owner=owner),
            self.log_path,
            chat_id,
            items,
            run_id=run_id,
            new=new,
            syncer=self._syncer.for_new_log(self.log_sync, self.log_sync_interval_ms),
            step_timeout_s=self.program_step_timeout_s,
            owner=owner,
        )
        try:
            self._launch(opening)
        except Exception:
            await unstart(self.services, opening.summary, new, opening.effect_log)
            raise
        # Queued only once the run exists (its first drain comes after this returns).
        for item in items:
            self.services.mailbox.put(chat_id, item)
        return opening.summary.run_id

    async def _agent_of(self, chat_id: str) -> str:
        """The chat's agent (read once from the store, then cached: it never changes).

        A chat the store does not know answers the default agent: the run's opening then
        finds it gone (NotFound) as before."""
        agent = self._agents.get(chat_id)
        if agent is None:
            read = getattr(self.services.store, "get_chat", None)
            if read is None:  # a store without agents (a test's stand-in): the default
                return "agent"
            chat = await asyncio.to_thread(read, chat_id)
            if chat is None:
                return "agent"
            agent = self._agents[chat_id] = str(chat.agent)
            # The chat's owner never changes either: the owner of every run of the chat.
            self._owners[chat_id] = str(getattr(chat, "owner", "") or "")
        return agent

    def _launch(self, opening: Opening) -> None:
        summary = opening.summary
        run_id, chat_id = summary.run_id, summary.chat_id
        driver = RunDriver(
            run_id=run_id,
            chat_id=chat_id,
            log_=opening.effect_log,
            config=opening.config,
            program=opening.program,
            agent=opening.summary.agent,
            step_timeout_s=self.program_step_timeout_s,
            services=self.services,
            cwd=opening.cwd,
            summary=summary,
        )
        # The opening message rides on run_start so every client shows it at once.
        self.services.events.publish(
            chat_id,
            run_id,
            RunStart(started=summary.started, text=opening.text, message_id=opening.message_id),
        )
        task = asyncio.get_running_loop().create_task(self._run(summary, driver))
        active = ActiveRun(run_id=run_id, chat_id=chat_id, driver=driver, task=task)
        self._active[chat_id] = active
        self._by_run[run_id] = active

    async def _run(self, summary: RunSummary, driver: RunDriver) -> None:
        """Run to the end; whatever happens, the run gets a turn, a summary and a successor."""
        store = self.services.store
        chat_id, run_id = summary.chat_id, summary.run_id
        turn: TurnRecord | None = None
        ended_at = summary.started
        written = False
        try:
            try:
                turn = await driver.run()
            except (Exception, RunCancelled):  # a bug must not wedge the chat: end the run
                log.exception("run %s failed", run_id)
            if turn is None and driver.stored_turn is not None:
                turn = driver.stored_turn  # stored, then the run failed (its log's close)
            if turn is None:
                facts = await asyncio.to_thread(log_facts, self.log_path(run_id))
                turn = minimal_turn(summary, "error", "error", facts)
            driver.take_deferred()
            delivered, left = driver.held_by(turn)
            if left:
                # Mail this run took that its turn does not hold (a hard break took it
                # after the loop's last read, or the run failed): the next run starts with it.
                nxt = self._next.setdefault(chat_id, NextRun(run_id=new_id("run")))
                nxt.items[:0] = left
            # The turn, the run's end summary and the chat's active run: one write.
            ended = driver.ended
            if ended is None:
                ended = ended_by(summary, turn, now_iso())
                written = await durable_call(
                    store.append_turn,
                    turn,
                    delivered=delivered,
                    ended=ended,
                    stopping=lambda: self._stopping,
                )
                # Else left "running" on purpose: the next start writes the turn from the log.
                ended_at = (ended.ended or ended_at) if written else ended_at
            else:
                written, ended_at = True, ended.ended or ended_at
        finally:
            await self._hand_over(summary, turn, ended_at, cleared=written)

    async def _hand_over(
        self, summary: RunSummary, turn: TurnRecord | None, at: str, *, cleared: bool
    ) -> None:
        """The run is gone: publish its end and start the next run of its chat, if any.

        ``cleared``: the end's write already cleared the chat's active run in the store.
        """
        chat_id, run_id = summary.chat_id, summary.run_id
        async with self._lock(chat_id):
            # Under the chat's lock: a message sent now waits, then finds this run gone
            # (and starts its own) or the next run started below.
            self._active.pop(chat_id, None)
            self._by_run.pop(run_id, None)
            if turn is not None:
                self.services.events.publish(
                    chat_id,
                    run_id,
                    RunEnd(
                        stop_reason=turn.llm.stop_reason,
                        end_cause=turn.llm.end_cause,
                        turn=turn.to_json(),
                    ),
                )
            self.services.events.end_run(chat_id, run_id)  # its events join the bounded tail
            self.services.after_turn(chat_id)  # summaries it made due: in the background
            # At a stop no run starts (queued mail waits in the store for the next start).
            started = not self._stopping and await self._start_next(chat_id)
            if not started and not cleared:
                await store_call(
                    self.services.store.touch_chat, chat_id, now=at, active_run_id=None
                )

    async def _start_next(self, chat_id: str) -> bool:
        """Start the run reserved after the one that just ended, if any (under the chat's
        lock). True if started; on a failure its mail stays reserved for it (the same run
        id) and a retry is scheduled."""
        mailbox = self.services.mailbox
        mailbox.drop_breaks(chat_id)
        # Left over from a run that ended without draining them (a bug or a failed start):
        # they go first, as they came first.
        items = mailbox.drain(chat_id)
        nxt = self._next.get(chat_id)
        if nxt is not None:
            items.extend(nxt.items)
        if not any(i.get("kind") == "message" for i in items):
            if nxt is not None:
                self._next.pop(chat_id, None)
                nxt.started.set()
            for item in items:  # notices wait for the next run; they never start one
                if item.get("kind") == "notice":
                    mailbox.put(chat_id, item)
            return False
        try:
            new_run = await self._start(chat_id, items, run_id=nxt.run_id if nxt else None)
        except Exception:
            log.exception("could not start the next run of %s", chat_id)
            if nxt is None:
                nxt = self._next[chat_id] = NextRun(run_id=new_id("run"))
            nxt.items = items  # kept (and stored): a retry or the next message starts them
            if not self._stopping:
                asyncio.get_running_loop().call_later(2.0, self._retry_start, chat_id)
            return False
        self._reserved_started(chat_id, new_run)
        return True

    def _reserved_started(self, chat_id: str, run_id: str) -> None:
        """The chat's reserved run (if any) has started as ``run_id``."""
        nxt = self._next.pop(chat_id, None)
        if nxt is not None:
            if nxt.hard_break:
                self._by_run[run_id].driver.request_hard_break()
            nxt.started.set()

    def _retry_start(self, chat_id: str) -> None:
        """Try again to start a reserved run whose start failed."""

        async def retry() -> None:
            async with self._lock(chat_id):
                if chat_id not in self._active and not self._stopping:
                    await self._start_next(chat_id)

        if not self._stopping and chat_id in self._next and chat_id not in self._active:
            task = asyncio.ensure_future(retry())
            self._retries.add(task)
            task.add_done_callback(self._retries.discard)
