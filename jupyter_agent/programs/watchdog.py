"""The watchdog: run a callable in a thread of its own and stop it when it runs too long.

A deployed program's step (``gen.send``) is plain Python that may loop forever without
yielding. :func:`call_with_deadline` runs it in a dedicated daemon thread (the deploy
checks, replay); :class:`StepWorker` runs the steps of one run one after another
in one long-lived thread (no thread start per step: the run's hot path). Past
``deadline_s`` they raise :class:`~jupyter_agent.exceptions.ProgramStuck` into that thread with
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
import queue
import threading
from collections.abc import Callable
from typing import Final, TypeVar

from jupyter_agent.exceptions import ProgramStuck

__all__ = ["GIVE_UP_S", "REPEAT_S", "StepWorker", "call_with_deadline"]

T = TypeVar("T")

#: How often ProgramStuck is raised again into a step that did not end.
REPEAT_S: Final = 0.5
#: How long past the deadline the caller waits for the thread before abandoning it.
GIVE_UP_S: Final = 5.0


class _Step:
    """One callable in its own daemon thread; :meth:`hit` raises ProgramStuck into it
    while it has not finished (never after: the flag and the raise share a lock, and an
    exception that arrives while the thread records its end is absorbed)."""

    def __init__(self, fn: Callable[[], object], name: str) -> None:
        self.value: object = None
        self.error: BaseException | None = None
        self.done = threading.Event()
        self._fn = fn
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
    step = _Step(fn, name)
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


_DONE: Final = "done"
_LATE: Final = "late"


class _Job:
    """One call handed to a :class:`StepWorker`; ``finish`` is idempotent (a ProgramStuck
    landing while the worker records the end makes it run again)."""

    def __init__(self, fn: Callable[[], object], wake: Callable[[], object]) -> None:
        self.fn = fn
        self.value: object = None
        self.error: BaseException | None = None
        self.done = threading.Event()
        self._wake = wake
        self._woken = False

    def finish(self) -> None:
        self.done.set()
        if not self._woken:
            self._woken = True
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits
                self._wake()


class StepWorker:
    """The steps of one run, each in the same daemon thread (started at the first step),
    each under a deadline (see the module docstring for what happens past it).

    ProgramStuck is only ever raised into the worker while a step of it runs (the current
    job and the raise share a lock); once a step has been stuck the worker is retired
    (its thread ends after its step; a late ProgramStuck there is absorbed) and the next
    step gets a fresh thread, so a late raise never lands in another step. :meth:`close`
    ends the thread; not thread-safe itself: one run's coroutine drives it.
    """

    def __init__(self, name: str = "program-steps") -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[_Job | None] | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._current: _Job | None = None

    def _start(self) -> None:
        jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._jobs = jobs
        self._thread = threading.Thread(
            target=self._loop, args=(jobs,), name=self._name, daemon=True
        )
        self._thread.start()

    def _loop(self, jobs: queue.SimpleQueue[_Job | None]) -> None:
        while True:
            try:
                job = jobs.get()
                if job is None:
                    return
                self._run(job)
            except ProgramStuck:  # raised late, after its step: absorbed
                continue

    def _run(self, job: _Job) -> None:
        with self._lock:
            self._current = job
        try:
            job.value = job.fn()
        except BaseException as exc:
            job.error = exc
        while True:
            try:
                with self._lock:
                    if self._current is job:
                        self._current = None
                job.finish()
                return
            except ProgramStuck:
                continue

    def _hit(self, job: _Job, thread: threading.Thread | None) -> None:
        with self._lock:
            if self._current is job and thread is not None and thread.ident is not None:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(thread.ident), ctypes.py_object(ProgramStuck)
                )

    def _retire(self) -> None:
        if self._jobs is not None:
            self._jobs.put(None)
        self._jobs = self._thread = None

    def close(self) -> None:
        """End the worker's thread (after the step it runs, if any)."""
        self._retire()

    async def run(
        self, fn: Callable[[], T], deadline_s: float, *, message: str = "no effect in time"
    ) -> T:
        """``fn()`` in the worker's thread; its value, or what it raised; past
        ``deadline_s`` ProgramStuck is raised into the step (again every
        :data:`REPEAT_S`) and, once it ends or :data:`GIVE_UP_S` later, here as
        ``ProgramStuck(message)``."""
        if self._jobs is None:
            self._start()
        loop = asyncio.get_running_loop()
        outcome: asyncio.Future[str] = loop.create_future()

        def resolve(marker: str) -> None:
            if not outcome.done():
                outcome.set_result(marker)

        job = _Job(fn, lambda: loop.call_soon_threadsafe(resolve, _DONE))
        thread = self._thread
        assert self._jobs is not None
        self._jobs.put(job)
        timer = loop.call_later(deadline_s, resolve, _LATE)
        try:
            marker = await outcome
        except asyncio.CancelledError:
            self._retire()
            threading.Thread(target=self._reap, args=(job, thread, deadline_s), daemon=True).start()
            raise
        finally:
            timer.cancel()
        if marker == _LATE and not job.done.is_set():
            self._retire()
            waited = 0.0
            while not job.done.is_set() and waited < GIVE_UP_S:
                self._hit(job, thread)
                await asyncio.sleep(REPEAT_S)
                waited += REPEAT_S
            raise ProgramStuck(message)
        if isinstance(job.error, ProgramStuck):
            raise ProgramStuck(message)
        if job.error is not None:
            raise job.error
        return job.value  # type: ignore[return-value]

    def _reap(self, job: _Job, thread: threading.Thread | None, deadline_s: float) -> None:
        """Stop an abandoned step at its deadline (its caller was cancelled)."""
        if job.done.wait(deadline_s):
            return
        waited = 0.0
        while not job.done.is_set() and waited < GIVE_UP_S * 4:
            self._hit(job, thread)
            job.done.wait(REPEAT_S)
            waited += REPEAT_S
