"""The watchdog: run a callable in a thread of its own and stop it when it runs too long.

A deployed program's step (``gen.send``) is plain Python that may loop forever without
yielding. :func:`call_with_deadline` (sync) and :func:`run_with_deadline` (async) run it in
a dedicated daemon thread; past ``deadline_s`` they raise
:class:`~jupyter_agent.exceptions.ProgramStuck` into that thread with
``PyThreadState_SetAsyncExc``, and again every :data:`REPEAT_S` until the callable returns
(a program that catches it once, or sits in ``try/except BaseException``, is hit again).
ProgramStuck is a BaseException: ``except Exception`` in the program does not swallow it.

Limits (CPython): the exception is delivered between bytecodes, so a step blocked inside
one long C call (``time.sleep(1e9)``, a lock's ``acquire``) is only stopped when that call
returns; after :data:`GIVE_UP_S` past the deadline the caller gets ProgramStuck anyway and
the thread is abandoned (a daemon: it cannot keep the process alive).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import threading
from collections.abc import Callable
from typing import Final, TypeVar

from jupyter_agent.exceptions import ProgramStuck

__all__ = ["GIVE_UP_S", "REPEAT_S", "call_with_deadline", "run_with_deadline"]

T = TypeVar("T")

#: How often ProgramStuck is raised again into a step that did not end.
REPEAT_S: Final = 0.5
#: How long past the deadline the caller waits for the thread before abandoning it.
GIVE_UP_S: Final = 5.0


class _Step:
    """One callable in its own daemon thread; :meth:`hit` raises ProgramStuck into it
    while it has not finished (never after: the flag and the raise share a lock, and an
    exception that arrives while the thread records its end is absorbed)."""

    def __init__(
        self, fn: Callable[[], object], name: str, wake: Callable[[], object] | None
    ) -> None:
        self.value: object = None
        self.error: BaseException | None = None
        self.done = threading.Event()
        self._fn = fn
        self._wake = wake
        self._lock = threading.Lock()
        self._finished = False
        self.thread = threading.Thread(target=self._body, name=name, daemon=True)
        self.thread.start()

    def _body(self) -> None:
        try:
            self.value = self._fn()
        except BaseException as exc:
            self.error = exc
        while True:  # a ProgramStuck raised just before the end lands here: absorb it
            try:
                with self._lock:
                    self._finished = True
                self.done.set()
                if self._wake is not None:
                    with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits
                        self._wake()
                return
            except ProgramStuck:
                continue

    def hit(self) -> None:
        """Raise ProgramStuck into the thread at its next bytecode (if still running)."""
        with self._lock:
            if not self._finished and self.thread.ident is not None:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(self.thread.ident), ctypes.py_object(ProgramStuck)
                )

    def result(self, message: str, stuck: bool) -> object:
        if stuck or isinstance(self.error, ProgramStuck):
            raise ProgramStuck(message)
        if self.error is not None:
            raise self.error
        return self.value


def call_with_deadline(
    fn: Callable[[], T],
    deadline_s: float,
    *,
    message: str = "no effect in time",
    name: str = "program-step",
) -> T:
    """Run ``fn()`` in a new thread and return its value (or raise what it raised).

    Past ``deadline_s`` seconds ProgramStuck is raised into the thread (again every
    :data:`REPEAT_S`) and, once the thread ends or :data:`GIVE_UP_S` later, here:
    ``ProgramStuck(message)``. Blocks the calling thread: never call it on an event loop.
    """
    step = _Step(fn, name, None)
    stuck = not step.done.wait(deadline_s)
    if stuck:
        _stop(step)
    return step.result(message, stuck)  # type: ignore[return-value]


def _stop(step: _Step, give_up_s: float = GIVE_UP_S) -> None:
    waited = 0.0
    while not step.done.is_set() and waited < give_up_s:
        step.hit()
        step.done.wait(REPEAT_S)
        waited += REPEAT_S


async def run_with_deadline(
    fn: Callable[[], T],
    deadline_s: float,
    *,
    message: str = "no effect in time",
    name: str = "program-step",
) -> T:
    """The async form of :func:`call_with_deadline`: the event loop waits without
    blocking (the thread wakes it when done). A cancelled caller leaves the step to the
    watchdog: it is stopped at its deadline as if somebody waited."""
    loop = asyncio.get_running_loop()
    finished = asyncio.Event()
    step = _Step(fn, name, lambda: loop.call_soon_threadsafe(finished.set))
    stuck = False
    try:
        await asyncio.wait_for(finished.wait(), deadline_s)
    except asyncio.TimeoutError:
        stuck = True
        waited = 0.0
        while not step.done.is_set() and waited < GIVE_UP_S:
            step.hit()
            await asyncio.sleep(REPEAT_S)
            waited += REPEAT_S
    except asyncio.CancelledError:
        threading.Thread(target=_reap, args=(step, deadline_s), daemon=True).start()
        raise
    return step.result(message, stuck)  # type: ignore[return-value]


def _reap(step: _Step, deadline_s: float) -> None:
    """Stop an abandoned step at its deadline (its caller was cancelled)."""
    if not step.done.wait(deadline_s):
        _stop(step, GIVE_UP_S * 4)
