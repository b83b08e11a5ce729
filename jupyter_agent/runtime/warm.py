"""What a server's first turn would otherwise load or build on the event loop, done in a
worker thread once the server listens (:func:`warm_first_turn`).

A first turn after a start took about 70-90 ms where the next took 25-35 ms: the model
call imported httpcore's asyncio backend and read the CA bundle (the first client's TLS
context), and pydantic built the encoders and decoders of about a dozen types at their
first use. None of it belongs on the start path (the server would answer later), nor on
the first turn's (each part blocked the event loop): so the server runs this beside, once
it listens. A turn that comes first waits on nothing: a module being imported is waited
for by Python's import lock, and anything else is built again at its use, as before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

from jupyter_agent import codec
from jupyter_agent.core.ceilings import Ceilings
from jupyter_agent.core.events.types import EVENTS
from jupyter_agent.core.memory.terms import preload as preload_stemmer
from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.llm.spec import HttpReply, RequestSpec
from jupyter_agent.llm.transport import Transport
from jupyter_agent.runtime.settings.packages import warm_kernel_packages
from jupyter_agent.store.rows import Chat

__all__ = ["DUMPED", "LOADED", "warm_first_turn"]

log = logging.getLogger(__name__)

#: The types a chat turn encodes (measured: every codec built during a server's first
#: turn), and every event type (a code turn's cell events too).
DUMPED: Final[tuple[Any, ...]] = (Chat, RequestSpec, HttpReply, TurnRecord, *EVENTS)
#: The types a turn decodes, with ``by_name`` as their readers pass it.
LOADED: Final[tuple[tuple[Any, bool], ...]] = (
    (Chat, True),
    (Ceilings, True),
    (RequestSpec, False),
    (HttpReply, False),
    (TurnRecord, False),
)


def _codecs() -> None:
    codec.warm(DUMPED, LOADED)


def warm_first_turn() -> None:
    """Load and build what the first turn needs (blocking: call it in a worker thread).
    Each part alone: one failing is logged and leaves the others warmed (the first turn
    then pays for it, as before)."""
    parts: tuple[Callable[[], None], ...] = (
        warm_kernel_packages,
        Transport.preload,
        preload_stemmer,
        _codecs,
    )
    for part in parts:
        try:
            part()
        except Exception:
            log.warning("warming %s failed", part.__qualname__, exc_info=True)
