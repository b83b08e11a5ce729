"""``jupyter-agent trace ls --owner`` (issue 19) against a real server with three identities.

The CLI runs in a thread (it blocks on HTTP) while the test spins the server's loop. alice's
run is real; carol is an admin (``admin_users`` and the default authorizer's grant), bob is
not.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.plugins.identities import identity_server_config
from tests.server.helpers import run_cli
from tests.server.test_owners import TOKENS, _chat, _send, _wait

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": [{"text": "Hello."}], "repeat": True})


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {"pool_size": 0, "tiers": {"codegen": tier}, "admin_users": ["carol"]}


@pytest.fixture
def jp_server_config(agent_config: dict[str, Any]) -> dict[str, Any]:
    return identity_server_config(agent_config, TOKENS)


def test_trace_ls_owner_lists_another_owners_runs_for_an_admin_only(
    fetch: Any, spin: Any, jp_http_port: int, jp_base_url: str, capsys: Any
) -> None:
    chat_id = _chat(fetch, "alice", "alice's")
    run_id = _send(fetch, "alice", chat_id, "hello")
    _wait(fetch, spin, "alice", chat_id, run_id)
    addr = f"http://127.0.0.1:{jp_http_port}{jp_base_url}"

    def server(who: str) -> list[str]:
        return ["--addr", addr, "--token", TOKENS[who]]

    assert run_cli(spin, ["trace", "ls", "--owner", "*", "--json", *server("carol")]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert {(r["run_id"], r["owner"]) for r in runs} == {(run_id, "alice")}
    assert run_cli(spin, ["trace", "ls", "--owner", "alice", *server("carol")]) == 0
    table = capsys.readouterr().out
    assert run_id in table
    assert "owner" in table
    assert "alice" in table
    # carol's own runs (none): the default.
    assert run_cli(spin, ["trace", "ls", "--json", *server("carol")]) == 0
    assert json.loads(capsys.readouterr().out)["runs"] == []

    assert run_cli(spin, ["trace", "ls", "--owner", "alice", *server("bob")]) == 2
    err = capsys.readouterr().err
    assert "only an admin" in err
    assert run_id not in err
    assert run_cli(spin, ["trace", "ls", "--json", *server("alice")]) == 0
    assert [r["run_id"] for r in json.loads(capsys.readouterr().out)["runs"]] == [run_id]
