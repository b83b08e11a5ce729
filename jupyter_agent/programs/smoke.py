"""The deploy smoke test: drive a program against the world of a recorded scenario.

The scenario is a real run's effect log the package ships
(``jupyter_agent/programs/scenarios/<family>.jsonl``: a ``toolcaller@v6`` run with a cell
and a done reply; a ``history@v1`` summary run). :class:`SmokeWorld` answers each effect
by name from the scenario's results of that name, in order (``config.get`` by its
``key``; ``toolcaller@v7``'s ``config.get start`` and an older version's separate keys
answer one another: :meth:`SmokeWorld._bridge_start`); when a name's queue runs out its
last result repeats; a name the scenario never
had gets an error result ``{"type": "SmokeWorld", "message": ...}`` (an unknown
``config.get`` key answers None, as the driver does).

The program must only yield :class:`~jupyter_agent.effects.Effect` values of the
catalogue, end within :data:`MAX_EFFECTS` effects and return what its family returns (a
toolcaller a TurnRecord, after a last ``turn.append``; history a HistoryOutcome). Every
step runs in a thread of its own under the watchdog (:data:`STEP_S` per step,
:data:`TOTAL_S` in all). Anything else raises ProgramRefused naming the file and line.
Blocking: run it in a worker thread.
"""

from __future__ import annotations

import contextlib
import time
import traceback
from collections import defaultdict
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any, Final

from jupyter_agent.core.history.answer import HistoryWindow
from jupyter_agent.core.history.program import HistoryOutcome
from jupyter_agent.core.loop.start import START_KEY, Findable, StartAnswer
from jupyter_agent.core.mcp.catalogue import McpCatalogue
from jupyter_agent.core.memory.program import MemoryConfig
from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.effects import (
    EFFECT_NAMES,
    RECALL_SEARCH,
    TURN_APPEND,
    Effect,
    EffectGen,
    Result,
)
from jupyter_agent.exceptions import ProgramRefused, ProgramStuck
from jupyter_agent.programs.watchdog import call_with_deadline
from jupyter_agent.trace.log import TraceFile, pair_effects, read_log

__all__ = ["MAX_EFFECTS", "STEP_S", "TOTAL_S", "SmokeWorld", "scenario", "smoke", "where"]

#: A step (one ``send``) that yields nothing for this long is refused ...
STEP_S: Final = 5.0
#: ... and so is a smoke test longer than this in all.
TOTAL_S: Final = 10.0
#: At most this many effects.
MAX_EFFECTS: Final = 500
_RETURNS: Final = {"toolcaller": TurnRecord, "history": HistoryOutcome}


def scenario(family: str) -> TraceFile:
    """The recorded scenario the package ships for ``family``."""
    path = resources.files("jupyter_agent") / "programs" / "scenarios" / f"{family}.jsonl"
    return read_log(str(path))


class SmokeWorld:
    """Answers effects from a scenario's results, by name (see the module docstring)."""

    def __init__(self, trace: TraceFile) -> None:
        self._queues: dict[str, list[tuple[Any, dict[str, Any] | None]]] = defaultdict(list)
        for effect in pair_effects(trace):
            if effect.parent is not None or effect.result is None:
                continue
            key = self._key(effect.name, effect.data)
            self._queues[key].append((effect.result.data, effect.result.error))
        self._bridge_start()
        self._used: dict[str, int] = defaultdict(int)
        self.seq = 0

    def _first(self, key: str) -> Any:
        queue = self._queues.get(key)
        return queue[0][0] if queue else None

    def _bridge_start(self) -> None:
        """One scenario for every version: ``toolcaller@v7``'s one ``config.get start``
        answered from an older scenario's separate keys (and what it searched: findable
        when it did), and an older program's keys from a v7 scenario's start answer."""
        start_key = f"config.get:{START_KEY}"
        if start_key in self._queues:
            view = StartAnswer.from_json(self._first(start_key)).config_view()
            for key, value in view.items():
                self._queues.setdefault(f"config.get:{key}", [(value, None)])
            return
        tier = self._first("config.get:llm.tier.codegen")
        if not isinstance(tier, dict):
            return  # not a toolcaller scenario
        model = tier.get("model")
        memory = MemoryConfig.from_json(self._first("config.get:memory"))
        searched = 1 if self._queues.get(RECALL_SEARCH) else 0
        history = self._first("config.get:history")
        answer = StartAnswer(
            ceilings=dict(self._first("config.get:ceilings") or {}),
            spaces=dict(self._first("config.get:spaces") or {}),
            tier=tier,
            profile=self._first(f"config.get:llm.profile.{model}"),
            history=HistoryWindow.from_json(history) if isinstance(history, dict) else None,
            memory=memory,
            mcp=McpCatalogue.from_json(self._first("config.get:mcp")),
            findable=Findable(memories=searched, turns=searched),
        )
        self._queues[start_key] = [(answer.to_json(), None)]

    @staticmethod
    def _key(name: str, data: Any) -> str:
        if name == "config.get" and isinstance(data, dict):
            return f"config.get:{data.get('key')}"
        return name

    def answer(self, effect: Effect) -> Result:
        """The next recorded result of this effect's name (the last one repeats)."""
        self.seq += 1
        key = self._key(effect.name, effect.data)
        queue = self._queues.get(key)
        if not queue:
            if effect.name == "config.get":
                return Result(seq=self.seq, name=effect.name, data=None)
            error: dict[str, Any] = {
                "type": "SmokeWorld",
                "message": f"the smoke scenario has no {key} result",
            }
            return Result(seq=self.seq, name=effect.name, error=error)
        index = min(self._used[key], len(queue) - 1)
        self._used[key] += 1
        data, recorded_error = queue[index]
        return Result(seq=self.seq, name=effect.name, data=data, error=recorded_error)


