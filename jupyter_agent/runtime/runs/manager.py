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

The chats' runs are kept in :mod:`.slots` (one slot per chat, its lock, its run and the
run reserved after it) and started and handed over by :mod:`.starts`.

Durability (the order every path keeps): a message is stored in the durable mailbox
(``agent_mail``) before it is acknowledged, with the run it opens (one commit, shared with
other chats': :class:`~.opening.MessageWrites`), and a store that cannot take it refuses it
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

from jupyter_agent.core.loop.runstate import Ceilings
from jupyter_agent.exceptions import NotFound
from jupyter_agent.runtime.ids import new_id, now_iso
from jupyter_agent.runtime.runs import log_sync as logsync
from jupyter_agent.runtime.runs.mailbox import BreakItem, MessageItem, NoticeItem, items_from_json
from jupyter_agent.runtime.runs.opening import MessageWrites
from jupyter_agent.runtime.runs.parts import RunConfig, RunServices
from jupyter_agent.runtime.runs.recovery import queued_by_chat, recover_runs
from jupyter_agent.runtime.runs.slots import ActiveRun, ChatSlot, ChatSlots
from jupyter_agent.runtime.runs.starts import RunStarts
from jupyter_agent.store.repo import MessageWrite

__all__ = ["ActiveRun", "BreakState", "RunManager"]

log = logging.getLogger(__name__)

BreakState = Literal["breaking", "ended"]

_DEFAULT = Ceilings()
_RECALL_TRAITS = {"recall", "recall_k", "recall_budget_tokens", "recall_threshold"}
_NOT_CEILINGS = logsync.LOG_SYNC_TRAITS | _RECALL_TRAITS | {"recall_timeout_ms"}
_NOT_CEILINGS |= {"chunk_turns", "l2_chunks", "program_step_timeout_s"}


def _trait(kind: Callable[..., Any], default: Any, help_: str, **kw: Any) -> Any:
    """A config trait of the manager (``c.RunManager.<name>``)."""
    return kind(default, help=help_, **kw).tag(config=True)


def _ceiling(kind: Callable[..., Any], name: str, what: str, **kw: Any) -> Any:
    """A ceiling trait: :class:`Ceilings`' default, help ``Ceiling: <what>.``."""
    return _trait(kind, getattr(_DEFAULT, name), f"Ceiling: {what}.", **kw)


class RunManager(LoggingConfigurable):
    """Owns the runs of one server (see the module docstring).

    ``run_config(agent, owner=owner, model=model)`` gives the snapshot each new run of a
    chat of that agent and owner (and model: the chat's own, or None) starts with (its
    ``ceilings`` are usually this manager's :attr:`ceilings`; the chat's agent and owner
    are read once per chat); effect logs go in ``runs_dir``.
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
    # Not ceilings: runs read the history's chunk layout as ``history_layout``.
    chunk_turns = _trait(Int, 10, "Turns per level-1 chunk of a chat's history.", min=1)
    l2_chunks = _trait(Int, 5, "Level-1 chunks per level-2 chunk of the history.", min=2)
    # Autorecall (read with the memory categories, ``config.get memory``).
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

    # A deployed program's step deadline (not a ceiling: the driver's).
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
        self.runs_dir = Path(runs_dir)
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self.slots = ChatSlots()  # one per chat: its lock, agent, owner, run, next run
        self._stopping = False
        self._syncer = logsync.ServerSyncer()
        self.writes = MessageWrites(getattr(services, "store", None))  # None: a test's manager
        self._starts = RunStarts(
            services,
            self.slots,
            writes=self.writes,
            run_config=run_config,
            log_path=self.log_path,
            new_syncer=lambda: self._syncer.for_new_log(self.log_sync, self.log_sync_interval_ms),
            step_timeout_s=lambda: float(self.program_step_timeout_s),
            stopping=lambda: self._stopping,
        )

    # --- queries ---------------------------------------------------------------------

    def active_run_id(self, chat_id: str) -> str | None:
        """The id of the chat's run in progress, if any."""
        slot = self.slots.get(chat_id)
        return slot.active.run_id if slot is not None and slot.active is not None else None

    def run_chat(self, run_id: str) -> str | None:
        """The chat of a run going or reserved here (none stored yet for a reserved one),
        or None."""
        slot = self.slots.of_run(run_id)
        return slot.chat_id if slot is not None else None

    def running_ids(self) -> list[str]:
        """The ids of the runs going now."""
        return self.slots.running_ids()

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
        title: str | None = None,
    ) -> dict[str, Any]:
        """Store a user message, then route it: start a run now (the chat has none), queue
        it in the open run's mailbox, or reserve the next run (the chat's run is closed).
        ``title``: the chat's, stored with the message if the chat has none yet.

        ``{run_id, routed, message_id}``: the message's id travels with it (its mailbox item's
        ``id``, the ``message_id`` of its ``run_start`` or ``steering`` event and step).
        Raises StoreError (StoreUnavailable when a retry may cure it) when the message
        could not be stored: then it was not taken, and nothing is left behind.
        """
        item = MessageItem(
            text=text,
            at=now_iso(),
            id=new_id("msg"),
            view=view or None,
            attachments=tuple(attachments),
        )
        slot = self.slots.slot(chat_id)
        async with slot.lock:
            if slot.active is None:
                run_id, routed = await self._start_now(slot, item, title), "run"
            else:
                await self._accept(chat_id, item, title)
                # The run cannot have ended meanwhile (its end takes this lock), but it may
                # have closed: decided now, with no await until the message is placed.
                if not slot.active.closed:
                    run_id, routed = self._queue(slot, slot.active, item), "mailbox"
                else:
                    run_id, routed = self._reserve_next(slot, item), "run"
        return {"run_id": run_id, "routed": routed, "message_id": item.id}

    async def _start_now(self, slot: ChatSlot, item: MessageItem, title: str | None) -> str:
        """The chat has no run: ``item`` starts one (stored with it). Mail a failed start
        left behind goes first, as it came first, and the run it was promised to, if any,
        is the one that starts."""
        mailbox = self.services.mailbox
        left = [i for i in mailbox.drain(slot.chat_id) if not isinstance(i, BreakItem)]
        nxt = slot.next
        items = [*left, *(nxt.items if nxt else ()), item]
        try:
            return await self._starts.start(slot, items, new=item, reserved=nxt, title=title)
        except BaseException:
            for leftover in left:
                mailbox.put(slot.chat_id, leftover)
            raise

    def _queue(self, slot: ChatSlot, active: ActiveRun, item: MessageItem) -> str:
        """The chat's run is open: ``item`` (stored) waits in its mailbox for its turn."""
        self.services.mailbox.put(slot.chat_id, item)
        return active.run_id

    def _reserve_next(self, slot: ChatSlot, item: MessageItem) -> str:
        """The chat's run is closed (its final reply is out, or it is stopping on request):
        ``item`` (stored) opens the next run, reserved now so the answer names it."""
        nxt = self.slots.reserve(slot)
        nxt.items.append(item)
        return nxt.run_id

    async def _accept(
        self, chat_id: str, item: MessageItem | NoticeItem, title: str | None
    ) -> None:
        """Store ``item`` in the durable mailbox (NotFound: no such chat)."""
        write = MessageWrite(chat_id=chat_id, item=item.to_json(), title=title, now=item.at)
        if not await self.writes.write(write):
            raise NotFound(f"no chat {chat_id[:120]}")

    async def break_run(self, run_id: str, *, hard: bool) -> BreakState | None:
        """Break a run: soft at its next drain, hard at once. None for an unknown run."""
        active = self.slots.active(run_id)
        reserved = self.slots.reserved(run_id)
        if active is None and reserved is not None:
            # Not started yet: it starts (so its turn holds its messages) and stops at once.
            # A soft break too: there is no step to wrap up before its first model call.
            reserved.lifecycle.move("hard_break")
            return "breaking"
        if active is None:
            exists = await asyncio.to_thread(self.services.store.get_run, run_id)
            return "ended" if exists is not None or self.log_path(run_id).exists() else None
        if hard:
            await active.driver.hard_break()
        else:
            active.lifecycle.move("soft_break")
            self.services.mailbox.put(active.chat_id, BreakItem(hard=False, at=now_iso()))
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
        item = NoticeItem(text=text, at=now_iso(), id=new_id("ntc"))
        slot = self.slots.slot(chat_id)
        async with slot.lock:
            await self._accept(chat_id, item, None)
            active, nxt = slot.active, slot.next
            if active is not None and active.closed and nxt is not None:
                nxt.items.append(item)  # after the messages that open the next run
            else:
                self.services.mailbox.put(chat_id, item)
        return item.to_json()

    async def wait(self, run_id: str) -> None:
        """Wait until the run (if in progress, or reserved) has ended."""
        reserved = self.slots.reserved(run_id)
        if reserved is not None:
            await reserved.started.wait()
        active = self.slots.active(run_id)
        if active is not None:
            await asyncio.shield(active.task)

    async def stop_chat(self, chat_id: str, *, timeout_s: float = 30) -> None:
        """Hard-break the chat's run and the runs reserved after it; wait until none is left.

        For deleting a chat: a reserved run still starts (so its turn holds its messages)
        but is broken at once, and nothing starts after it.
        """
        deadline = asyncio.get_running_loop().time() + timeout_s
        slot = self.slots.slot(chat_id)
        while True:
            if slot.next is not None:
                slot.next.lifecycle.move("hard_break")
            active = slot.active
            if active is None:
                lock = slot.lock
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
        self._starts.cancel_retries()
        for _ in range(10):
            for slot in self.slots:
                if slot.lock.locked():  # a send or a hand-over under way: let it finish
                    async with slot.lock:
                        pass
            runs = self.slots.running()
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
        recovered = await recover_runs(store, self.log_path, skip=set(self.running_ids()))
        for chat_id, queued in (await queued_by_chat(store)).items():
            items = items_from_json(queued)
            slot = self.slots.slot(chat_id)
            async with slot.lock:
                if slot.active is not None:
                    continue
                if not any(isinstance(i, MessageItem) for i in items):
                    for item in items:  # notices alone start no run: they wait for one
                        self.services.mailbox.put(chat_id, item)
                    continue
                try:
                    await self._starts.start(slot, items)
                except Exception:
                    log.exception("could not start a run for the queued mail of %s", chat_id)
        return recovered
