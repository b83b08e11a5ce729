"""Diff two runs (issue 31, item 2), through a real Jupyter Server, the fake provider and a
real agent kernel: ``GET agent/runs/{a}/diff/{b}`` and ``jupyter agent trace diff``.

A run and its rerun with nothing changed are identical (ids, times and a cell's timing
are not compared), two live runs of one message in two chats part at their set-up (the
second can find the first's turn); a run and its rerun on another model part at the first
``http.post``, its request naming the other model; a run and its rerun under another
program part there too, the system prompt's diff showing what the program added; the CLI
exits 0 and 1 for those, 2 for an unknown run.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.server.helpers import call, new_chat, refused, run_cli
from tests.server.test_rerun import _ended, _turn

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("server_kernelspec")]

CELL = "x = 40 + 2\nprint('x is', x)"


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider(
        {"steps": [{"cells": [CELL]}, {"text": "The answer is 42."}], "per_turn": True}
    )


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    def tier(model: str) -> dict[str, Any]:
        return {"provider": "fake", "model": model, "base_url": fake.base_url}

    return {
        "pool_size": 0,
        "tiers": {"codegen": tier("claude-sonnet-4-5"), "classify": tier("claude-haiku-4-5")},
    }


def _rerun(fetch: Any, run_id: str, **body: str) -> str:
    code, answer = call(fetch, "agent", "runs", run_id, "rerun", method="POST", body=body)
    assert code == 202
    _ended(fetch, answer["run_id"])
    return str(answer["run_id"])


def test_two_runs_of_one_turn_are_identical_and_a_rerun_differs(
    fetch: Any, spin: Any, fake: Any, jp_http_port: int, jp_base_url: str, jp_serverapp: Any,
    capsys: Any,
) -> None:  # fmt: skip
    first = _turn(fetch, spin, new_chat(fetch, "one"), "what is 40 + 2?")
    # A rerun with nothing changed: the same recorded inputs, the same model: identical,
    # though its ids, times and the cell's timing are its own.
    second = _rerun(fetch, first)
    code, same = call(fetch, "agent", "runs", first, "diff", second)
    assert code == 200
    assert same["identical"] is True, same["divergence"]
    assert same["summary"]["a"]["cells"] == same["summary"]["b"]["cells"] == 1
    assert same["summary"]["a"]["model_calls"] == 2
    # Two live runs of one message in two chats part at the set-up: the second chat's
    # run can find the first's turn (its recall input differs).
    third = _turn(fetch, spin, new_chat(fetch, "two"), "what is 40 + 2?")
    _, apart = call(fetch, "agent", "runs", first, "diff", third)
    assert (apart["divergence"]["effect_a"], apart["divergence"]["part"]) == (
        "config.get", "result",
    )  # fmt: skip
    assert '-   "turns": 0' in apart["divergence"]["data_diff"]

    other = _rerun(fetch, first, model="classify")
    _, diff = call(fetch, "agent", "runs", first, "diff", other)
    assert diff["identical"] is False
    divergence = diff["divergence"]
    assert (divergence["effect_a"], divergence["part"]) == ("http.post", "intent")
    assert divergence["model"] == {"a": "claude-sonnet-4-5", "b": "claude-haiku-4-5"}
    assert divergence["conversation_diff"] == ""  # the same recorded inputs
    assert diff["b"]["rerun_of"] == first
    assert (diff["a"]["model"], diff["b"]["model"]) == ("claude-sonnet-4-5", "claude-haiku-4-5")

    older = _rerun(fetch, first, program="toolcaller@v7")
    _, diff = call(fetch, "agent", "runs", first, "diff", older)
    divergence = diff["divergence"]
    assert (divergence["effect_a"], divergence["part"]) == ("http.post", "intent")
    assert "system" in divergence["what"]
    removed = [ln for ln in divergence["system_diff"].splitlines() if ln.startswith("-")]
    assert any("notebook.variables" in ln for ln in removed), divergence["system_diff"]

    server = ["--addr", f"http://127.0.0.1:{jp_http_port}{jp_base_url}"]
    server += ["--token", jp_serverapp.identity_provider.token]
    assert run_cli(spin, ["trace", "diff", first, second, *server]) == 0
    assert "identical" in capsys.readouterr().out
    assert run_cli(spin, ["trace", "diff", first, other, *server]) == 1
    out = capsys.readouterr().out
    assert "first divergence: effect" in out
    assert "model: claude-sonnet-4-5 -> claude-haiku-4-5" in out
    assert run_cli(spin, ["trace", "diff", first, "run_01NOSUCHRUN00000000000000", *server]) == 2
    assert "no such run" in capsys.readouterr().err


def test_an_unknown_run_is_not_found(fetch: Any, spin: Any) -> None:
    run_id = _turn(fetch, spin, new_chat(fetch, "one"), "what is 40 + 2?")
    refused(fetch, "agent", "runs", run_id, "diff", "run_01NOSUCHRUN00000000000000", status=404)
