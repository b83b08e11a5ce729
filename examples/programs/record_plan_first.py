"""Record ``plan_first/scenarios/plan_first.jsonl``: a real run of the example program.

    cd <clone> && PYTHONPATH=. python examples/programs/record_plan_first.py

The run is real but for the model: the run manager and driver of the package, a real agent
kernel (the ``jupyter-agent`` kernelspec, installed into a temporary Jupyter data dir), the
scripted fake provider on loopback (:data:`SCRIPT`) speaking the Anthropic wire, a SQLite
store in a temporary folder, where ``plan_first`` is deployed (through the program service,
every deploy check included) as the server-wide ``toolcaller``. The folder is deployed
without its ``scenarios/``: the scenario is part of the files a version's hash covers, so
it cannot name that hash itself. Its header names that version (``toolcaller@v5#...``);
a deploy replays a scenario with the version being deployed, whatever version its header
names.

The script lives outside the program's folder on purpose: the folder is exactly what an
admin deploys.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FOLDER = HERE / "plan_first"
SCENARIO = FOLDER / "scenarios" / "plan_first.jsonl"

#: The fake model's answers: the plan, a cell, the final reply (each checks its request).
SCRIPT: list[dict[str, Any]] = [
    {
        "expect": {"last_user_contains": "numbered plan"},
        "text": (
            "1. Build the numbers 1 to 10 and square them.\n"
            "2. Add the squares up in one cell.\n"
            "3. Report the total."
        ),
    },
    {
        "expect": {"last_user_contains": "carry out the plan"},
        "text": "Steps 1 and 2 in one cell.",
        "cells": ["squares = [n * n for n in range(1, 11)]\nprint(sum(squares))"],
    },
    {
        "expect": {"last_user_contains": "385"},
        "text": "The sum of the squares of 1 to 10 is **385** (step 3: done).",
    },
]
#: The person's message.
MESSAGE = "What is the sum of the squares of the numbers 1 to 10?"


def _isolate() -> Path:
    """Jupyter's and IPython's folders under a new temp dir (nothing written to home)."""
    base = Path(tempfile.mkdtemp(prefix="plan-first-record-"))
    for name, sub in (
        ("JUPYTER_DATA_DIR", "data"),
        ("JUPYTER_CONFIG_DIR", "config"),
        ("JUPYTER_RUNTIME_DIR", "runtime"),
        ("IPYTHONDIR", "ipython"),
    ):
        os.environ[name] = str(base / sub)
    os.environ["JUPYTER_PLATFORM_DIRS"] = "1"
    return base


async def record(root: Path) -> Path:
    """Deploy ``plan_first`` (without its scenarios) to a new store under ``root``, run
    :data:`MESSAGE` in a new chat, return the run's log path (AssertionError when the run
    did not run the deployed version or did not end ``done``)."""
    from jupyter_client.multikernelmanager import AsyncMultiKernelManager

    from jupyter_agent.cli.main import install_kernelspec
    from jupyter_agent.llm.fake.server import FakeProvider
    from jupyter_agent.programs.files import read_source
    from jupyter_agent.programs.registry import ProgramRegistry
    from jupyter_agent.programs.service import ProgramService
    from tests.runtime.harness import close_harness, make_harness

    install_kernelspec(user=True)
    manager = AsyncMultiKernelManager()
    fake = FakeProvider(SCRIPT).start()
    try:
        harness = await make_harness(root, fake, manager)
        try:
            registry = ProgramRegistry(harness.store, cache_dir=root / "programs")
            harness.manager.services.programs = registry
            files = {
                path: text
                for path, text in read_source(FOLDER).items()
                if not path.startswith("scenarios/")
            }
            deployed = await ProgramService(harness.store, registry).deploy("toolcaller", files)
            chat = harness.new_chat("plan first")
            turn = await harness.ask(chat, MESSAGE)
            assert turn.llm.stop_reason == "done", turn.llm
            assert turn.programs is not None
            assert turn.programs[0] == deployed["active"], (turn.programs, deployed)
            assert fake.remaining == 0, "the script was not used up"
            return harness.manager.log_path(turn.run_id)
        finally:
            await close_harness(harness)
    finally:
        fake.stop()
        await manager.shutdown_all(now=True)


def main() -> int:
    """Record the scenario and copy it into the program's folder."""
    base = _isolate()
    try:
        log_path = asyncio.run(record(base / "run"))
        SCENARIO.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(log_path, SCENARIO)
        print(f"wrote {SCENARIO.relative_to(HERE.parent.parent)}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
