"""The run manager's record of its chats: one :class:`ChatSlot` per chat, indexed by run id.

A chat's slot holds its lock (its sends and run-to-run hand-overs are serialised by it),
its agent and owner (read once: they never change), its run in progress
(:class:`ActiveRun`) and the run reserved after a closed one (:class:`NextRun`).
:class:`ChatSlots` keeps the index by run id in step with the slots: a run is found by
its id from the moment it is reserved or started until it has ended. Only its methods
change a slot's ``active`` or ``next``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field

from jupyter_agent.runtime.ids import new_id
from jupyter_agent.runtime.loop.driver import RunDriver
from jupyter_agent.runtime.loop.phase import RunLifecycle, RunPhase
from jupyter_agent.runtime.runs.mailbox import MailItem

__all__ = ["ActiveRun", "ChatSlot", "ChatSlots", "NextRun"]


@dataclass(kw_only=True)
class ActiveRun:
    """A run in progress: its driver (which holds its phase) and the task running it."""

    run_id: str
    chat_id: str
    driver: RunDriver
    task: asyncio.Task[None]

    @property
    def lifecycle(self) -> RunLifecycle:
        """The run's phase."""
        return self.driver.lifecycle

    @property
    def closed(self) -> bool:
        """True once new messages are for the next run (final reply posted, or broken)."""
        return not self.lifecycle.routed_here


@dataclass(kw_only=True)
class NextRun:
    """A run reserved for a chat whose current run is closed: it starts when that ends,
    with ``items`` (its phase goes to its driver then)."""

    run_id: str
    items: list[MailItem] = field(default_factory=list)
    lifecycle: RunLifecycle = field(init=False)
    started: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.lifecycle = RunLifecycle(self.run_id, RunPhase.RESERVED)

    @property
    def hard_break(self) -> bool:
        """True once a break was asked for before it started (it breaks at once then)."""
        return self.lifecycle.phase is RunPhase.BREAK_ASKED


@dataclass(kw_only=True)
class ChatSlot:
    """One chat as the run manager knows it (see the module docstring)."""

    chat_id: str
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    agent: str | None = None  # read from the store at its first run
    owner: str = ""
    model: str | None = None  # the chat's model as last read (it may change)
    #: The store's activation mark as the send under way read it (None between sends).
    activations: int | None = None
    active: ActiveRun | None = None
    next: NextRun | None = None


class ChatSlots:
    """The slots of the chats this server has run, and the index of their runs by id."""

    def __init__(self) -> None:
        self._slots: dict[str, ChatSlot] = {}
        self._by_run: dict[str, ChatSlot] = {}

    def slot(self, chat_id: str) -> ChatSlot:
        """The chat's slot (made at its first use)."""
        found = self._slots.get(chat_id)
        if found is None:
            found = self._slots[chat_id] = ChatSlot(chat_id=chat_id)
        return found

    def know(self, chat_id: str, *, agent: str, owner: str, model: str | None) -> None:
        """The chat's agent, owner and model as a caller just read them (the first two
        never change; the model is the chat's now): its next run's start need not read the
        chat again."""
        slot = self.slot(chat_id)
        if slot.agent is None:
            slot.agent, slot.owner = agent, owner
        slot.model = model

    def get(self, chat_id: str) -> ChatSlot | None:
        """The chat's slot, if it has one."""
        return self._slots.get(chat_id)

    def __iter__(self) -> Iterator[ChatSlot]:
        return iter(list(self._slots.values()))

    def of_run(self, run_id: str) -> ChatSlot | None:
        """The slot of the chat whose run (going or reserved) this is."""
        return self._by_run.get(run_id)

    def active(self, run_id: str) -> ActiveRun | None:
        """The run going with this id."""
        slot = self._by_run.get(run_id)
        run = slot.active if slot is not None else None
        return run if run is not None and run.run_id == run_id else None

    def reserved(self, run_id: str) -> NextRun | None:
        """The run reserved with this id."""
        slot = self._by_run.get(run_id)
        nxt = slot.next if slot is not None else None
        return nxt if nxt is not None and nxt.run_id == run_id else None

    def running(self) -> list[ActiveRun]:
        """Every run going now."""
        return [s.active for s in self._slots.values() if s.active is not None]

    def running_ids(self) -> list[str]:
        """The ids of the runs going now."""
        return [run.run_id for run in self.running()]

    def activate(self, slot: ChatSlot, run: ActiveRun) -> None:
        """``run`` is the chat's run in progress."""
        slot.active = run
        self._by_run[run.run_id] = slot

    def deactivate(self, slot: ChatSlot) -> None:
        """The chat's run in progress has ended: its phase moves to ``ENDED``."""
        run, slot.active = slot.active, None
        if run is not None:
            run.lifecycle.move("end")
            if self._by_run.get(run.run_id) is slot and not self._is_next(slot, run.run_id):
                del self._by_run[run.run_id]

    def reserve(self, slot: ChatSlot) -> NextRun:
        """The chat's reserved run (reserved now, with a new id, if none was)."""
        if slot.next is None:
            slot.next = NextRun(run_id=new_id("run"))
            self._by_run[slot.next.run_id] = slot
        return slot.next

    def unreserve(self, slot: ChatSlot) -> NextRun | None:
        """Take the chat's reserved run off the slot (it has started, or has nothing to
        start with); its waiters are woken."""
        nxt, slot.next = slot.next, None
        if nxt is not None:
            if self._by_run.get(nxt.run_id) is slot and not self._is_active(slot, nxt.run_id):
                del self._by_run[nxt.run_id]
            nxt.started.set()
        return nxt

    @staticmethod
    def _is_next(slot: ChatSlot, run_id: str) -> bool:
        return slot.next is not None and slot.next.run_id == run_id

    @staticmethod
    def _is_active(slot: ChatSlot, run_id: str) -> bool:
        return slot.active is not None and slot.active.run_id == run_id
