"""The scenarios the package ships (the deploy smoke test's worlds) are real runs of the
built-in defaults and replay identically with them: they never go stale. Regenerate them
with ``tests/programs/make_scenarios.py`` when a built-in's behaviour changes on purpose."""

from __future__ import annotations

from importlib import resources

import pytest

from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.trace.log import read_log
from jupyter_agent.trace.verify import replay_run, verify_run


@pytest.mark.parametrize(
    ("name", "program"), [("toolcaller", "toolcaller@v6"), ("history", "history@v1")]
)
def test_shipped_scenario_replays_identically(name: str, program: str) -> None:
    path = resources.files("jupyter_agent") / "programs" / "scenarios" / f"{name}.jsonl"
    trace = read_log(str(path))
    assert trace.header["program"] == program
    outcome = verify_run(trace)
    assert outcome.identical, outcome.message
    produced = replay_run(trace)
    if name == "toolcaller":
        assert isinstance(produced, TurnRecord)
        assert produced.llm.end_cause == "done"
        assert produced.llm.cells == 1
        names = [line.name for line in trace.lines if line.parent is None]
        assert "cell.run" in names
        assert names[-1] == "turn.append"
