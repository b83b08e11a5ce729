"""``jupyter agent program ...`` against a real ``jupyter server`` (the ``live_server``
subprocess): deploy a file and a folder, ls, show, rollback; refusals exit 2 with one line.

The live server is shared by the session: these tests deploy only to their own agent's
layer (:data:`AGENT`) and clear it afterwards, so other tests' runs keep the built-in."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_agent.cli.main import main
from jupyter_agent.client import AgentClient
from tests.plugins.live_server import LiveServer

AGENT = "cli-program-test"
GOOD = """from jupyter_agent.core import loop


def program(run_id, chat_id):
    return (yield from loop.program("toolcaller@v5", run_id, chat_id))
"""


@pytest.fixture
def server(live_server: LiveServer) -> Iterator[list[str]]:
    """``--addr``/``--token`` of the live server; this test's agent layer cleared after."""
    yield ["--addr", live_server.addr, "--token", live_server.token]
    with AgentClient(live_server.addr, live_server.token) as client:
        for _ in range(10):  # back to the server-wide version
            listed = client.programs()
            toolcaller = next(p for p in listed["programs"] if p["name"] == "toolcaller")
            if toolcaller["active"].get(AGENT) in (None, toolcaller["active"]["*"]):
                break
            client.rollback("toolcaller", agent=AGENT)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


def test_deploy_ls_show_rollback(
    server: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    single = tmp_path / "loop.py"
    single.write_text(GOOD + "# a single file\n")
    code, out, err = run(
        ["program", "deploy", "toolcaller", str(single), "--agent", AGENT, *server], capsys
    )
    assert (code, err) == (0, "")
    first = out.splitlines()[0].split()[1]
    assert first.startswith("toolcaller@v")
    assert "#" in first
    assert out.splitlines()[1] == f"Active for agent {AGENT}: {first}"

    folder = tmp_path / "plan"
    (folder / "lib").mkdir(parents=True)
    (folder / "program.py").write_text(
        "from .lib.keys import KEY\n" + GOOD.replace('"toolcaller@v5"', "KEY")
    )
    (folder / "lib" / "keys.py").write_text('KEY = "toolcaller@v5"\n')
    (folder / "program.json").write_text(json.dumps({"description": "plans first"}))
    (folder / "picture.png").write_bytes(b"\x89PNG")  # not kept: skipped by the CLI
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "x.pyc").write_bytes(b"\0")
    code, out, _ = run(
        ["program", "deploy", "toolcaller", str(folder), "--agent", AGENT, "--json", *server],
        capsys,
    )
    assert code == 0
    answer = json.loads(out)
    second = answer["program"]["ref"]
    assert answer["active"] == second
    assert answer["program"]["description"] == "plans first"
    assert answer["program"]["version"] == int(first.split("@v")[1].split("#")[0]) + 1

    code, out, _ = run(["program", "ls", *server], capsys)
    assert code == 0
    assert second in out
    assert AGENT in out
    assert "toolcaller@v4" in out
    code, out, _ = run(["program", "ls", "--json", *server], capsys)
    toolcaller = next(p for p in json.loads(out)["programs"] if p["name"] == "toolcaller")
    assert toolcaller["active"][AGENT] == second

    key = second.split("#")[0]
    code, out, _ = run(["program", "show", key, "--files", *server], capsys)
    assert code == 0
    assert out.splitlines()[0] == second
    assert "--- lib/keys.py" in out
    assert "picture.png" not in out
    code, out, _ = run(["program", "show", "toolcaller@v4", *server], capsys)
    assert "(built in)" in out.splitlines()[0]
    assert "core/loop/machine.py" in out

    code, out, _ = run(["program", "rollback", "toolcaller", "--agent", AGENT, *server], capsys)
    assert (code, one_line(out)) == (0, f"Active for agent {AGENT}: {first}")
    code, out, _ = run(
        [
            "program",
            "rollback",
            "toolcaller",
            "--agent",
            AGENT,
            "--to",
            key.split("@v")[1],
            *server,
        ],
        capsys,
    )
    assert one_line(out) == f"Active for agent {AGENT}: {second}"


def test_refusals_exit_2_with_one_line(
    server: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def program(run_id, chat_id):\n    yield from\n")
    code, out, err = run(
        ["program", "deploy", "toolcaller", str(bad), "--agent", AGENT, *server], capsys
    )
    assert (code, out) == (2, "")
    assert "program.py line 2" in one_line(err)
    code, _, err = run(["program", "deploy", "autorecall", str(bad), *server], capsys)
    assert code == 2
    assert "autorecall runs inside toolcaller" in one_line(err)
    code, _, err = run(
        ["program", "deploy", "toolcaller", str(tmp_path / "missing"), *server], capsys
    )
    assert code == 2
    assert "no such file or folder" in one_line(err)
    code, _, err = run(["program", "show", "toolcaller@v999", *server], capsys)
    assert code == 2
    assert "toolcaller@v999" in one_line(err)
    code, _, err = run(
        ["program", "rollback", "toolcaller", "--to", "999", "--agent", AGENT, *server], capsys
    )
    assert code == 2
    one_line(err)
    code, _, err = run(["program", "ls", "--addr", server[1], "--token", "wrong"], capsys)
    assert code == 2
    one_line(err)


def test_a_refused_deploy_never_runs_in_the_server(
    live_server: LiveServer, server: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 25: a module whose import writes a file (relative path) and fails: exit 2 with
    the import's error; the file is not in the server's cwd or root (its check process
    ran in a temp dir), nothing was stored."""
    relative = f"ja-cli-check-{uuid.uuid4().hex}.txt"
    bad = tmp_path / "writes.py"
    bad.write_text(f"open({relative!r}, 'w').write('x')\nraise RuntimeError('no thanks')\n")
    with AgentClient(live_server.addr, live_server.token) as client:
        before = client.programs()
    code, out, err = run(
        ["program", "deploy", "toolcaller", str(bad), "--agent", AGENT, *server], capsys
    )
    assert (code, out) == (2, "")
    assert "program.py line 2: import failed: RuntimeError: no thanks" in one_line(err)
    root = live_server.data_dir.parent / "root"
    assert root.is_dir()
    for folder in (Path.cwd(), root):
        assert not (folder / relative).exists()
    with AgentClient(live_server.addr, live_server.token) as client:
        assert client.programs() == before
