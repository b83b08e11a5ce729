"""A chat's runs from start to hand-over: start one, run it to its end, start the next.

:meth:`RunStarts.start` opens a run (:func:`~jupyter_agent.runtime.runs.opening.open_run`),
launches its driver as a task and queues its mail; :meth:`RunStarts.finish` (the task)
creates the run's effect log (after the message's acknowledgement: a log that cannot be
created ends the run ``error`` with a turn holding its messages) and runs the driver to
its end, and whatever happens the run gets a turn, a summary and a
successor: its turn and end summary are written in one store write
(:func:`~jupyter_agent.runtime.runs.records.durable_call`, unless its ``turn.append``
stored them), its end is published, and the run reserved after it (if any) starts, with
the mail its turn does not hold first. Every step that touches a chat's slot runs under
the chat's lock (see :mod:`.slots`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from jupyter_agent.core.events.types import RunEnd, RunStart
from jupyter_agent.core.turns import RunSummary, TurnRecord
from jupyter_agent.exceptions import RunCancelled
from jupyter_agent.runtime.ids import now_iso
from jupyter_agent.runtime.loop.driver import RunDriver
from jupyter_agent.runtime.loop.phase import RunLifecycle, RunPhase
from jupyter_agent.runtime.runs.mailbox import MailItem, MessageItem, NoticeItem, item_from_json
from jupyter_agent.runtime.runs.opening import MessageWrites, Opening, open_run, unstart
from jupyter_agent.runtime.runs.parts import RunConfig, RunServices
from jupyter_agent.runtime.runs.records import (
    LogFacts,
    durable_call,
    ended_by,
    log_facts,
    minimal_turn,
    store_call,
)
from jupyter_agent.runtime.runs.slots import ActiveRun, ChatSlot, ChatSlots, NextRun
from jupyter_agent.trace.log import GroupSyncer

__all__ = ["RunStarts"]

log = logging.getLogger("jupyter_agent.runtime.runs.manager")


class RunStarts:
    """Starts and hands over the runs of the run manager's chats (see the module docstring)."""

    def __init__(
        self,
        services: RunServices,
        slots: ChatSlots,
        *,
        writes: MessageWrites,
        run_config: Callable[..., RunConfig],
        log_path: Callable[[str], Path],
        new_syncer: Callable[[], GroupSyncer | None],
        step_timeout_s: Callable[[], float],
        stopping: Callable[[], bool],
    ) -> None:
        """The callables read the manager's settings at each start (they may change)."""
        self.services = services
        self.slots = slots
        self.writes = writes
        self._config = run_config
        self._log_path = log_path
        self._new_syncer = new_syncer
        self._step_timeout_s = step_timeout_s
        self._stopping = stopping
        self.retries: set[asyncio.Task[None]] = set()

    async def start(
        self,
        slot: ChatSlot,
        items: Sequence[MailItem],
        *,
        new: MessageItem | None = None,
        reserved: NextRun | None = None,
        title: str | None = None,
    ) -> str:
        """Start a run with ``items`` (its first message opens it); under the chat's lock.

        ``new``: the one item not stored yet, ``title``: the chat's title to store with it
        if it has none (see :func:`open_run`). ``reserved``: the run
        reserved for these items, which starts now (with its id; broken at once if a break
        was asked for it). Returns the run's id.
        """
        agent, model = await self._chat_of(slot)
        opening = await open_run(
            self.services,
            self._config(agent, owner=slot.owner, model=model),
            self._log_path,
            slot.chat_id,
            items,
            writes=self.writes,
            run_id=reserved.run_id if reserved else None,
            new=new,
            title=title,
            syncer=self._new_syncer(),
            step_timeout_s=self._step_timeout_s(),
            owner=slot.owner,
            # The send under way read it with the chat, for the run it starts (``new``).
            activations=slot.activations if new is not None else None,
        )
        lifecycle = reserved.lifecycle if reserved else RunLifecycle(opening.summary.run_id)
        try:
            active, broken = self._launch(slot, opening, lifecycle)
        except Exception:
            await unstart(self.services, opening.summary, new, opening.effect_log)
            raise
        # Queued only once the run exists (its first drain comes after this returns).
        for item in items:
            self.services.mailbox.put(slot.chat_id, item)
        if reserved is not None:
            self.slots.unreserve(slot)
        if broken:  # asked while it was reserved: it starts (its turn holds its mail) broken
            active.driver.request_hard_break()
        return active.run_id

    async def _chat_of(self, slot: ChatSlot) -> tuple[str, str | None]:
        """The chat's agent and model: as the last message sent here read them (the chat
        service reads the chat for each message: :meth:`ChatSlots.know`), else read from
        the store once (a run started at the server's start). A run answers with the
        chat's model as of the message that started it (or of the last one sent here).

        A chat the store does not know answers the default agent: the run's opening then
        finds it gone (NotFound) as before."""
        if slot.agent is None:
            read = getattr(self.services.store, "get_chat", None)
            if read is None:  # a store without agents (a test's stand-in): the default
                return "agent", None
            chat = await asyncio.to_thread(read, slot.chat_id)
            if chat is None:
                return "agent", None
            # Its agent and owner never change: those of every run of the chat.
            self.slots.know(
                slot.chat_id, agent=str(chat.agent), owner=str(getattr(chat, "owner", "") or ""),
                model=getattr(chat, "model", None),
            )  # fmt: skip
        return slot.agent or "agent", slot.model

    def _launch(
        self, slot: ChatSlot, opening: Opening, lifecycle: RunLifecycle
    ) -> tuple[ActiveRun, bool]:
        """Make the run's driver and task, and its slot's active run; (that run, whether a
        break was asked while it was reserved). Its phase moves to ``OPEN`` last, once
        nothing here can fail."""
        summary = opening.summary
        driver = RunDriver(
            run_id=summary.run_id,
            chat_id=summary.chat_id,
            log_=opening.effect_log,
            config=opening.config,
            program=opening.program,
            agent=summary.agent,
            step_timeout_s=self._step_timeout_s(),
            services=self.services,
            cwd=opening.cwd,
            summary=summary,
            lifecycle=lifecycle,
        )
        # The opening message rides on run_start so every client shows it at once.
        self.services.events.publish(
            summary.chat_id,
            summary.run_id,
            RunStart(started=summary.started, text=opening.text, message_id=opening.message_id),
        )
        task = asyncio.get_running_loop().create_task(self.finish(summary, driver))
        broken = lifecycle.reserved and lifecycle.move("start") is RunPhase.BREAK_ASKED
        active = ActiveRun(run_id=summary.run_id, chat_id=summary.chat_id, driver=driver, task=task)
        self.slots.activate(slot, active)
        return active, broken

    async def finish(self, summary: RunSummary, driver: RunDriver) -> None:
        """Run to the end; whatever happens, the run gets a turn, a summary and a successor."""
        store = self.services.store
        turn: TurnRecord | None = None
        ended_at = summary.started
        written = False
        unlogged: list[str] | None = None
        try:
            try:
                # After the message's acknowledgement, before the run's first effect.
                await asyncio.to_thread(driver.log.open)
            except Exception:
                log.exception("run %s could not create its effect log", summary.run_id)
                turn, unlogged = self._unlogged(summary, driver)
            else:
                try:
                    turn = await driver.run()
                except (Exception, RunCancelled):  # a bug must not wedge the chat: end the run
                    log.exception("run %s failed", summary.run_id)
            stored = driver.stored
            if turn is None and stored is not None:
                turn = stored.turn  # stored, then the run failed (its log's close)
            if turn is None:
                facts = await asyncio.to_thread(log_facts, self._log_path(summary.run_id))
                turn = minimal_turn(summary, "error", "error", facts)
            driver.take_deferred()
            delivered, left = (unlogged, []) if unlogged is not None else driver.held_by(turn)
            if left:
                # Mail this run took that its turn does not hold (a hard break took it
                # after the loop's last read, or the run failed): the next run starts with it.
                nxt = self.slots.reserve(self.slots.slot(summary.chat_id))
                nxt.items[:0] = left
            # The turn, the run's end summary and the chat's active run: one write.
            ended = stored.ended if stored is not None else None
            if ended is None:
                ended = ended_by(summary, turn, now_iso())
                written = await durable_call(
                    store.append_turn,
                    turn,
                    delivered=delivered,
                    ended=ended,
                    stopping=self._stopping,
                )
                # Else left "running" on purpose: the next start writes the turn from the log.
                ended_at = (ended.ended or ended_at) if written else ended_at
            else:
                written, ended_at = True, ended.ended or ended_at
        finally:
            await self._hand_over(summary, turn, ended_at, cleared=written)

    def _unlogged(self, summary: RunSummary, driver: RunDriver) -> tuple[TurnRecord, list[str]]:
        """A run whose effect log could not be created ran nothing: it ends ``error`` with
        a turn holding every message answered with its id (those it opened with, those
        queued for it since), and their ids, so no acknowledged message is lost or starts
        run after failing run. Notices stay queued for the next run."""
        driver.inbox.close()  # from here a message is for the next run
        mailbox, chat_id = self.services.mailbox, summary.chat_id
        taken = [*driver.take_deferred(), *(i.to_json() for i in mailbox.drain(chat_id))]
        messages = [m for m in taken if m.get("kind") == "message"]
        for notice in (m for m in taken if m.get("kind") == "notice"):
            if (item := item_from_json(notice)) is not None:
                mailbox.put(chat_id, item)
        turn = minimal_turn(summary, "error", "error", LogFacts(messages=messages))
        return turn, [str(m["id"]) for m in messages if m.get("id")]

    async def _hand_over(
        self, summary: RunSummary, turn: TurnRecord | None, at: str, *, cleared: bool
    ) -> None:
        """The run is gone: publish its end and start the next run of its chat, if any.

        ``cleared``: the end's write already cleared the chat's active run in the store.
        """
        chat_id, run_id = summary.chat_id, summary.run_id
        slot = self.slots.slot(chat_id)
        async with slot.lock:
            # Under the chat's lock: a message sent now waits, then finds this run gone
            # (and starts its own) or the next run started below.
            self.slots.deactivate(slot)
            events = self.services.events
            if turn is not None:
                end = RunEnd(
                    stop_reason=turn.llm.stop_reason,
                    end_cause=turn.llm.end_cause,
                    turn=turn.to_json(),
                )
                events.publish(chat_id, run_id, end)
            events.end_run(chat_id, run_id)  # its events join the bounded tail
            self.services.after_turn(chat_id)  # summaries it made due: in the background
            # At a stop no run starts (queued mail waits in the store for the next start).
            started = not self._stopping() and await self.start_next(slot)
            if not started and not cleared:
                await store_call(
                    self.services.store.touch_chat, chat_id, now=at, active_run_id=None
                )

    async def start_next(self, slot: ChatSlot) -> bool:
        """Start the run reserved after the one that just ended, if any (under the chat's
        lock). True if started; on a failure its mail stays reserved for it (the same run
        id) and a retry is scheduled."""
        mailbox, chat_id = self.services.mailbox, slot.chat_id
        mailbox.drop_breaks(chat_id)
        # Left over from a run that ended without draining them (a bug or a failed start):
        # they go first, as they came first.
        items = mailbox.drain(chat_id)
        nxt = slot.next
        if nxt is not None:
            items.extend(nxt.items)
        if not any(isinstance(i, MessageItem) for i in items):
            self.slots.unreserve(slot)
            for item in items:  # notices wait for the next run; they never start one
                if isinstance(item, NoticeItem):
                    mailbox.put(chat_id, item)
            return False
        try:
            await self.start(slot, items, reserved=nxt)
        except Exception:
            log.exception("could not start the next run of %s", chat_id)
            self.slots.reserve(slot).items = items  # kept (and stored): a retry or a message
            if not self._stopping():
                asyncio.get_running_loop().call_later(2.0, self._retry, slot)
            return False
        return True

    def _retry(self, slot: ChatSlot) -> None:
        """Try again to start a reserved run whose start failed."""

        async def retry() -> None:
            async with slot.lock:
                if slot.active is None and not self._stopping():
                    await self.start_next(slot)

        if not self._stopping() and slot.next is not None and slot.active is None:
            task = asyncio.ensure_future(retry())
            self.retries.add(task)
            task.add_done_callback(self.retries.discard)

    def cancel_retries(self) -> None:
        """Give up the retries scheduled (a stop: the next start recovers their mail)."""
        for task in list(self.retries):
            task.cancel()
