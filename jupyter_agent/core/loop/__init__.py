"""The ``toolcaller`` program: the pure state machine of a turn (:mod:`.machine`), what each
version does (:mod:`.features`), its steps, the run state, the inbox, the prompt, approvals
and the in-cell apps as data. Pure: no I/O;
imports core/ concerns, llm's chat call and the top-level contracts. Used by runtime/loop (the
driver), programs/ and deployed programs, which import ``setup``, ``step`` and ``end`` from here.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["Turn", "end", "program", "setup", "step"]


def __getattr__(name: str) -> Any:
    """The program API (``from jupyter_agent.core.loop import setup, step, end``), loaded on
    first use so that importing one module of this package never imports the machine."""
    if name in __all__:
        return getattr(importlib.import_module("jupyter_agent.core.loop.machine"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