def where(exc: BaseException, folder: Path | None, default: str = "program.py") -> str:
    """``path line N`` of the innermost frame of ``exc`` in the program's ``folder``
    (``default`` when none is)."""
    if isinstance(exc, SyntaxError) and exc.filename and folder is not None:
        rel = _relative(exc.filename, folder)
        if rel is not None:
            return f"{rel} line {exc.lineno}"
    found = default
    if folder is not None:
        for frame in traceback.extract_tb(exc.__traceback__):
            rel = _relative(frame.filename, folder)
            if rel is not None:
                found = f"{rel} line {frame.lineno}"
    return found


def _relative(filename: str, folder: Path) -> str | None:
    try:
        return Path(filename).resolve().relative_to(folder.resolve()).as_posix()
    except ValueError:
        return None


def smoke(
    factory: Callable[[str, str], EffectGen[Any]],
    family: str,
    *,
    folder: Path | None = None,
    entry_file: str = "program.py",
    trace: TraceFile | None = None,
    step_s: float = STEP_S,
    total_s: float = TOTAL_S,
) -> Any:
    """Drive ``factory`` against ``family``'s scenario (or ``trace``); return what it
    returned. ProgramRefused (naming the file and line) on any failure."""
    trace = trace or scenario(family)
    world = SmokeWorld(trace)
    run_id = str(trace.header.get("run_id") or "run_smoke")
    chat_id = str(trace.header.get("chat_id") or "chat_smoke")
    started = time.monotonic()
    gen: EffectGen[Any] | None = None
    last_name = ""
    try:
        gen = _step(lambda: factory(run_id, chat_id), step_s, total_s, started, entry_file)
        answer: Result | None = None
        for count in range(MAX_EFFECTS + 1):
            if count == MAX_EFFECTS:
                raise ProgramRefused(
                    f"{entry_file}: more than {MAX_EFFECTS} effects in the smoke test"
                    " (an endless loop?)"
                )
            effect = _step(_advance(gen, answer), step_s, total_s, started, entry_file)
            if not isinstance(effect, Effect):
                raise ProgramRefused(
                    f"{entry_file}: yielded {type(effect).__name__}, not an Effect"
                )
            if effect.name not in EFFECT_NAMES:
                raise ProgramRefused(f"{entry_file}: yielded an unknown effect {effect.name!r}")
            last_name = effect.name
            answer = world.answer(effect)
    except StopIteration as stop:
        return _check_value(stop.value, family, last_name, entry_file)
    except (ProgramRefused, ProgramStuck):
        raise
    except BaseException as exc:  # SystemExit, KeyboardInterrupt too: the program's own
        raise ProgramRefused(
            f"{where(exc, folder, entry_file)}: the smoke test failed:"
            f" {type(exc).__name__}: {str(exc)[:300]}"
        ) from None
    finally:
        if gen is not None:
            # A program's own finally: not ours to judge; a stuck one is stopped.
            with contextlib.suppress(BaseException):
                call_with_deadline(gen.close, step_s)
    raise AssertionError("unreachable")  # pragma: no cover


def _advance(gen: EffectGen[Any], answer: Result | None) -> Callable[[], Any]:
    """The step that resumes ``gen`` with ``answer`` (the first step: ``next``)."""
    if answer is None:
        return lambda: next(gen)
    return lambda: gen.send(answer)


def _step(fn: Callable[[], Any], step_s: float, total_s: float, started: float, entry: str) -> Any:
    left = total_s - (time.monotonic() - started)
    if left <= 0:
        raise ProgramRefused(f"{entry}: the smoke test ran past {total_s:g} s")
    deadline = min(step_s, left)
    try:
        return call_with_deadline(fn, deadline, message=f"{entry}: no effect in time")
    except ProgramStuck:
        if deadline < step_s:
            raise ProgramRefused(f"{entry}: the smoke test ran past {total_s:g} s") from None
        raise ProgramRefused(f"{entry}: no effect for {step_s:g} s (an endless loop?)") from None


def _check_value(value: Any, family: str, last: str, entry: str) -> Any:
    wanted = _RETURNS[family]
    if not isinstance(value, wanted):
        raise ProgramRefused(
            f"{entry}: `program` returned {type(value).__name__}, not a {wanted.__name__}"
        )
    if family == "toolcaller" and last != TURN_APPEND:
        raise ProgramRefused(
            f"{entry}: the last effect must be turn.append (the turn record), not {last!r}"
        )
    return value
