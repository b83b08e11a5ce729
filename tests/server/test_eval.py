"""Evaluate (issue 31, item 4) through a real Jupyter Server, the fake provider and real
agent kernels: ``POST agent/evals``, ``GET agent/evals/{id}``.

The shipped suite (``examples/eval/``: four data-analysis cases over small CSVs) passes
with the fake playing its script (``examples/eval/fake-script.json``, one route per case)
at four cases at once; each case is a run of its own (never a chat's turn), its checks
ran in the kernel the agent used (the variables it left, the file it wrote, ``reply``),
and the report is a valid notebook in the trace folder. A case whose check fails is
reported failed with its assertion's message; a recorded run is re-run with its
original reply as the reference; bad input is refused with nothing started.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.server.helpers import call, new_chat, refused, run_cli, wait_turn

pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("server_kernelspec")]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "eval"


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider(json.loads((EXAMPLE / "fake-script.json").read_text()))


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    def tier(model: str) -> dict[str, Any]:
        return {"provider": "fake", "model": model, "base_url": fake.base_url}

    return {
        "pool_size": 0,
        "tiers": {"codegen": tier("claude-sonnet-4-5"), "classify": tier("claude-haiku-4-5")},
    }


@pytest.fixture
def suite(jp_root_dir: Path) -> str:
    shutil.copytree(EXAMPLE, jp_root_dir / "suite", ignore=shutil.ignore_patterns("monthly.csv"))
    return "suite"


def _ended(fetch: Any, spin: Any, eval_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 240
    while True:
        _, state = call(fetch, "agent", "evals", eval_id)
        if state["status"] == "done":
            return dict(state)
        assert time.monotonic() < deadline, f"the eval never ended: {state}"
        spin(0.2)


def _start(fetch: Any, **body: Any) -> dict[str, Any]:
    code, answer = call(fetch, "agent", "evals", method="POST", body=body)
    assert code == 202
    assert answer["status"] == "running"
    return dict(answer)


def test_the_shipped_suite_passes_every_case(
    fetch: Any, spin: Any, fake: Any, suite: str, jp_root_dir: Path, agent_service: Any
) -> None:
    answer = _start(fetch, suite=suite, concurrency=4)
    assert answer["total"] == 4
    assert [r["case"] for r in answer["results"]] == [
        "total-revenue", "best-region", "monthly-file", "mean-temperature",
    ]  # fmt: skip
    state = _ended(fetch, spin, answer["eval_id"])
    assert state["error"] is None
    statuses = {r["case"]: (r["status"], r["message"]) for r in state["results"]}
    assert statuses == {name: ("passed", "") for name in statuses}, statuses
    assert state["passed"] == 4
    assert state["by_model"]["(the agent's tiers)"]["pass_rate"] == 1.0
    # The file the agent wrote is where its checks found it: beside the suite.
    assert (jp_root_dir / suite / "monthly.csv").read_text().splitlines()[0] == "month,revenue"
    # Each case is a run of its own, under the eval's id: no chat holds it.
    runs = [r["run_id"] for r in state["results"]]
    for run_id in runs:
        _, run = call(fetch, "agent", "runs", run_id)
        summary = run["summary"]
        assert (summary["status"], summary["chat_id"]) == ("done", answer["eval_id"])
        assert summary["rerun_of"] is None
    _, chats = call(fetch, "agent", "chats")
    assert chats["chats"] == []
    first = state["results"][0]
    assert first["reply"] == "The total revenue in sales.csv is 11800 (kept in `total`)."
    assert first["tokens"]["input"] > 0
    assert first["duration_s"] > 0
    # The report: a valid notebook in the trace folder, naming every case and its run.
    report = jp_root_dir / state["report"]
    assert report.parent.name == "agent-traces"
    nb = nbformat.read(report, as_version=4)
    nbformat.validate(nb)
    text = "\n".join(c.source for c in nb.cells)
    for run_id in runs:
        assert run_id in text
    assert "4 of 4 case runs passed" in text
    assert nb.metadata["jupyter_agent"]["eval"]["eval_id"] == answer["eval_id"]


def test_a_failing_check_is_reported_with_its_message(
    fetch: Any, spin: Any, fake: Any, suite: str, jp_root_dir: Path
) -> None:
    nb = nbformat.read(jp_root_dir / suite / "cases.ipynb", as_version=4)
    nb.cells[2].source = 'assert total == 12000, f"total is {total}, not 12000"'
    nb.cells[4].source = "assert best == 'South'"
    nbformat.write(nb, jp_root_dir / suite / "cases.ipynb")
    answer = _start(fetch, suite=f"{suite}/cases.ipynb", models=["classify"], repeats=2)
    assert answer["total"] == 8
    state = _ended(fetch, spin, answer["eval_id"])
    by_case = {(r["case"], r["repeat"]): r for r in state["results"]}
    for repeat in (1, 2):
        total = by_case[("total-revenue", repeat)]
        assert total["status"] == "failed"
        assert total["message"] == "AssertionError: total is 11800, not 12000"
        assert total["model"] == "classify"
        best = by_case[("best-region", repeat)]
        assert (best["status"], best["message"]) == (
            "failed", "AssertionError at: assert best == 'South'",
        )  # fmt: skip
        assert by_case[("mean-temperature", repeat)]["status"] == "passed"
    assert {r.json["model"] for r in fake.requests} == {"claude-haiku-4-5"}
    assert state["by_model"]["classify"]["failed"] == 4
    assert state["by_model"]["classify"]["pass_rate"] == 0.5


def test_a_recorded_run_is_rerun_against_its_reply(
    fetch: Any, spin: Any, fake: Any, suite: str
) -> None:
    chat_id = new_chat(fetch, "weather")
    code, sent = call(
        fetch,
        "agent",
        "chats",
        chat_id,
        "messages",
        method="POST",
        body={"text": "Mean temperature: what is it in suite/weather.csv?"},
    )
    assert code == 202
    wait_turn(fetch, spin, chat_id, sent["run_id"])
    answer = _start(fetch, runs=[sent["run_id"]], models=["", "classify"])
    state = _ended(fetch, spin, answer["eval_id"])
    assert [r["model"] for r in state["results"]] == [None, "classify"]
    for result in state["results"]:
        assert result["case"] == f"rerun of {sent['run_id']}"
        assert result["reference"] == "The mean temperature is 12.5 °C."
        assert result["similarity"] == 1.0
        _, run = call(fetch, "agent", "runs", result["run_id"])
        assert run["summary"]["rerun_of"] == sent["run_id"]
    # Two models compared: the report draws their pass rates.
    assert len(state["by_model"]) == 2


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({}, "bad_suite"),
        ({"suite": "nowhere"}, "bad_suite"),
        ({"suite": "suite/sales.csv"}, "bad_suite"),
        ({"suite": "../outside"}, "bad_path"),
        ({"suite": "suite", "repeats": 0}, "bad_eval"),
        ({"suite": "suite", "concurrency": 99}, "bad_eval"),
        ({"suite": "suite", "models": ["embed"]}, "bad_model"),
        ({"suite": "suite", "models": ["classify", "classify"]}, "bad_eval"),
        ({"suite": "suite", "program": "toolcaller@v99"}, "bad_program"),
        ({"suite": "suite", "colour": "red"}, "unknown_field"),
    ],
)
def test_bad_input_is_refused_with_nothing_started(
    fetch: Any, fake: Any, suite: str, body: dict[str, Any], reason: str, agent_service: Any
) -> None:
    error = refused(fetch, "agent", "evals", status=400, method="POST", body=body)
    assert error["reason"] == reason, error
    assert fake.requests == []
    runs, _ = agent_service.store.list_runs(limit=10)
    assert runs == []


def test_an_unknown_eval_is_404(fetch: Any, fake: Any) -> None:
    refused(fetch, "agent", "evals", "eval-nope", status=404)


def test_the_cli_runs_the_suite_and_says_how_it_went(
    fetch: Any, fake: Any, spin: Any, suite: str, jp_root_dir: Path, jp_http_port: int,
    jp_base_url: str,
    jp_serverapp: Any, capsys: Any,
) -> None:  # fmt: skip
    addr = f"http://127.0.0.1:{jp_http_port}{jp_base_url}"
    server = ["--addr", addr, "--token", jp_serverapp.identity_provider.token]
    code = run_cli(spin, ["eval", suite, "--tier", "codegen=classify", "-n", "1", *server])
    captured = capsys.readouterr()
    assert code == 0, captured
    lines = captured.out.splitlines()
    assert lines[0].startswith("classify: 4/4 passed (100%)")
    assert lines[-1].startswith("report: agent-traces/eval-suite")
    assert " passed  monthly-file [classify #1]" in captured.err
    # A failing case: exit status 1, the failure on stdout; --json is the whole state.
    nb = nbformat.read(jp_root_dir / suite / "cases.ipynb", as_version=4)
    nb.cells[8].source = "assert '13' in reply, 'not 13'"
    nbformat.write(nb, jp_root_dir / suite / "cases.ipynb")
    assert run_cli(spin, ["eval", suite, "--json", *server]) == 1
    state = json.loads(capsys.readouterr().out)
    failed = [r for r in state["results"] if r["status"] != "passed"]
    assert [(r["case"], r["message"]) for r in failed] == [
        ("mean-temperature", "AssertionError: not 13")
    ]
    # Expected failures: one line, exit status 2.
    assert run_cli(spin, ["eval", *server]) == 2
    assert "give a SUITE" in capsys.readouterr().err
    assert run_cli(spin, ["eval", "no/such/suite", *server]) == 2
    assert "no suite at no/such/suite" in capsys.readouterr().err
    assert run_cli(spin, ["eval", suite, "--tier", "classify=x", *server]) == 2
    assert "--tier takes codegen=MODEL" in capsys.readouterr().err


def test_an_owner_has_at_most_two_evals_going(
    fetch: Any, spin: Any, fake: Any, suite: str, agent_service: Any
) -> None:
    from jupyter_agent.runtime.evals.service import MAX_GOING

    fake.load({"per_turn": True, "steps": [{"text": "Thinking slowly.", "delay_s": 2}]})
    going = [_start(fetch, suite=suite, concurrency=1)["eval_id"] for _ in range(MAX_GOING)]
    error = refused(fetch, "agent", "evals", status=429, method="POST", body={"suite": suite})
    assert error["reason"] == "too_many_evals"
    # The going evals go on making their runs; the refused one made none.
    chats = {r.chat_id for r in agent_service.store.list_runs(limit=100)[0]}
    assert chats <= set(going)
    for eval_id in going:
        state = _ended(fetch, spin, eval_id)
        assert {r["status"] for r in state["results"]} == {"failed"}  # no cell ran
    _start(fetch, suite=suite)  # one ended: the next starts


def test_a_suite_notebook_that_leads_out_of_the_root_is_refused(
    fetch: Any, fake: Any, suite: str, jp_root_dir: Path, tmp_path: Path, agent_service: Any
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(jp_root_dir / suite / "cases.ipynb", outside / "secret.ipynb")
    (jp_root_dir / suite / "linked.ipynb").symlink_to(outside / "secret.ipynb")
    error = refused(fetch, "agent", "evals", status=400, method="POST", body={"suite": suite})
    assert error["reason"] == "bad_path", error
    assert "suite notebook" in error["message"]
    assert fake.requests == []
    assert agent_service.store.list_runs(limit=10)[0] == []
    # A case's view is a path in the root too.
    nb = nbformat.read(jp_root_dir / suite / "cases.ipynb", as_version=4)
    nb.cells[1].metadata["jupyter_agent"]["view"] = {"path": "../../etc/x.ipynb"}
    (jp_root_dir / suite / "linked.ipynb").unlink()
    nbformat.write(nb, jp_root_dir / suite / "cases.ipynb")
    error = refused(fetch, "agent", "evals", status=400, method="POST", body={"suite": suite})
    assert error["reason"] == "bad_path", error
    assert "view.path" in error["message"]
