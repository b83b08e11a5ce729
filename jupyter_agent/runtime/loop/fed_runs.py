"""The fed runs going on one server (reruns and eval cases): to break one, to stop a
deleted chat's, to stop them all when the server stops, and a cap on each owner's reruns.

A fed run (:func:`~.rerun.start_fed_run`) is no turn of a chat, so the run manager does
not know it: this registry does, from its start to its end.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any, Final

from jupyter_agent.exceptions import TooManyRequests
from jupyter_agent.runtime.loop.driver import RunDriver

__all__ = ["MAX_RERUNS", "Reruns"]

#: The most reruns one owner has going at once (eval cases are bounded by their eval).
MAX_RERUNS: Final = 8


class Reruns:
    """The fed runs going on this server (reruns, eval cases): their drivers (to break
    one) and tasks; at most :data:`MAX_RERUNS` reruns per owner at once."""

    def __init__(self) -> None:
        self._going: dict[str, tuple[RunDriver, asyncio.Task[Any]]] = {}
        self._starting: dict[str, int] = {}  # by owner: reruns between slot and add
        self._capped: set[str] = set()  # the runs counted in their owner's reruns

    @contextlib.contextmanager
    def slot(self, owner: str) -> Iterator[None]:
        """Hold one of ``owner``'s rerun slots while a rerun starts (until :meth:`add`):
        ``TooManyRequests`` (``too_many_reruns``) when all are taken, checked and taken
        with no await between, so two requests at once never both pass the last one."""
        going = sum(
            1 for r, (d, _t) in self._going.items() if r in self._capped and d.owner == owner
        )
        if going + self._starting.get(owner, 0) >= MAX_RERUNS:
            raise TooManyRequests(
                f"{MAX_RERUNS} reruns of yours are going: re-run again once one has ended",
                retry_after_s=5.0,
                reason="too_many_reruns",
            )
        self._starting[owner] = self._starting.get(owner, 0) + 1
        try:
            yield
        finally:
            self._starting[owner] -= 1
            if not self._starting[owner]:
                del self._starting[owner]

    async def stop_chat(self, chat_id: str) -> None:
        """Break the fed runs of chat ``chat_id`` (it is being deleted) and wait for them."""
        ids = [r for r, (driver, _t) in self._going.items() if driver.chat_id == chat_id]
        for run_id in ids:
            await self.break_run(run_id)
        tasks = [self._going[r][1] for r in ids if r in self._going]
        if tasks:
            await asyncio.wait(tasks, timeout=10)

    def add(
        self, run_id: str, driver: RunDriver, task: asyncio.Task[Any], *, capped: bool = True
    ) -> None:
        """A fed run started (``capped``: counted in its owner's reruns); forgotten when
        its task ends."""
        self._going[run_id] = (driver, task)
        if capped:
            self._capped.add(run_id)

        def gone(_task: asyncio.Task[Any]) -> None:
            self._going.pop(run_id, None)
            self._capped.discard(run_id)

        task.add_done_callback(gone)

    def __contains__(self, run_id: object) -> bool:
        return run_id in self._going

    async def break_run(self, run_id: str) -> str | None:
        """Stop the rerun at once (a rerun has no mail to stop at): ``"breaking"``, or
        None when it is not going."""
        going = self._going.get(run_id)
        if going is None:
            return None
        await going[0].hard_break()
        return "breaking"

    async def wait(self, run_id: str) -> None:
        """Return once the rerun has ended (at once when it is not going)."""
        going = self._going.get(run_id)
        if going is not None:
            await asyncio.shield(going[1])

    async def stop(self) -> None:
        """Break every rerun and wait for them (the server stops)."""
        for run_id in list(self._going):
            await self.break_run(run_id)
        tasks = [task for _d, task in self._going.values()]
        if tasks:
            await asyncio.wait(tasks, timeout=10)
