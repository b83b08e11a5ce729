"""An in-process agent for scenario tests: run manager, driver, real kernel, fake model.

Everything is real but the model, which is the scripted fake provider on loopback.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.llm.fake.server import FakeProvider
from jupyter_agent.llm.transport import Transport
from jupyter_agent.runtime.events import EventBus
from jupyter_agent.runtime.kernels.pool import KernelPool
from jupyter_agent.runtime.loop.driver import RunConfig, RunServices
from jupyter_agent.runtime.runs.mailbox import Mailbox
from jupyter_agent.runtime.runs.manager import RunManager
from jupyter_agent.runtime.settings.spaces import load_spaces
from jupyter_agent.store.repo import Store
from jupyter_agent.trace.log import TraceFile, read_log

MODEL = "claude-sonnet-4-5"


def final_text(turn: TurnRecord) -> str:
    """The text of the turn's final reply (``done`` true), or empty."""
    finals = [r.text for r in turn.replies if r.done]
    return finals[-1] if finals else ""


@dataclass
class Harness:
    """A run manager wired to real parts, plus helpers to drive and inspect runs."""

    fake: FakeProvider
    manager: RunManager
    store: Store
    events: EventBus
    root: Path
    ceilings: dict[str, Any] = field(default_factory=dict)
    spaces: dict[str, Any] = field(default_factory=dict)
    tier: dict[str, Any] | None = None
    profiles: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: ``{chunk_turns, l2_chunks}`` (None: RunConfig's default)
    history_layout: dict[str, int] | None = None
    #: autorecall's ``{enabled, k, budget_tokens, threshold}`` (None: RunConfig's default)
    recall: dict[str, Any] | None = None
    #: the ``recall.search`` deadline (None: RunConfig's default)
    recall_timeout_ms: int | None = None

    def config(
        self, agent: str = "agent", *, owner: str = "", model: str | None = None
    ) -> RunConfig:
        tier = self.tier or {"provider": "fake", "model": MODEL, "base_url": self.fake.base_url}
        extra: dict[str, Any] = {}
        if self.history_layout is not None:
            extra["history_layout"] = self.history_layout
        if self.recall is not None:
            extra["recall"] = self.recall
        if self.recall_timeout_ms is not None:
            extra["recall_timeout_ms"] = self.recall_timeout_ms
        return RunConfig(
            tiers={"codegen": tier},
            ceilings=dict(self.ceilings),
            spaces=self.spaces,
            profiles=dict(self.profiles),
            agent=agent,
            **extra,
        )

    def new_chat(self, title: str = "test") -> str:
        from jupyter_agent.runtime.ids import new_id, now_iso

        chat = self.store.create_chat(chat_id=new_id("chat"), title=title, now=now_iso())
        return chat.id

    async def ask(self, chat_id: str, text: str, **kw: Any) -> TurnRecord:
        """Send a message, wait for its run to end, return the run's turn."""
        answer = await self.manager.send(chat_id, text=text, **kw)
        assert answer["routed"] == "run", answer
        return await self.finish(answer["run_id"])

    async def finish(self, run_id: str, timeout_s: float = 60) -> TurnRecord:
        await asyncio.wait_for(self.manager.wait(run_id), timeout_s)
        turn = self.store.get_turn_by_run(run_id)
        assert turn is not None, f"no turn for {run_id}"
        return turn

    async def wait_event(self, chat_id: str, type_: str, timeout_s: float = 30) -> dict[str, Any]:
        """The first kept event of ``type_`` in the chat (already published or to come)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for event in self.events.since(chat_id, 0):
                if event["type"] == type_:
                    return event
            await asyncio.sleep(0.02)
        raise AssertionError(f"no {type_} event within {timeout_s} s")

    async def wait_requests(self, n: int, timeout_s: float = 30) -> None:
        deadline = time.monotonic() + timeout_s
        while len(self.fake.requests) < n:
            assert time.monotonic() < deadline, f"the fake got {len(self.fake.requests)} requests"
            await asyncio.sleep(0.02)

    def trace(self, run_id: str) -> TraceFile:
        return read_log(self.manager.log_path(run_id))


async def make_harness(
    root: Path, fake: FakeProvider, kernel_manager: Any, *, store: Store | None = None
) -> Harness:
    """A harness over ``store`` (default: a new SQLite store in ``root``)."""
    store = store or Store(f"sqlite:///{root / 'agent.sqlite'}")
    events = EventBus()
    pool = KernelPool(kernel_manager, size=1)
    await pool.start()
    services = RunServices(
        transport=Transport(retry_after_cap_s=5),
        pool=pool,
        store=store,
        mailbox=Mailbox(),
        events=events,
        root_dir=str(root),
    )
    harness = Harness(fake=fake, manager=None, store=store, events=events, root=root)  # type: ignore[arg-type]
    harness.spaces = load_spaces(data_dir=root / "data", root_dir=root)
    harness.manager = RunManager(
        services=services, run_config=harness.config, runs_dir=root / "runs"
    )
    return harness


async def close_harness(harness: Harness) -> None:
    await harness.manager.shutdown()
    services = harness.manager.services
    await services.pool.stop()
    await services.transport.aclose()
    harness.store.close()
