"""The watchdog stops a step that loops without yielding, even one catching Exception."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from jupyter_agent.exceptions import ProgramStuck
from jupyter_agent.programs.watchdog import call_with_deadline


def _spin() -> None:
    while True:
        pass


def _spin_catching() -> None:
    while True:
        try:  # noqa: SIM105 - the program's own guard must not swallow the watchdog's stop
            sum(range(100))
        except Exception:
            pass


def _spin_catching_base() -> None:
    caught = 0
    while True:
        try:
            while True:
                pass
        except BaseException:  # caught three times: the watchdog raises it again each time
            caught += 1
            if caught == 3:
                break
    while True:
        pass


@pytest.mark.parametrize("step", [_spin, _spin_catching, _spin_catching_base])
def test_sync_step_is_stopped(step: object) -> None:
    started = time.monotonic()
    with pytest.raises(ProgramStuck, match="endless"):
        call_with_deadline(step, 0.3, message="program.py: endless")  # type: ignore[arg-type]
    assert time.monotonic() - started < 8


def test_values_and_errors_pass_through() -> None:
    assert call_with_deadline(lambda: 41 + 1, 1.0) == 42
    with pytest.raises(ValueError, match="boom"):
        call_with_deadline(lambda: int("boom"), 1.0)


def test_quick_steps_never_get_a_late_stop() -> None:
    for _ in range(200):
        assert call_with_deadline(lambda: 1, 5.0) == 1
    time.sleep(0.1)


def test_a_step_worker_runs_every_step_in_one_thread_and_stops_a_stuck_one() -> None:
    import threading

    from jupyter_agent.programs.watchdog import StepWorker

    async def scenario() -> None:
        worker = StepWorker(name="test-steps")
        idents = {await worker.run(threading.current_thread, 2) for _ in range(50)}
        assert len(idents) == 1
        assert threading.current_thread() not in idents
        with pytest.raises(ValueError, match="boom"):
            await worker.run(lambda: (_ for _ in ()).throw(ValueError("boom")), 2)
        started = time.monotonic()
        with pytest.raises(ProgramStuck, match="stuck step"):
            await worker.run(_spin_catching, 0.3, message="stuck step")
        assert time.monotonic() - started < 3
        # A fresh thread after a stuck step: a late stop never lands in the next step.
        after = await worker.run(threading.current_thread, 2)
        assert after not in idents
        assert [await worker.run(lambda n=n: n * 2, 2) for n in range(3)] == [0, 2, 4]
        worker.close()

    asyncio.run(scenario())


def test_a_deployed_step_raising_systemexit_is_the_programs_fault() -> None:
    from jupyter_agent.effects import Effect
    from jupyter_agent.runtime.programs.guard import ProgramFailed, ProgramGuard, drive_program

    def program() -> Any:
        yield Effect(name="clock.now", data={})
        raise SystemExit(4)

    async def perform(effect: Effect) -> Any:
        from jupyter_agent.effects import Result

        return Result(seq=1, name=effect.name, data="2026-01-01T00:00:00Z")

    async def scenario() -> None:
        guard = ProgramGuard("toolcaller@v5#abc", None, elapsed=lambda: 0.0)
        with pytest.raises(ProgramFailed) as failed:
            await drive_program(program(), perform, guard, threaded=True, step_timeout_s=2)
        assert "SystemExit" in failed.value.reply

    asyncio.run(scenario())  # the loop survives: no SystemExit escapes
