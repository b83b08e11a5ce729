"""One digest per cell: the driver digests with the loop's options and records the
digest; the loop gives the model that text; logs without one replay as they were."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.core.ceilings import Ceilings
from jupyter_agent.core.digest.cells import CellResult, Value
from jupyter_agent.core.digest.record import (
    DIGEST_KEY,
    digest_options,
    digest_options_from_config,
    digest_record,
    recorded,
)
from jupyter_agent.core.digest.render import digest_cell
from jupyter_agent.core.loop.runstate import RunState
from jupyter_agent.core.loop.steps import run_tool
from jupyter_agent.effects import CELL_RUN, Result
from jupyter_agent.exceptions import NondeterminismError
from jupyter_agent.llm.tiers import tier_from_config
from jupyter_agent.messages import Text, ToolCall
from jupyter_agent.runtime.runs.parts import RunConfig
from jupyter_agent.trace.log import read_log
from jupyter_agent.trace.verify import replay_run

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


@pytest.mark.parametrize("model", ["claude-sonnet-4-5", "some-local-model"])
def test_the_driver_digests_with_the_loops_options(model: str) -> None:
    tiers = {"codegen": {"provider": "fake", "model": model, "base_url": "http://127.0.0.1:1"}}
    config = RunConfig(
        tiers=tiers,
        ceilings={"value_budget_tokens": 123, "total_budget_tokens": 456},
        spaces={"env_prefix": "/env", "home": "/home/me"},
        profiles={model: {"context_window": 9000}},
    )
    # What the loop builds (core/loop/machine.py setup): its tier's profile, its ceilings, spaces.
    tier = tier_from_config("codegen", tiers["codegen"], config.profiles[model])
    loops = digest_options(
        Ceilings.from_json(config.ceilings), config.spaces, vision=tier.profile.vision
    )
    assert digest_options_from_config(config.get) == loops
    assert loops.value_budget_tokens == 123
    assert loops.home == "/home/me"
    assert loops.vision is (model == "claude-sonnet-4-5")


def _run_cell(data: dict[str, Any]) -> Any:
    gen = run_tool(
        ToolCall(id="t1", name="run_cell", args={"code": "print(1)"}),
        RunState(started="2026-01-01T00:00:00Z"),
        Ceilings(),
        digest_options(Ceilings(), {}, vision=False),
    )
    effect = next(gen)
    assert effect.name == CELL_RUN
    try:
        gen.send(Result(seq=5, name=CELL_RUN, data=data))
    except StopIteration as done:
        return done.value
    raise AssertionError("run_tool asked for more")


def test_the_loop_gives_the_model_the_recorded_digest() -> None:
    cell = CellResult(cell_id="c1", prints=(Value(text="1"),))
    data = {**cell.to_json(), DIGEST_KEY: {"text": "the recorded digest", "is_error": True}}
    result = _run_cell(data)
    assert result.content == (Text(text="the recorded digest"),)
    assert result.is_error is True
    # A result without one (an old log) is digested by the loop, as before.
    old = _run_cell(cell.to_json())
    assert old.content[0].text == digest_cell(cell).text
    assert recorded(cell.to_json()) is None
    assert recorded(data) == ("the recorded digest", True)
    assert digest_record(digest_cell(cell)) == {"text": digest_cell(cell).text, "is_error": False}


def test_an_old_log_without_digests_still_replays_from_its_results(tmp_path: Path) -> None:
    source = GOLDEN / "run_1.jsonl"
    lines = source.read_text(encoding="utf-8").splitlines()
    assert DIGEST_KEY not in "".join(ln for ln in lines if '"cell.run"' in ln and "result" in ln)
    replay_run(read_log(source))  # identical, digested by the loop
    for i, raw in enumerate(lines):
        obj = json.loads(raw)
        if (
            obj.get("name") == "cell.run"
            and obj.get("phase") == "result"
            and obj["data"].get("prints")
        ):
            obj["data"]["prints"][0]["text"] = "tampered"
            lines[i] = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
            break
    tampered = tmp_path / "run.jsonl"
    tampered.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(NondeterminismError):
        replay_run(read_log(tampered))
