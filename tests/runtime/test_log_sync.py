"""A real run under each ``RunManager.log_sync`` policy: which effects wait for the disk.

``effect``: every intent of an outside effect is fdatasynced before the effect starts.
``run`` (alias ``group``): only the run's end (``turn.append``) waits; the rest is synced by
the server's background syncer thread. Never on the event loop's thread.
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.effects import OUTSIDE_EFFECTS
from tests.runtime.harness import Harness, close_harness, make_harness

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def agent(tmp_path: Path, fake_provider: Any, kernel_manager: Any) -> AsyncIterator[Harness]:
    harness = await make_harness(tmp_path, fake_provider([]), kernel_manager)
    yield harness
    await close_harness(harness)


@pytest.mark.parametrize("policy", ["effect", "run", "group"])
async def test_which_intents_are_on_disk_before_their_effect(
    agent: Harness, policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    syncs: list[tuple[str, bool, str, int]] = []  # thread, on the loop's thread, file, lines
    real = getattr(os, "fdatasync", os.fsync)

    def datasync(fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        lines = len(Path(path).read_bytes().splitlines())
        thread = threading.current_thread()
        syncs.append((thread.name, thread is threading.main_thread(), path, lines))
        real(fd)

    monkeypatch.setattr(os, "fdatasync", datasync, raising=False)
    agent.manager.log_sync = policy
    agent.fake.load([{"text": "Let me compute.", "cells": ["print(6 * 7)"]}, {"text": "It is 42."}])
    turn = await agent.ask(agent.new_chat(), "What is 6 times 7?")
    assert turn.llm.end_cause == "done"
    log_path = str(agent.manager.log_path(turn.run_id))
    mine = [s for s in syncs if s[2] == log_path]
    assert not any(on_loop for _, on_loop, _, _ in mine), "an fdatasync on the event loop"
    # The file's line count right after each outside intent (line 1 is the header).
    lines = agent.trace(turn.run_id).lines
    outside = {
        line.name: index + 2
        for index, line in enumerate(lines)
        if line.phase == "intent" and line.name in OUTSIDE_EFFECTS
    }
    assert {"http.post", "cell.run", "chat.post", "turn.append"} <= set(outside)
    run_path = [n for thread, _, _, n in mine if thread != "effect-log-sync"]
    background = [n for thread, _, _, n in mine if thread == "effect-log-sync"]
    outside_at = sorted(
        index + 2
        for index, line in enumerate(lines)
        if line.phase == "intent" and line.name in OUTSIDE_EFFECTS
    )
    if policy == "effect":
        assert run_path == outside_at  # each one synced just before its effect, no other
        assert background == []
    else:
        assert run_path == [outside["turn.append"]]  # only the run's end waited
        assert background, "the group syncer never ran"
