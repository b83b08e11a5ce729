"""The guard around a program: what the host checks of every value it yields, and how
its steps run.

A program (built in or deployed) is a generator of effects. The host trusts none of it:

- every yielded value must be an :class:`~jupyter_agent.effects.Effect` whose name is in
  :data:`~jupyter_agent.effects.EFFECT_NAMES`;
- backstop ceilings, counted by the host whatever the program counts itself: model calls
  (``http.post``) past ``max_model_calls + 2``, cells (``cell.run`` + ``bash.run``) past
  ``max_cells + 1``, more than :data:`MAX_EFFECTS` effects, and the wall clock: past
  ``max_wall_s + 60`` s a program may make one more model call (its wrap-up), and a
  second one is the fault. The built-in loops never reach these: they check their own
  ceilings before each model call (the wall too) and wrap up with exactly one call, never
  run more than ``max_cells`` cells, and the graces cover the wrap-up's call;
- a program's own failure (it raised) is a fault too.

Every fault is a :class:`ProgramFailed` (a :class:`~jupyter_agent.exceptions.ProgramFault`)
naming the program (``toolcaller@v5#abc...``), with ``error`` ``{type, message}`` (what the
effect log's ``program_error`` line records) and :attr:`ProgramFailed.reply` (what the
person reads). Exceptions from performing an effect are not the program's and propagate as
they are (a hard break's cancellation among them).

Stepping (:func:`drive_program` async, :func:`drive_program_sync` for replay): a built-in
program steps inline (trusted, and the hot path: no thread hop); a deployed one steps
(``next``, ``send``, ``close``) in a thread of its own under a step deadline
(:class:`jupyter_agent.programs.watchdog.StepWorker`): past it ProgramStuck is raised
into the thread and the run ends (``ProgramStuck`` in the error), the event loop never
waiting on the program.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, TypeVar

from jupyter_agent.effects import BASH_RUN, CELL_RUN, EFFECT_NAMES, HTTP_POST, Effect, EffectGen
from jupyter_agent.effects import Result as EffectResult
from jupyter_agent.exceptions import ProgramFault, ProgramStuck, RunCancelled

__all__ = [
    "DEFAULT_STEP_TIMEOUT_S",
    "MAX_EFFECTS",
    "ProgramFailed",
    "ProgramGuard",
    "drive_program",
    "drive_program_sync",
    "failure_reply",
    "monotonic_elapsed",
    "unloadable",
]

T = TypeVar("T")

#: The most effects one run of a program may yield.
MAX_EFFECTS: Final = 20_000
#: Model calls past ``max_model_calls`` a program may make (the wrap-up's and one more).
MODEL_CALL_GRACE: Final = 2
#: Cells and commands past ``max_cells``.
CELL_GRACE: Final = 1
#: Seconds past ``max_wall_s`` before the wall backstop counts model calls.
WALL_GRACE_S: Final = 60.0
#: A deployed program's step deadline when none is configured.
DEFAULT_STEP_TIMEOUT_S: Final = 10.0

# Exceptions a program step may raise that are the host's, not the program's: asyncio's
# cancellation (a BaseException), a hard break surfacing through the loop, an interrupt.
_NOT_THE_PROGRAMS = (RunCancelled, KeyboardInterrupt, SystemExit, GeneratorExit)


def failure_reply(program: str, error: Mapping[str, Any]) -> str:
    """What the person reads when ``program`` failed with ``error`` ``{type, message}``."""
    kind, message = str(error.get("type", "")), str(error.get("message", ""))
    what = f"it {message}" if kind in ("ProgramFault", "ProgramStuck") else f"{kind}: {message}"
    return f"The program {program} failed: {what} (the run ended; the server is fine)"


class ProgramFailed(ProgramFault):
    """A program's run ended by a fault (see the module docstring): ``program`` its ref
    text, ``error`` ``{type, message}``; ``reply`` the text the person is shown."""

    def __init__(self, program: str, kind: str, message: str) -> None:
        super().__init__(f"{program} {message}" if _is_host(kind) else message, program=program)
        self.error: dict[str, str] = {"type": kind, "message": message}

    @property
    def reply(self) -> str:
        """The reply the host posts for this failure."""
        return failure_reply(self.program, self.error)

    @classmethod
    def raised(cls, program: str, err: BaseException) -> ProgramFailed:
        """The program raised ``err`` (a ProgramStuck: its step was stopped)."""
        if isinstance(err, ProgramFailed):
            return err
        if isinstance(err, ProgramStuck):
            return cls(program, "ProgramStuck", str(err) or "yielded no effect in time")
        return cls(program, type(err).__name__, str(err))


def unloadable(program: str, fault: ProgramFault) -> ProgramFailed:
    """A version that could not be loaded (the registry's ProgramFault) as its run's
    failure: "cannot be loaded: ImportError: ..." (the fault's text without the ref)."""
    message = str(fault).removeprefix(f"{program} ").removeprefix(f"{program}: ")
    return ProgramFailed(program, "ProgramFault", message)


def _is_host(kind: str) -> bool:
    return kind in ("ProgramFault", "ProgramStuck")


class ProgramGuard:
    """Checks each value one run of ``program`` yields (see the module docstring).

    ``ceilings``: the run's ceilings (``config.get ceilings``: max_model_calls, max_cells,
    max_wall_s; missing or bad values take :class:`~jupyter_agent.core.loop.runstate.Ceilings`'
    defaults). ``elapsed``: seconds since the run started (the driver's monotonic clock;
    replay's, the log's times).
    """

    __slots__ = (
        "_cells",
        "_effects",
        "_elapsed",
        "_late_calls",
        "_max_cells",
        "_max_effects",
        "_max_model_calls",
        "_model_calls",
        "_wall_s",
        "program",
    )

    def __init__(
        self,
        program: str,
        ceilings: Mapping[str, Any] | None,
        *,
        elapsed: Callable[[], float],
        max_effects: int = MAX_EFFECTS,
    ) -> None:
        self.program = program
        self._elapsed = elapsed
        self._max_model_calls = _number(ceilings, "max_model_calls", 40) + MODEL_CALL_GRACE
        self._max_cells = _number(ceilings, "max_cells", 60) + CELL_GRACE
        self._wall_s = _number(ceilings, "max_wall_s", 900.0) + WALL_GRACE_S
        self._max_effects = max_effects
        self._effects = self._model_calls = self._cells = self._late_calls = 0

    def fault(self, message: str) -> ProgramFailed:
        """A fault of this guard's program that the host found."""
        return ProgramFailed(self.program, "ProgramFault", message)

    def check(self, value: object) -> Effect:
        """``value`` as the effect to perform; ProgramFailed when it may not be."""
        if type(value) is not Effect and not isinstance(value, Effect):
            return self._not_an_effect(value)
        name = value.name
        if name not in EFFECT_NAMES:
            raise self.fault(f"yielded an unknown effect {name!r:.80}")
        self._effects += 1
        if self._effects > self._max_effects:
            raise self.fault(f"went past {self._max_effects} effects in one run")
        if name == HTTP_POST:
            self._model_calls += 1
            if self._model_calls > self._max_model_calls:
                raise self.fault(
                    f"went past {self._max_model_calls} model calls "
                    f"(max_model_calls + {MODEL_CALL_GRACE})"
                )
            if self._elapsed() > self._wall_s:
                self._late_calls += 1
                if self._late_calls > 1:
                    raise self.fault(
                        f"kept calling the model past {self._wall_s:g} s "
                        f"(max_wall_s + {WALL_GRACE_S:g})"
                    )
        elif name in (CELL_RUN, BASH_RUN):
            self._cells += 1
            if self._cells > self._max_cells:
                raise self.fault(
                    f"went past {self._max_cells} cells and commands (max_cells + {CELL_GRACE})"
                )
        return value

    def _not_an_effect(self, value: object) -> Effect:
        shown = type(value).__name__
        name = value.get("name") if isinstance(value, dict) else None
        if isinstance(name, str) and name not in EFFECT_NAMES:
            raise self.fault(f"yielded an unknown effect {name!r:.80}")
        raise self.fault(f"yielded a {shown}, not an effect")


def _number(ceilings: Mapping[str, Any] | None, key: str, default: float) -> Any:
    value = (ceilings or {}).get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return default
    return value


def monotonic_elapsed() -> Callable[[], float]:
    """Seconds since now, on the monotonic clock (the driver's wall for the guard)."""
    start = time.monotonic()
    return lambda: time.monotonic() - start


# --- stepping --------------------------------------------------------------------------


async def drive_program(
    gen: EffectGen[T],
    perform: Callable[[Effect], Awaitable[EffectResult]],
    guard: ProgramGuard,
    *,
    threaded: bool = False,
    step_timeout_s: float = DEFAULT_STEP_TIMEOUT_S,
) -> T:
    """Run ``gen`` to its end answering each (checked) effect with ``await perform``.

    ``threaded``: each step in a thread of its own under ``step_timeout_s`` (a deployed
    program); else inline. Returns what the program returns; raises ProgramFailed for the
    program's faults; what ``perform`` raises propagates. The generator is closed on
    every exit (in its thread, for a threaded one).
    """
    if not threaded:
        return await _drive_inline(gen, perform, guard)
    return await _drive_threaded(gen, perform, guard, step_timeout_s)


async def _drive_inline(
    gen: EffectGen[T], perform: Callable[[Effect], Awaitable[EffectResult]], guard: ProgramGuard
) -> T:
    program = guard.program
    try:
        try:
            value: Any = next(gen)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        except _NOT_THE_PROGRAMS:
            raise
        except Exception as err:
            raise ProgramFailed.raised(program, err) from err
        while True:
            result = await perform(guard.check(value))
            try:
                value = gen.send(result)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            except _NOT_THE_PROGRAMS:
                raise
            except Exception as err:
                raise ProgramFailed.raised(program, err) from err
    finally:
        gen.close()


_FIRST: Final = object()


def _advance(gen: EffectGen[Any], value: Any) -> tuple[bool, Any]:
    """One step of ``gen`` (``next`` for :data:`_FIRST`, else ``send``): (True, what it
    yielded) or (False, what it returned). StopIteration never leaves here: it must not
    cross a thread's result or a coroutine (where it would become a RuntimeError)."""
    try:
        return True, next(gen) if value is _FIRST else gen.send(value)
    except StopIteration as stop:
        return False, stop.value


def _stuck_message(step_timeout_s: float) -> str:
    return f"yielded no effect within {step_timeout_s:g} s (its step deadline)"


async def _drive_threaded(
    gen: EffectGen[T],
    perform: Callable[[Effect], Awaitable[EffectResult]],
    guard: ProgramGuard,
    step_timeout_s: float,
) -> T:
    from jupyter_agent.programs.watchdog import StepWorker

    program, stuck = guard.program, _stuck_message(step_timeout_s)
    # One thread for all the run's steps: a thread started per step cost ~1 ms each.
    worker = StepWorker(name=program)

    async def step(value: Any) -> tuple[bool, Any]:
        try:
            return await worker.run(lambda: _advance(gen, value), step_timeout_s, message=stuck)
        except RunCancelled:
            raise
        except BaseException as err:
            # In the worker thread nothing but the program raises: a SystemExit or
            # KeyboardInterrupt there is its own, and must never reach the event loop.
            raise ProgramFailed.raised(program, err) from err

    try:
        going, value = await step(_FIRST)
        while going:
            going, value = await step(await perform(guard.check(value)))
        return value  # type: ignore[no-any-return]
    finally:
        # Its finally blocks are the program's code too: under the deadline. The run's
        # outcome is already decided; a close that fails changes nothing.
        try:
            with contextlib.suppress(ProgramStuck, Exception):
                await worker.run(gen.close, step_timeout_s, message=stuck)
        finally:
            worker.close()


def drive_program_sync(
    gen: EffectGen[T],
    perform: Callable[[Effect], EffectResult],
    guard: ProgramGuard,
    *,
    threaded: bool = False,
    step_timeout_s: float = DEFAULT_STEP_TIMEOUT_S,
) -> T:
    """:func:`drive_program` with a plain ``perform`` (replay); ``threaded`` steps block
    this thread on :func:`~jupyter_agent.programs.watchdog.call_with_deadline` (never call
    it on an event loop)."""
    program, stuck = guard.program, _stuck_message(step_timeout_s)

    def run(fn: Callable[[], Any]) -> Any:
        if not threaded:
            return fn()
        from jupyter_agent.programs.watchdog import call_with_deadline

        return call_with_deadline(fn, step_timeout_s, message=stuck, name=program)

    def step(value: Any) -> tuple[bool, Any]:
        try:
            return run(lambda: _advance(gen, value))  # type: ignore[no-any-return]
        except _NOT_THE_PROGRAMS:
            raise
        except (ProgramStuck, Exception) as err:
            raise ProgramFailed.raised(program, err) from err

    try:
        going, value = step(_FIRST)
        while going:
            going, value = step(perform(guard.check(value)))
        return value  # type: ignore[no-any-return]
    finally:
        with contextlib.suppress(ProgramStuck, Exception):
            run(gen.close)
