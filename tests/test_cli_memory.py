"""``jupyter agent memory ...`` against a real ``jupyter server`` (the ``live_server``
subprocess): add, ls, search, edit, rm, export; every refusal exits 2 with one line and
never repeats a secret."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.cli.main import main
from jupyter_agent.client import AgentClient
from tests.plugins.live_server import LiveServer


@pytest.fixture
def server(live_server: LiveServer) -> Iterator[list[str]]:
    """``--addr``/``--token`` of the live server, its memory empty before and after."""

    def clear() -> None:
        with AgentClient(live_server.addr, live_server.token) as client:
            for memory in client.list_memories():
                client.delete_memory(memory["id"])

    clear()
    yield ["--addr", live_server.addr, "--token", live_server.token]
    clear()


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


def test_add_ls_search_edit_rm_export(
    server: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        ["memory", "add", "Reports are due on Fridays", "--category", "Project", *server], capsys
    )
    assert code == 0
    assert out.startswith("Saved mem_")
    assert out.strip().endswith("(project): Reports are due on Fridays")
    code, out, _ = run(["memory", "add", "The person likes dark plots", "--json", *server], capsys)
    assert code == 0
    dark = json.loads(out)
    assert (dark["category"], dark["author"]) == ("general", "person")

    code, out, _ = run(["memory", "ls", *server], capsys)
    assert code == 0
    assert "Reports are due on Fridays" in out
    assert "The person likes dark plots" in out
    assert out.index("dark plots") < out.index("Fridays")  # newest first
    assert "Categories: general (1), project (1)" in out
    code, out, _ = run(["memory", "ls", "--category", "project", "--json", *server], capsys)
    page = json.loads(out)
    assert [m["text"] for m in page["memories"]] == ["Reports are due on Fridays"]
    [report_id] = [m["id"] for m in page["memories"]]

    code, out, _ = run(["memory", "search", "when are reports due", *server], capsys)
    assert code == 0
    assert "Fridays" in out
    assert "dark plots" not in out
    assert "score" in out
    code, out, _ = run(["memory", "search", "reports", "-k", "1", "--json", *server], capsys)
    [hit] = json.loads(out)["memories"]
    assert hit["id"] == report_id
    assert 0 < hit["score"] <= 1
    code, out, _ = run(["memory", "search", "zebra unicorn", *server], capsys)
    assert (code, out.strip()) == (0, "No memories.")

    code, out, _ = run(
        ["memory", "edit", report_id, "--text", "Reports are due on Thursdays", *server], capsys
    )
    assert code == 0
    assert out.strip() == f"Changed {report_id} (project): Reports are due on Thursdays"

    code, out, _ = run(["memory", "export", *server], capsys)
    exported = json.loads(out)
    assert sorted(m["text"] for m in exported["memories"]) == [
        "Reports are due on Thursdays",
        "The person likes dark plots",
    ]
    target = tmp_path / "memories.json"
    code, out, _ = run(["memory", "export", "-o", str(target), *server], capsys)
    assert (code, out.strip()) == (0, f"Wrote {target} (2 memories)")
    assert json.loads(target.read_text(encoding="utf-8")) == exported

    code, out, _ = run(["memory", "rm", report_id, *server], capsys)
    assert (code, out.strip()) == (0, f"Deleted {report_id}")
    code, out, _ = run(["memory", "ls", "--json", *server], capsys)
    assert [m["id"] for m in json.loads(out)["memories"]] == [dark["id"]]


def test_refusals_exit_2_with_one_line_and_change_nothing(
    server: list[str], live_server: LiveServer, monkeypatch: Any, capsys: Any
) -> None:
    code, out, _ = run(["memory", "add", "the one fact", "--json", *server], capsys)
    kept = json.loads(out)
    cases: list[tuple[list[str], str]] = [
        (["memory", "add", ""], "jupyter agent: 'text' is empty: a memory is one fact in words"),
        (["memory", "add", "x" * 2001], "jupyter agent: 'text' is 2001 characters"),
        (["memory", "add", "fine", "--category", "a/b"], "jupyter agent: 'category' must be"),
        (["memory", "ls", "--category", "Bad/Cat"], "jupyter agent: 'category' must be"),
        (["memory", "search", "  "], "jupyter agent: memory search needs a query"),
        (["memory", "search", "q", "-k", "0"], "jupyter agent: 'limit' must be an integer"),
        (["memory", "search", "q", "-k", "51"], "jupyter agent: 'limit' must be an integer"),
        (["memory", "rm", "mem_01NOPE"], "jupyter agent: no memory 'mem_01NOPE'"),
        (["memory", "edit", "mem_01NOPE", "--text", "x"], "jupyter agent: no memory"),
        (["memory", "edit", kept["id"]], "jupyter agent: memory edit needs --text or --category"),
        (["memory", "edit", kept["id"], "--text", ""], "jupyter agent: 'text' is empty"),
    ]
    for argv, says in cases:
        code, out, err = run([*argv, *server], capsys)
        assert code == 2, (argv, out, err)
        assert one_line(err).startswith(says), (argv, err)
        assert out == ""

    secret_key = "sk-proj-" + secrets.token_hex(20)
    for text, secret in (
        (f"my key is {secret_key}", secret_key),
        (f"the server token is {live_server.token}", live_server.token),
    ):
        for argv in (["memory", "add", text], ["memory", "edit", kept["id"], "--text", text]):
            code, out, err = run([*argv, *server], capsys)
            assert code == 2
            line = one_line(err)
            assert line.startswith("jupyter agent: Not saved: the text "), line
            assert secret not in err
            assert secret not in out

    code, out, err = run(["memory", "export", "-o", "/nonexistent/dir/m.json", *server], capsys)
    assert (code, out) == (2, "")
    assert one_line(err).startswith("jupyter agent: No such file or directory")

    code, out, _ = run(["memory", "ls", "--json", *server], capsys)
    assert json.loads(out)["memories"] == [kept]

    monkeypatch.delenv("JUPYTER_TOKEN", raising=False)
    code, _, err = run(["memory", "ls", "--addr", live_server.addr], capsys)
    assert code == 2
    assert one_line(err).startswith("jupyter agent: no token: pass --token or set JUPYTER_TOKEN")
    code, _, err = run(["memory", "ls", "--addr", live_server.addr, "--token", "wrong"], capsys)
    assert (code, one_line(err)) == (2, "jupyter agent: the server refused the token (403)")
    code, _, err = run(
        ["memory", "export", "--addr", "http://127.0.0.1:9/", "--token", "t"], capsys
    )
    assert code == 2
    assert "cannot reach the agent server at http://127.0.0.1:9/" in one_line(err)
