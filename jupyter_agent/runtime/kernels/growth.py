"""How many warm kernels the pool keeps, and the acquires waiting for one.

:class:`Demand` is the growth policy (pure: it is told the time). The pool keeps ``target``
kernels warm: ``size`` at rest; each acquire that found none warm (a run's cell had to wait
for a start) raises it by one, up to ``ceiling`` (``pool_max``), so a burst that emptied the
pool finds it deeper the next time; after ``idle_s`` with no acquire it falls back to
``size`` and the pool shuts the extra warm kernels down (an acquire still waiting for its
kernel is no idleness). Warm refills wait for a pause in acquires, but not for ever
(:meth:`Demand.refill_due`).

:class:`Waiters` is the queue of acquires waiting for a kernel: a kernel that becomes ready
goes to the oldest waiter still waiting, whichever start produced it, so a burst is served
by the kernels in the order they finish starting.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = ["MAX_DEFER_INTERVALS", "Demand", "Waiters"]

T = TypeVar("T")

#: Warm refills held back by a burst start anyway after this many liveness intervals.
MAX_DEFER_INTERVALS = 4


@dataclass
class Demand:
    """The warm target between ``size`` and ``ceiling`` (``size <= ceiling``)."""

    size: int
    ceiling: int
    idle_s: float
    target: int = field(init=False)
    last_acquire: float | None = field(default=None, init=False)
    #: Since when warm refills are held back (None: they are not).
    deferred_since: float | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.ceiling < self.size:
            raise ValueError(f"ceiling {self.ceiling} is below size {self.size}")
        self.target = self.size

    def acquired(self, now: float, *, waited: bool) -> None:
        """An acquire at ``now``; ``waited``: it found no warm kernel."""
        self.last_acquire = now
        if waited:
            self.target = min(self.ceiling, self.target + 1)

    def refill_due(self, now: float, *, warm: int, interval_s: float) -> bool:
        """Whether warm refills may start at ``now`` (``warm`` kernels are warm): after a
        pause of ``interval_s`` in acquires, or once they were held back for
        :data:`MAX_DEFER_INTERVALS` intervals. Call :meth:`refilling` when they start."""
        last = self.last_acquire
        # Warm refills wait for a pause in acquires (one liveness interval): two kernel
        # starts load both cores of a small machine for a second, which doubled the
        # latency of a burst's runs when they started amid it.
        quiet = last is None or now - last >= interval_s
        # ... but not for ever: under steady load (an acquire every interval) the pool
        # would never refill and every run would wait for a cold start.
        since = self.deferred_since
        starved = since is not None and now - since >= MAX_DEFER_INTERVALS * interval_s
        short = self.target > warm
        if short and not quiet and since is None:
            self.deferred_since = now
        if not short:
            self.deferred_since = None
        return quiet or starved

    def refilling(self) -> None:
        """Warm refills start now: no longer held back."""
        self.deferred_since = None

    def shrink(self, now: float, *, waiting: int) -> bool:
        """Fall back to ``size`` after ``idle_s`` without an acquire; True if it did.

        An acquire still ``waiting`` counts as one at ``now`` (a slow start is demand).
        """
        if waiting:
            self.last_acquire = now
            return False
        idle = self.last_acquire is None or now - self.last_acquire >= self.idle_s
        if self.target > self.size and idle:
            self.target = self.size
            return True
        return False


class Waiters(Generic[T]):
    """Acquires waiting for a kernel, oldest first (futures of the running loop)."""

    def __init__(self) -> None:
        self._queue: deque[asyncio.Future[T]] = deque()

    def __len__(self) -> int:
        """How many still wait (a cancelled acquire no longer counts)."""
        return sum(1 for f in self._queue if not f.done())

    def add(self) -> asyncio.Future[T]:
        """A new waiter's future, resolved by :meth:`give` or :meth:`fail`."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._queue.append(future)
        return future

    def give(self, item: T) -> bool:
        """Hand ``item`` to the oldest waiter; False if none waits (the caller keeps it)."""
        while self._queue:
            future = self._queue.popleft()
            if not future.done():
                future.set_result(item)
                return True
        return False

    def fail(self, exc: BaseException) -> bool:
        """Raise ``exc`` in the oldest waiter; False if none waits."""
        while self._queue:
            future = self._queue.popleft()
            if not future.done():
                future.set_exception(exc)
                return True
        return False
