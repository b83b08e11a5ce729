"""Programs deployed before the package was regrouped by concern still load and run.

A deployed program is stored with its files; its imports name the modules of the day it
was written (``jupyter_agent.core.loop_steps``, ``jupyter_agent.core.history_program``,
...). :mod:`jupyter_agent.programs.moved` answers each old name with the module that holds
its code now, so such a program loads through the registry (the path a run and a replay
take) and its generator yields the same effects as one written against today's names.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from jupyter_agent.core.loop import machine, steps
from jupyter_agent.effects import Effect
from jupyter_agent.programs import moved
from jupyter_agent.programs.files import content_hash
from jupyter_agent.programs.registry import ProgramRegistry
from jupyter_agent.store import Store
from jupyter_agent.store.program_store import ProgramRow

# Written as a program of the last batch was: every import by its old module name.
OLD_STYLE = {
    "program.py": (
        "from jupyter_agent.core.loop import Turn, end, setup, step\n"
        "from jupyter_agent.core.loop_steps import now\n"
        "from jupyter_agent.core import loop_steps\n"
        "import jupyter_agent.core.history_program as history_program\n"
        "from jupyter_agent.core.turns import TurnRecord\n"
        "\n"
        "SAME = (loop_steps.now is now, history_program.__name__, Turn, end, setup, step)\n"
        "\n"
        "def program(run_id, chat_id):\n"
        "    when = yield from now()\n"
        "    return when\n"
    )
}


@pytest.mark.parametrize(("old", "new"), sorted(moved.MOVED.items()))
def test_each_old_name_is_the_module_that_holds_its_code_now(old: str, new: str) -> None:
    moved.install()
    assert importlib.import_module(old) is importlib.import_module(new)


def test_every_old_module_file_is_gone_and_every_new_one_exists() -> None:
    package = Path(__file__).resolve().parents[2] / "jupyter_agent"
    for old, new in moved.MOVED.items():
        old_file = package.parent / (old.replace(".", "/") + ".py")
        new_file = package.parent / (new.replace(".", "/") + ".py")
        assert not old_file.exists(), old
        # an old name that is now a package (core.loop) re-exports instead of aliasing
        assert not (old_file.with_suffix("") / "__init__.py").exists(), old
        assert new_file.is_file(), new


def test_a_program_deployed_before_the_move_loads_and_runs(store: Store, tmp_path: Path) -> None:
    row = ProgramRow(name="toolcaller", hash=content_hash("toolcaller", OLD_STYLE), files=OLD_STYLE)
    added = store.add_program(row)
    store.activate("", "toolcaller", added.version, "ann")
    registry = ProgramRegistry(store, tmp_path / "programs")
    factory = registry.resolve("agent", "toolcaller").factory
    run = factory("run_1", "chat_1")
    effect = next(run)
    assert isinstance(effect, Effect)
    assert effect.name == "clock.now"
    module = sys.modules[factory.__module__]
    same_now, history_name, turn, end, setup, step = module.SAME
    assert same_now is True
    assert history_name == "jupyter_agent.core.history.program"
    assert (turn, end, setup, step) == (machine.Turn, machine.end, machine.setup, machine.step)
    assert module.loop_steps is steps
