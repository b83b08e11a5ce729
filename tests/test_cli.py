"""``jupyter agent`` trace verbs: replay, export, prune (local), and ls/show/replay/export
against a real loopback HTTP server (the stub of ``tests/rest_stub.py``); clear errors."""

from __future__ import annotations

import json
import secrets
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest

from jupyter_agent.cli.main import main
from jupyter_agent.core.loop.machine import PROGRAM
from jupyter_agent.core.turns import RunSummary
from jupyter_agent.runtime.paths import default_db_url, runs_dir
from jupyter_agent.store.repo import Store
from tests.cli_support import record_run
from tests.rest_stub import StubState, free_port, stub_server

RUN = "run_01CLI"


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """An empty Jupyter data dir of the test's own."""
    folder = tmp_path / "data"
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(folder))
    return folder


@pytest.fixture
def log_file(tmp_path) -> Path:
    path = tmp_path / f"{RUN}.jsonl"
    record_run(path)
    return path


@pytest.fixture
def server(tmp_path):
    token = "tok-" + secrets.token_hex(8)
    served = tmp_path / "served"
    served.mkdir()
    record_run(served / f"{RUN}.jsonl")
    with stub_server(StubState(token=token, runs=served)) as addr:
        yield addr, token


def _one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


# --- replay ----------------------------------------------------------------------------


def test_replay_identical_file(log_file, capsys):
    assert main(["replay", str(log_file)]) == 0
    assert "identical" in capsys.readouterr().out


def test_replay_tampered_file_prints_the_seq(log_file, capsys):
    text = log_file.read_text().replace('"text":"6*7?"', '"text":"7*7?"')
    log_file.write_text(text)
    assert main(["replay", str(log_file)]) == 1
    out = capsys.readouterr().out
    assert "diverged at seq 11" in out  # the first model call asks another question
    assert "recorded:" in out
    assert "asked:" in out
    assert "7*7?" in out
    assert main(["replay", str(log_file), "--json"]) == 1
    outcome = json.loads(capsys.readouterr().out)
    assert (outcome["identical"], outcome["seq"]) == (False, 11)


def test_replay_run_id_from_the_local_store(data_dir, capsys):
    runs_dir().mkdir(parents=True)
    record_run(runs_dir() / f"{RUN}.jsonl")
    # an address nothing listens on: the local log must be used
    assert main(["replay", RUN, "--addr", f"http://127.0.0.1:{free_port()}/"]) == 0
    assert "identical" in capsys.readouterr().out


def test_replay_run_id_fetched_from_the_server(data_dir, server, capsys):
    addr, token = server
    assert main(["replay", RUN, "--addr", addr, "--token", token]) == 0
    assert f"run {RUN}" in capsys.readouterr().out


def test_replay_unknown_run_and_stopped_log(data_dir, server, tmp_path, log_file, capsys):
    addr, token = server
    assert main(["replay", "run_nope", "--addr", addr, "--token", token]) == 2
    assert _one_line(capsys.readouterr().err) == (
        f"jupyter agent: no such run: run_nope (not in the local runs folder {runs_dir()}, "
        f"nor on the server at {addr})"
    )
    assert main(["replay", str(tmp_path / "missing.jsonl")]) == 2
    assert "no such log file" in _one_line(capsys.readouterr().err)
    lines = log_file.read_text().splitlines()
    log_file.write_text("\n".join(lines[:-3]) + "\n")  # stops after an intent, no result
    assert main(["replay", str(log_file)]) == 2
    assert "stopped" in _one_line(capsys.readouterr().err)


# --- errors ----------------------------------------------------------------------------


@pytest.mark.parametrize("verb", [["replay"], ["export", "-o", "x.ipynb"]])
def test_unknown_run_with_no_server_says_no_such_run_and_where(data_dir, verb, capsys):
    dead = f"http://127.0.0.1:{free_port()}/"
    assert main([verb[0], "run_nope", *verb[1:], "--addr", dead, "--token", "t"]) == 2
    assert _one_line(capsys.readouterr().err) == (
        f"jupyter agent: no such run: run_nope (not in the local runs folder {runs_dir()}; "
        f"the server at {dead} could not be reached)"
    )


def test_missing_token_says_so(data_dir, server, monkeypatch, capsys):
    addr, _ = server
    monkeypatch.delenv("JUPYTER_TOKEN", raising=False)
    assert main(["trace", "ls", "--addr", addr]) == 2
    assert _one_line(capsys.readouterr().err) == (
        f"jupyter agent: no token: pass --token or set JUPYTER_TOKEN (the server at {addr} "
        "needs one)"
    )
    assert main(["replay", "run_nope", "--addr", addr]) == 2
    assert _one_line(capsys.readouterr().err) == (
        "jupyter agent: no token: pass --token or set JUPYTER_TOKEN (run run_nope is not in "
        f"the local runs folder {runs_dir()}; the server at {addr} needs a token)"
    )


