"""The one runner of effect generators: the driver, in-cell app calls, replay and tests.

A pure computation (:data:`~jupyter_agent.effects.EffectGen`) yields effects and
receives results; whoever runs it supplies ``perform``, the only place I/O may happen.
:func:`drive` runs it with a plain function (replay, hand-driven tests);
:func:`drive_async` with a coroutine function (the driver, the app host). Both return what
the generator returns, let whatever ``perform`` or the generator raises propagate, and
close the generator in ``finally`` so its own ``finally`` blocks run on every exit.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from jupyter_agent.effects import Effect, EffectGen, Result

__all__ = ["drive", "drive_async"]

T = TypeVar("T")


def drive(gen: EffectGen[T], perform: Callable[[Effect], Result]) -> T:
    """Run ``gen`` to its end, answering each effect with ``perform(effect)``."""
    try:
        effect = next(gen)
        while True:
            effect = gen.send(perform(effect))
    except StopIteration as stop:
        value: T = stop.value
        return value
    finally:
        gen.close()


async def drive_async(gen: EffectGen[T], perform: Callable[[Effect], Awaitable[Result]]) -> T:
    """Run ``gen`` to its end, answering each effect with ``await perform(effect)``."""
    try:
        effect = next(gen)
        while True:
            effect = gen.send(await perform(effect))
    except StopIteration as stop:
        value: T = stop.value
        return value
    finally:
        gen.close()
