"""The one generator runner: return values, errors, and the generator always closed."""

from __future__ import annotations

import asyncio

import pytest

from jupyter_agent.core.loop.drive import drive, drive_async
from jupyter_agent.effects import Effect, EffectGen, Result

closed: list[str] = []


def program(n: int) -> EffectGen[int]:
    total = 0
    try:
        for i in range(n):
            result = yield Effect(name="clock.now", data={"i": i})
            total += int(result.data)
        return total
    finally:
        closed.append("closed")


def answer(effect: Effect) -> Result:
    return Result(seq=effect.data["i"], name=effect.name, data=effect.data["i"] * 10)


def test_drive_returns_what_the_generator_returns() -> None:
    assert drive(program(3), answer) == 30
    assert drive(program(0), answer) == 0


def test_drive_closes_the_generator_when_perform_raises() -> None:
    closed.clear()

    def boom(effect: Effect) -> Result:
        raise RuntimeError("performer failed")

    with pytest.raises(RuntimeError, match="performer failed"):
        drive(program(2), boom)
    assert closed == ["closed"]


def test_drive_async_matches_drive_and_closes_on_cancel() -> None:
    async def perform(effect: Effect) -> Result:
        await asyncio.sleep(0)
        return answer(effect)

    assert asyncio.run(drive_async(program(4), perform)) == 60

    closed.clear()

    async def cancelled() -> None:
        async def hang(effect: Effect) -> Result:
            await asyncio.sleep(30)
            raise AssertionError("unreachable")

        task = asyncio.ensure_future(drive_async(program(2), hang))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled())
    assert closed == ["closed"]
