"""Regenerate the recorded scenarios the deploy smoke test drives programs against
(``jupyter_agent/programs/scenarios/*.jsonl``; by hand, not run by the test suite)::

    JA_MAKE_SCENARIOS=1 python -m pytest tests/programs/make_scenarios.py -q

- ``toolcaller.jsonl``: a real ``toolcaller@v6`` run (the run manager, the driver, a real
  agent kernel, the scripted fake model on loopback): one message, a cell, a done reply;
- ``history.jsonl``: a real ``history@v1`` run (the history scheduler over five stored
  turns): one summary.

The runs happen under a fixed root (:data:`ROOT`), so the logs name no machine's paths.
``tests/programs/test_scenarios.py`` checks the shipped files replay identically with the
built-in versions, so they never go stale.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.core.turns import Reply, TurnLLM, TurnRecord
from jupyter_agent.llm.transport import Transport
from jupyter_agent.runtime.history.jobs import HistoryScheduler
from jupyter_agent.runtime.ids import new_id, now_iso
from jupyter_agent.runtime.runs.parts import RunConfig
from jupyter_agent.runtime.settings.spaces import load_spaces
from jupyter_agent.store.repo import Store
from tests.runtime.harness import close_harness, make_harness

SCENARIOS = Path(__file__).resolve().parents[2] / "jupyter_agent" / "programs" / "scenarios"
ROOT = Path("/tmp/jupyter-agent-scenario")
MODEL = "claude-sonnet-4-5"

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.skipif(not os.environ.get("JA_MAKE_SCENARIOS"), reason="set JA_MAKE_SCENARIOS=1"),
]


def _scrub(log: Path, target: Path) -> None:
    """Copy ``log`` to ``target`` with this machine's paths (the package's folder, the
    Python prefix, the home folder) replaced by neutral ones, as in tests/golden."""
    text = log.read_text(encoding="utf-8")
    package = str(Path(__file__).resolve().parents[2])
    for real, neutral in (
        (package, "/srv/jupyter-agent"),
        (sys.prefix, "/opt/python"),
        (str(Path.home()), "/home/user"),
    ):
        text = text.replace(f'"{real}/', f'"{neutral}/').replace(f'"{real}"', f'"{neutral}"')
    target.write_text(text, encoding="utf-8")


def _fresh_root(name: str) -> Path:
    root = ROOT / name
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    return root


async def test_make_toolcaller(fake_provider: Any, kernel_manager: Any) -> None:
    root = _fresh_root("toolcaller")
    fake = fake_provider(
        [
            {"text": "Let me compute it.", "cells": ["total = sum(range(10))\nprint(total)"]},
            {"text": "The sum of 0..9 is **45**."},
        ]
    )
    harness = await make_harness(root, fake, kernel_manager)
    try:
        chat = harness.new_chat("scenario")
        turn = await harness.ask(chat, "What is the sum of the numbers 0 to 9?")
        assert turn.llm.end_cause == "done"
        assert turn.llm.cells == 1
        _scrub(harness.manager.log_path(turn.run_id), SCENARIOS / "toolcaller.jsonl")
    finally:
        await close_harness(harness)


async def test_make_history(fake_provider: Any) -> None:
    root = _fresh_root("history")
    fake = fake_provider({"steps": [{"text": "- the numbers were noted"}], "repeat": True})
    store = Store(f"sqlite:///{root / 'agent.sqlite'}")
    spaces = load_spaces(data_dir=root / "data", root_dir=root)
    tier = {"provider": "fake", "model": MODEL, "base_url": fake.base_url}
    scheduler = HistoryScheduler(
        store=store,
        transport=Transport(retry_after_cap_s=1),
        run_config=lambda agent="agent", owner="": RunConfig(
            tiers={"codegen": tier}, ceilings={}, spaces=spaces
        ),
        runs_dir=root / "runs",
        chunk_turns=5,
        l2_chunks=5,
    )
    try:
        chat_id = store.create_chat(chat_id=new_id("chat"), title="t", now=now_iso()).id
        for n in range(1, 6):
            store.append_turn(
                TurnRecord(
                    id=new_id("turn"),
                    chat_id=chat_id,
                    run_id=new_id("run"),
                    user_text=f"message {n}: remember the number {n * 111}",
                    replies=(Reply(text=f"reply {n}: noted {n * 111}", done=True),),
                    created=f"2026-01-01T00:00:{n:02d}.000Z",
                    model=MODEL,
                    llm=TurnLLM(stop_reason="done", end_cause="done"),
                )
            )
        scheduler.kick(chat_id)
        await asyncio.wait_for(scheduler.idle(), 30)
        runs, _ = store.list_runs(program="history")
        assert len(runs) == 1
        _scrub(root / "runs" / f"{runs[0].run_id}.jsonl", SCENARIOS / "history.jsonl")
    finally:
        await scheduler.stop()
        await scheduler.transport.aclose()
        store.close()
