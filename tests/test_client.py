"""AgentClient against real HTTP servers: a loopback tornado stub with the real route shapes
(errors, base URL, token, events WebSocket), unreachable ports, and a real ``jupyter
server`` subprocess with the extension and the fake provider (a chat run, its events,
then the trace verbs against it)."""

from __future__ import annotations

import asyncio
import json
import secrets
from pathlib import Path

import nbformat
import pytest

from jupyter_agent.client import AgentClient, ClientError
from jupyter_agent.core.loop.machine import PROGRAM
from jupyter_agent.trace.show import CUT_MARK
from tests.cli_support import record_run
from tests.rest_stub import StubState, free_port, stub_server

LONG_QUESTION = "why? " * 1000


@pytest.fixture
def stub(tmp_path: Path):
    token = "tok-" + secrets.token_hex(8)
    runs = tmp_path / "runs"
    runs.mkdir()
    record_run(runs / "run_01CLI.jsonl")
    record_run(runs / "run_01LONG.jsonl", run_id="run_01LONG", question=LONG_QUESTION)
    state = StubState(token=token, runs=runs)
    with stub_server(state, base_url="/user/ada/") as addr:
        yield addr, state


def test_status_under_a_base_url_with_the_token(stub):
    addr, state = stub
    with AgentClient(addr, state.token) as client:
        assert client.status()["version"] == "0.0.stub"
    # A URL as Jupyter prints it: the token comes from the query.
    with AgentClient(f"{addr.rstrip('/')}?token={state.token}") as client:
        assert client.status()["demo"] is True


def test_refused_token_is_a_403_client_error_without_the_token(stub):
    addr, _ = stub
    wrong = "wrong-" + secrets.token_hex(8)
    with AgentClient(addr, wrong) as client, pytest.raises(ClientError) as info:
        client.status()
    err = info.value
    assert err.status == 403
    assert str(err) == "the server refused the token (403)"
    assert wrong not in repr(err)
    assert wrong not in repr(client)
    with AgentClient(addr) as client, pytest.raises(ClientError) as info:
        client.status()  # no token at all: said so, not "refused the token"
    assert (info.value.status, info.value.reason) == (403, "no_token")
    assert str(info.value) == f"no token was given, and the server at {addr} needs one (403)"
    assert info.value.addr == addr


def test_a_token_without_the_permission_says_what_was_refused(stub):
    addr, state = stub
    with AgentClient(addr, state.token) as client, pytest.raises(ClientError) as info:
        client._json("GET", "agent/forbidden")
    assert (info.value.status, info.value.reason) == (403, "forbidden")
    assert str(info.value) == (
        "the server refused the request (403): User is not authorized to execute on "
        "resource: agent."
    )


def test_server_message_and_reason_are_kept(stub):
    addr, state = stub
    with AgentClient(addr, state.token) as client:
        with pytest.raises(ClientError) as info:
            client.run("run_missing")
        assert (info.value.status, info.value.reason) == (404, "unknown_run")
        assert str(info.value) == "unknown run: run_missing"
        with pytest.raises(ClientError) as info:
            client.send("chat_1", None)  # type: ignore[arg-type]
        assert (info.value.status, str(info.value)) == (400, "text must be a string")


def test_non_json_error_and_unknown_route(stub):
    addr, state = stub
    with AgentClient(addr, state.token) as client:
        with pytest.raises(ClientError) as info:
            client._json("GET", "agent/broken")
        assert info.value.status == 502
        assert str(info.value) == "HTTP 502"
        with pytest.raises(ClientError) as info:
            client.settings()  # not served by the stub: tornado's plain 404
        assert info.value.status == 404
        assert "agent/settings" in str(info.value)


def test_unreachable_server(tmp_path):
    port = free_port()  # bound then released: nothing listens there
    client = AgentClient(f"http://127.0.0.1:{port}/", "t", timeout=5)
    with client, pytest.raises(ClientError) as info:
        client.status()
    assert info.value.status is None
    assert info.value.reason == "unreachable"
    assert str(info.value).startswith(f"cannot reach the agent server at http://127.0.0.1:{port}/")


def test_address_without_scheme_or_slash_and_credentials_never_shown():
    client = AgentClient("127.0.0.1:1/base", "t")
    assert client.addr == "http://127.0.0.1:1/base/"
    hidden = AgentClient("http://user:pw-canary@127.0.0.1:1/?token=tok-canary", None)
    assert "canary" not in hidden.addr
    assert "canary" not in repr(hidden)
    assert (
        hidden.events_url("chat/../x", since=3)
        == "ws://127.0.0.1:1/agent/chats/chat%2F..%2Fx/events?since=3"
    )


