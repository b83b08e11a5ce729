"""``jupyter agent`` finds the running server as ``jupyter server list`` does (issue 30,
item 4), ``trace show`` reads the local log when no server answers, and ``export`` refuses
to overwrite a file without ``--force`` (item 5). Against a real ``jupyter server``
subprocess (the ``live_server`` fixture) and the server file it really writes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jupyter_agent.cli.discover import DEFAULT_ADDR, running_servers
from jupyter_agent.cli.main import build_parser, main
from jupyter_agent.runtime.paths import runs_dir
from tests.cli_support import record_run
from tests.plugins.live_server import LiveServer

RUN = "run_01LOCALSHOW"


@pytest.fixture
def no_env_token(monkeypatch):
    monkeypatch.delenv("JUPYTER_TOKEN", raising=False)


def _server_file(server: LiveServer) -> Path:
    files = list(server.runtime_dir.glob("jpserver-*.json"))
    assert len(files) == 1, files
    return files[0]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_running_server_is_found_with_its_token(
    live_server, live_server_run, monkeypatch, no_env_token, capsys
):
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(live_server.runtime_dir))
    assert main(["trace", "ls", "--json"]) == 0
    captured = capsys.readouterr()
    assert f"jupyter agent: using the server at {live_server.addr}" in captured.err
    _chat, run_id = live_server_run
    assert run_id in {r["run_id"] for r in json.loads(captured.out)["runs"]}
    assert main(["trace", "show", run_id, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["run_id"] == run_id


def test_dead_and_foreign_server_files_are_skipped(
    live_server, tmp_path, monkeypatch, no_env_token, capsys
):
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    real = json.loads(_server_file(live_server).read_text())
    # A dead process's file, and a live process that is not an agent server.
    (runtime / "jpserver-1.json").write_text(json.dumps({**real, "pid": _dead_pid()}))
    foreign = {**real, "url": "http://127.0.0.1:9/", "pid": os.getpid()}
    (runtime / "jpserver-2.json").write_text(json.dumps(foreign))
    (runtime / "jpserver-3.json").write_text("{half a file")
    shutil.copy(_server_file(live_server), runtime / "jpserver-4.json")
    # The dead process's file and the half-written one are not servers.
    assert sorted(s.url for s in running_servers(runtime)) == sorted([real["url"], foreign["url"]])
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    assert main(["trace", "ls"]) == 0
    assert f"using the server at {live_server.addr}" in capsys.readouterr().err


def test_several_agent_servers_are_listed_not_guessed(
    live_server, tmp_path, monkeypatch, no_env_token, capsys
):
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    real = json.loads(_server_file(live_server).read_text())
    (runtime / "jpserver-1.json").write_text(json.dumps(real))
    # The same server under a second address: two servers answer as the agent.
    other = real["url"].replace("127.0.0.1", "localhost")
    (runtime / "jpserver-2.json").write_text(json.dumps({**real, "url": other}))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    assert main(["trace", "ls"]) == 2
    err = capsys.readouterr().err
    assert "2 running servers serve the agent; pick one with --addr" in err
    assert real["url"] in err
    assert other in err
    assert main(["trace", "ls", "--addr", real["url"], "--token", real["token"]]) == 0


def test_flags_win_over_the_found_server(live_server, monkeypatch, no_env_token, capsys):
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(live_server.runtime_dir))
    assert main(["trace", "ls", "--addr", live_server.addr, "--token", "wrong"]) == 2
    assert capsys.readouterr().err.strip() == "jupyter agent: the server refused the token (403)"


def test_no_server_trace_show_reads_the_local_log(tmp_path, monkeypatch, no_env_token, capsys):
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    runs_dir().mkdir(parents=True)
    record_run(runs_dir() / f"{RUN}.jsonl")
    assert main(["trace", "show", RUN, "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["run_id"] == "run_01CLI"
    assert f"no server answered; the local log {runs_dir() / f'{RUN}.jsonl'}" in captured.err
    # Not in the folder either: both places named.
    assert main(["trace", "show", "run_01NONE"]) == 2
    err = capsys.readouterr().err
    assert f"not in the local runs folder {runs_dir()}" in err
    assert f"the server at {DEFAULT_ADDR} could not be reached" in err


def test_export_refuses_an_existing_file_without_force(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    log = tmp_path / f"{RUN}.jsonl"
    record_run(log)
    out = tmp_path / "out.ipynb"
    out.write_text("mine")
    assert main(["export", str(log), "-o", str(out)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"jupyter agent: {out} exists: pass --force to overwrite it"
    )
    assert out.read_text() == "mine"
    assert main(["export", str(log), "-o", str(out), "--force"]) == 0
    assert json.loads(out.read_text())["nbformat"] == 4


def test_help_states_the_order():
    parser = build_parser()
    help_text = " ".join(
        parser._subparsers._group_actions[0]
        .choices["trace"]  # type: ignore[union-attr]
        ._subparsers._group_actions[0]
        .choices["ls"]
        .format_help()
        .split()
    )
    assert "Which server: --addr (with --token, else JUPYTER_TOKEN); else the running" in help_text
