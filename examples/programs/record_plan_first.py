"""Record ``plan_first/scenarios/plan_first.jsonl``: a real run of the example program.

    cd <clone> && PYTHONPATH=. python examples/programs/record_plan_first.py

The run is real but for the model: the run manager and driver of the package, a real agent
kernel (the ``jupyter-agent`` kernelspec, installed into a temporary Jupyter data dir), the
scripted fake provider on loopback (:data:`SCRIPT`) speaking the Anthropic wire, a SQLite
store in a temporary folder. The run's program is ``plan_first``'s entry point in place of
the built-in loop; the log's header names the program the driver wrote
(``toolcaller@v...``): a deploy replays a scenario with the version being deployed,
whatever version its header names (the scenario is part of the files the version's hash
covers, so it cannot name that hash itself).

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
    """Run :data:`MESSAGE` through ``plan_first`` in a new chat under ``root``; return the
    run's log path (AssertionError when the run did not end ``done``)."""
    from jupyter_client.multikernelmanager import AsyncMultiKernelManager

    from examples.programs.plan_first.program import program
    from jupyter_agent.cli import install_kernelspec
    from jupyter_agent.llm.fake import FakeProvider
    from jupyter_agent.runtime import driver
    from tests.runtime.harness import close_harness, make_harness

    install_kernelspec(user=True)
    manager = AsyncMultiKernelManager()
    fake = FakeProvider(SCRIPT).start()
    built_in = getattr(driver, "program")  # noqa: B009 - not in the module's __all__
    # The run's program: plan_first in place of the built-in loop (see the module docstring).
    setattr(driver, "program", lambda _name, run_id, chat_id: program(run_id, chat_id))  # noqa: B010
    try:
        harness = await make_harness(root, fake, manager)
        try:
            chat = harness.new_chat("plan first")
            turn = await harness.ask(chat, MESSAGE)
            assert turn.llm.stop_reason == "done", turn.llm
            assert fake.remaining == 0, "the script was not used up"
            return harness.manager.log_path(turn.run_id)
        finally:
            await close_harness(harness)
    finally:
        setattr(driver, "program", built_in)  # noqa: B010
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