def test_runs_run_stats_notebook_and_raw_log(stub):
    addr, state = stub
    with AgentClient(addr, state.token) as client:
        page = client.runs(program="toolcaller", limit=5)
        assert [r["run_id"] for r in page["runs"]] == ["run_01LONG", "run_01CLI"]
        run = client.run("run_01CLI")
        assert run["turn"]["run_id"] == "run_01CLI"
        assert CUT_MARK in json.dumps(client.run("run_01LONG"), ensure_ascii=False)
        full = client.run("run_01LONG", full=True)
        assert CUT_MARK not in json.dumps(full, ensure_ascii=False)
        assert full["steps"][0]["text"] == LONG_QUESTION
        stats = client.run_stats("run_01CLI")
        assert stats["totals"]["calls"] == 2
        nb = client.run_notebook("run_01CLI")
        assert nb["nbformat"] == 4
        raw = client.run_log("run_01CLI")
        assert raw == (state.runs / "run_01CLI.jsonl").read_text()


def test_send_passes_view_attachments_and_control(stub):
    addr, state = stub
    with AgentClient(addr, state.token) as client:
        answer = client.send(
            "chat_1", "hi", view={"path": "a.ipynb"}, attachments=["d.csv"], control=None
        )
    assert answer == {"run_id": "run_01STUB", "routed": "run"}
    assert state.sent == [
        {"chat_id": "chat_1", "text": "hi", "view": {"path": "a.ipynb"}, "attachments": ["d.csv"]}
    ]


async def test_events_since_seq_until_the_server_closes(stub):
    addr, state = stub
    state.events = [
        {"type": t, "chat_id": "chat_1", "run_id": "run_1", "seq": i}
        for i, t in enumerate(["run_start", "bubble", "reply", "run_end"], start=1)
    ]
    state.events.append({"type": "run_start", "chat_id": "chat_2", "run_id": "run_2", "seq": 1})
    client = AgentClient(addr, state.token)
    got = [e async for e in client.events("chat_1", since=1)]
    assert [(e["seq"], e["type"]) for e in got] == [(2, "bubble"), (3, "reply"), (4, "run_end")]
    bad = AgentClient(addr, "nope")
    with pytest.raises(ClientError) as info:
        async for _ in bad.events("chat_1"):
            pass
    assert info.value.status == 403
    gone = AgentClient(f"http://127.0.0.1:{free_port()}/", "t", timeout=5)
    with pytest.raises(ClientError) as info:
        async for _ in gone.events("chat_1"):
            pass
    assert info.value.reason == "unreachable"


# --- against a real Jupyter server with the extension ------------------------------------


def test_live_status_and_refused_token(live_server):
    with AgentClient(live_server.addr, live_server.token) as client:
        status = client.status()
    assert status["tiers"]["codegen"]["provider"] == "fake"
    assert status["demo"] is False
    with AgentClient(live_server.addr, "wrong-token") as client, pytest.raises(ClientError) as info:
        client.status()
    assert (info.value.status, str(info.value)) == (403, "the server refused the token (403)")


async def test_live_chat_run_then_trace_verbs(live_server, tmp_path, capsys):
    from jupyter_agent.cli.main import main

    addr, token = live_server.addr, live_server.token
    with AgentClient(addr, token) as client:
        chat = client.create_chat("cli test")
        sent = client.send(chat["id"], "what is 6*7?")
        assert sent["routed"] == "run"
        run_id = sent["run_id"]
        types = []

        async def read() -> None:
            async for event in client.events(chat["id"], since=0):
                types.append(event["type"])
                if event["type"] == "run_end" and event["run_id"] == run_id:
                    return

        await asyncio.wait_for(read(), 120)
        assert "reply" in types
        assert client.chat(chat["id"])["turns"][-1]["run_id"] == run_id

    server = ["--addr", addr, "--token", token]
    assert main(["trace", "ls", "--json", *server]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert run_id in [r["run_id"] for r in runs]
    assert main(["trace", "show", run_id, *server]) == 0
    assert "6 * 7" in capsys.readouterr().out
    assert main(["trace", "show", run_id, "--stats", "--json", *server]) == 0
    assert json.loads(capsys.readouterr().out)["stats"]["totals"]["calls"] == 2
    # The test process's data dir is not the server's: the log is fetched (?log=raw).
    assert main(["replay", run_id, *server]) == 0
    assert "identical" in capsys.readouterr().out
    out = tmp_path / "run.ipynb"
    assert main(["export", run_id, "-o", str(out), *server]) == 0
    nbformat.validate(nbformat.read(out, as_version=4))


# The stored program is "toolcaller@v5" (core.loop.PROGRAM), written by the real run path.
LIVE_FILTERS = [
    ("toolcaller", True),
    (PROGRAM, True),
    ("toolcall", False),
    ("toolcaller@v1", False),  # an older version than the runs here
    ("toolcaller@v_", False),
    ("tool%", False),
]


@pytest.mark.parametrize(("program", "found"), LIVE_FILTERS)
def test_live_runs_filtered_by_program(live_server, live_server_run, program, found):
    _, run_id = live_server_run
    with AgentClient(live_server.addr, live_server.token) as client:
        runs = client.runs(program=program, limit=1000)["runs"]
    assert (run_id in [r["run_id"] for r in runs]) is found
    assert all(r["program"] == PROGRAM for r in runs)
    if not found:
        assert runs == []
