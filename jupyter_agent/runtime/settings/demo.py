"""The offline demo model: the scripted fake provider, served in-process on loopback.

When no tier can run (no provider configured, or its key missing: ``agent/status`` says
``demo: true``), runs use the demo tier instead of failing: one
:class:`~jupyter_agent.llm.fake.server.FakeProvider` on ``127.0.0.1`` (port 0), started on first
use, answering the shipped script ``jupyter_agent/demo/demo_script.json`` in a loop. Its
model is named :data:`DEMO_MODEL` everywhere (status, turn records, traces), so a demo reply
is never mistaken for a real model's. It needs only the standard library and IPython.

The script has three steps (a bubble and a cell, a second cell, the final reply) and is
played per turn (``per_turn``): every run starts at its first step, whatever other chats
are doing, so concurrent demo runs never interleave. It says plainly that it does not read
the question, and how to connect a real model.
"""

from __future__ import annotations

import threading
from importlib import resources
from typing import TYPE_CHECKING, Any, Final

from jupyter_agent.core.demo import DEMO_MODEL

if TYPE_CHECKING:
    from jupyter_agent.llm.fake.server import FakeProvider

__all__ = ["DEMO_MODEL", "DEMO_PROFILE", "DemoModel", "demo_script"]

#: The demo model's profile (``llm.profile.jupyter-agent-demo``): native tools, free.
DEMO_PROFILE: Final[dict[str, Any]] = {
    "name": DEMO_MODEL,
    "context_window": 200_000,
    "max_output": 4096,
    "prompt_style": "markdown",
    "tool_mode": "native",
    "vision": False,
    "price_in": 0.0,
    "price_out": 0.0,
    "price_cache_read": 0.0,
    "price_cache_write": 0.0,
}


def demo_script() -> str:
    """The shipped demo script (JSON text; see ``docs/fake-script.md``)."""
    return (resources.files("jupyter_agent.demo") / "demo_script.json").read_text("utf-8")


class DemoModel:
    """Owns the demo's fake provider: started on first :meth:`tier`, stopped by :meth:`stop`.

    Thread-safe; starting is fast (a loopback socket and a thread).
    """

    def __init__(self) -> None:
        self._fake: FakeProvider | None = None
        self._lock = threading.Lock()

    @property
    def running(self) -> bool:
        """True while the demo provider serves."""
        return self._fake is not None

    def tier(self) -> dict[str, Any]:
        """The codegen tier that talks to the demo provider (started if needed)."""
        with self._lock:
            if self._fake is None:
                # Imported here: a server with a real model never loads the fake provider.
                from jupyter_agent.llm.fake.server import FakeProvider

                self._fake = FakeProvider(demo_script()).start()
            base_url = self._fake.base_url
        return {"provider": "fake", "model": DEMO_MODEL, "base_url": base_url}

    @staticmethod
    def profiles() -> dict[str, dict[str, Any]]:
        """``RunConfig.profiles`` for demo runs (no unknown-model warning, prices 0)."""
        return {DEMO_MODEL: dict(DEMO_PROFILE)}

    def stop(self) -> None:
        """Stop the demo provider (a later :meth:`tier` starts a new one)."""
        with self._lock:
            fake, self._fake = self._fake, None
        if fake is not None:
            fake.stop()