def test_trace_show_unknown_run(server, capsys):
    addr, token = server
    assert main(["trace", "show", "run_nope", "--addr", addr, "--token", token]) == 2
    err = _one_line(capsys.readouterr().err)
    assert err == (
        f"jupyter agent: no such run: run_nope (not in the local runs folder {runs_dir()}, "
        f"nor on the server at {addr})"
    )


def test_unreachable_server_and_bad_token_exit_2_with_one_line(data_dir, server, capsys):
    addr, _ = server
    dead = f"http://127.0.0.1:{free_port()}/"
    assert main(["trace", "ls", "--addr", dead, "--token", "t"]) == 2
    err = _one_line(capsys.readouterr().err)
    assert err.startswith(f"jupyter agent: cannot reach the agent server at {dead}")
    wrong = "wrong-" + secrets.token_hex(6)
    for argv in (["trace", "ls"], ["trace", "show", RUN], ["export", RUN, "-o", "x.ipynb"]):
        assert main([*argv, "--addr", addr, "--token", wrong]) == 2
        captured = capsys.readouterr()
        assert _one_line(captured.err) == "jupyter agent: the server refused the token (403)"
        assert wrong not in captured.out + captured.err


def test_token_from_the_environment(server, monkeypatch, capsys):
    addr, token = server
    monkeypatch.setenv("JUPYTER_TOKEN", token)
    assert main(["trace", "ls", "--addr", addr, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0]["run_id"] == RUN


# --- trace ls / show -------------------------------------------------------------------


def test_trace_ls_table(server, capsys):
    addr, token = server
    assert main(["trace", "ls", "--addr", addr, "--token", token, "--limit", "5"]) == 0
    out = capsys.readouterr().out
    assert RUN in out
    assert "chat_01CLI" in out
    assert "done/done" in out
    assert "2400/52" in out  # tokens in/out of the turn


def test_trace_show_and_stats_from_the_server(server, capsys):
    addr, token = server
    assert main(["trace", "show", RUN, "--addr", addr, "--token", token]) == 0
    out = capsys.readouterr().out
    assert "cell c1" in out
    assert "6 * 7" in out
    assert "The answer is **42**." in out
    assert "turn.append" in out  # the effects table
    assert main(["trace", "show", RUN, "--stats", "--addr", addr, "--token", token]) == 0
    out = capsys.readouterr().out
    assert "claude-sonnet-4-5-20250929" in out
    assert "4000" in out  # cache read of one call
    assert "8000" in out  # cache read of the turn
    args = ["trace", "show", RUN, "--stats", "--json", "--addr", addr, "--token", token]
    assert main(args) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["stats"]["totals"]["cacheRead"] == 8000
    assert body["turn"]["run_id"] == RUN


def test_trace_show_a_local_file(log_file, capsys):
    assert main(["trace", "show", str(log_file), "--json", "--stats"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert [s["type"] for s in body["steps"]] == [
        "user",
        "model_call",
        "bubble",
        "cell",
        "model_call",
        "reply",
    ]
    assert body["stats"]["totals"]["calls"] == 2


@pytest.mark.parametrize("retries", [0, 1])
def test_messages_in_the_right_plural_form(tmp_path, retries, capsys):
    log = tmp_path / f"{RUN}.jsonl"
    record_run(log, retries=retries)
    assert main(["trace", "show", str(log)]) == 0
    out = capsys.readouterr().out
    first, second = (line for line in out.splitlines() if " model call " in line)
    assert first.endswith(("(HTTP 200, 1 try)", "(HTTP 200, 2 tries)")[retries])
    assert second.endswith("(HTTP 200, 1 try)")
    assert "1 tries" not in out
    assert main(["replay", str(log)]) == 0
    assert capsys.readouterr().out.strip().endswith(" effects)")


def test_plural():
    from jupyter_agent.cli.render import plural

    assert [plural(n, "try") for n in (0, 1, 2)] == ["0 tries", "1 try", "2 tries"]
    assert [plural(n, "cell") for n in (0, 1, 2)] == ["0 cells", "1 cell", "2 cells"]
    assert plural(1, "log file") == "1 log file"
    assert plural(3, "log file") == "3 log files"
    assert plural(2, "index", "indices") == "2 indices"


# --- export ----------------------------------------------------------------------------


def test_export_a_local_log(log_file, tmp_path, capsys):
    out = tmp_path / "run.ipynb"
    assert main(["export", str(log_file), "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"Wrote {out} (5 cells)"  # with its setup cell
    nb = nbformat.read(out, as_version=4)
    nbformat.validate(nb)
    assert [c.id for c in nb.cells if c.cell_type == "code"] == ["replay-setup", "c1"]
    assert nb.metadata["jupyter_agent"]["run_id"] == RUN


def test_export_a_local_run_with_its_turn_from_the_local_database(data_dir, tmp_path):
    runs_dir().mkdir(parents=True)
    turn = record_run(runs_dir() / f"{RUN}.jsonl")
    store = Store(default_db_url())
    store.create_chat(chat_id=turn.chat_id, title="t", now="2025-03-01T10:00:00.000Z")
    store.append_turn(replace(turn, id="turn_from_db"))
    store.close()
    out = tmp_path / "run.ipynb"
    assert main(["export", RUN, "-o", str(out), "--addr", f"http://127.0.0.1:{free_port()}/"]) == 0
    nb = nbformat.read(out, as_version=4)
    assert nb.metadata["jupyter_agent"]["turn_id"] == "turn_from_db"


def test_export_from_the_server(data_dir, server, tmp_path):
    addr, token = server
    out = tmp_path / "served.ipynb"
    assert main(["export", RUN, "-o", str(out), "--addr", addr, "--token", token]) == 0
    nb = nbformat.read(out, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["jupyter_agent"]["run_id"] == RUN


# --- prune -----------------------------------------------------------------------------


def _summary(run_id: str, started: str, status: str = "done") -> RunSummary:
    return RunSummary(
        run_id=run_id, chat_id="chat_1", program="toolcaller", status=status, started=started
    )


def test_prune_old_runs_and_their_logs(data_dir, capsys):
    store = Store(default_db_url())
    store.upsert_run(_summary("run_old", "2020-01-01T00:00:00.000Z"))
    store.upsert_run(_summary("run_old_running", "2020-01-02T00:00:00.000Z", "running"))
    store.upsert_run(_summary("run_new", "2999-01-01T00:00:00.000Z"))
    store.close()
    runs_dir().mkdir(parents=True)
    for run_id in ("run_old", "run_old_running", "run_new"):
        (runs_dir() / f"{run_id}.jsonl").write_text("{}\n")

    assert main(["trace", "prune", "--older-than", "30", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "Would remove 1 run started" in out
    assert "run_old\n" in out
    assert (runs_dir() / "run_old.jsonl").exists()

    assert main(["trace", "prune", "--older-than", "30"]) == 0
    out = capsys.readouterr().out
    assert "Removed 1 run started" in out
    assert "(1 log file)" in out
    assert not (runs_dir() / "run_old.jsonl").exists()
    assert (runs_dir() / "run_old_running.jsonl").exists()
    assert (runs_dir() / "run_new.jsonl").exists()
    store = Store(default_db_url())
    left = sorted(r.run_id for r in store.list_runs()[0])
    store.close()
    assert left == ["run_new", "run_old_running"]


def test_prune_without_a_database_creates_none(data_dir, capsys):
    assert main(["trace", "prune", "--older-than", "1"]) == 0
    assert "Nothing to prune" in capsys.readouterr().out
    assert not data_dir.exists()
    assert main(["trace", "prune", "--older-than", "-1"]) == 2
    assert ">= 0" in _one_line(capsys.readouterr().err)


# --- kernel install stays --------------------------------------------------------------


def test_kernel_install_still_works(tmp_path, capsys):
    assert main(["kernel", "install", "--prefix", str(tmp_path)]) == 0
    spec = tmp_path / "share" / "jupyter" / "kernels" / "jupyter-agent" / "kernel.json"
    assert json.loads(spec.read_text())["language"] == "python"


# --- against a real Jupyter server (tests/plugins/live_server.py) ---------------------


@pytest.mark.parametrize(
    ("program", "found"),
    [("toolcaller", True), (PROGRAM, True), ("toolcall", False), ("toolcaller@v9", False)],
)
def test_live_trace_ls_by_program(live_server, live_server_run, program, found, capsys):
    _, run_id = live_server_run
    server = ["--addr", live_server.addr, "--token", live_server.token]
    assert main(["trace", "ls", "--program", program, "--limit", "1000", "--json", *server]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert (run_id in [r["run_id"] for r in runs]) is found
    assert {r["program"] for r in runs} <= {PROGRAM}
    assert main(["trace", "ls", "--program", program, "--limit", "1000", *server]) == 0
    assert (run_id in capsys.readouterr().out) is found


def test_live_errors_no_such_run_and_no_token(live_server, data_dir, monkeypatch, capsys):
    addr, token = live_server.addr, live_server.token
    for verb in (
        ["replay", "run_01NOPE"],
        ["export", "run_01NOPE", "-o", "x.ipynb"],
        ["trace", "show", "run_01NOPE"],
    ):
        assert main([*verb, "--addr", addr, "--token", token]) == 2
        assert _one_line(capsys.readouterr().err) == (
            f"jupyter agent: no such run: run_01NOPE (not in the local runs folder "
            f"{runs_dir()}, nor on the server at {addr})"
        )
    monkeypatch.delenv("JUPYTER_TOKEN", raising=False)
    assert main(["trace", "ls", "--addr", addr]) == 2
    assert _one_line(capsys.readouterr().err) == (
        f"jupyter agent: no token: pass --token or set JUPYTER_TOKEN (the server at {addr} "
        "needs one)"
    )
    assert main(["trace", "ls", "--addr", addr, "--token", "wrong"]) == 2
    assert _one_line(capsys.readouterr().err) == (
        "jupyter agent: the server refused the token (403)"
    )
