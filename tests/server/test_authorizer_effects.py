"""What an authorizer's refusal leaves undone, in its sync and its async form alike (issue 25):
every MCP tool through the SDK's client, and deleting a chat whose turn is running.

The tools are the server's own catalogue (``TOOL_SCHEMAS``, what ``tools/list`` lists to a
caller allowed everything): each is called with arguments that would act (``run_cell``
writes a file, ``chat`` starts a run, ``break_run`` ends one, ``export_notebook`` writes a
notebook); a refused call is a tool error naming the permission and has no effect, an
allowed one acts. The long run the tools aim at waits on a slow model reply of the fake
provider.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from jupyter_agent.server.mcp.schemas import TOOL_SCHEMAS, Args
from tests.plugins.authorizers import AUTHORIZERS, authorizer_config
from tests.server.helpers import call, new_chat, refused

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("server_kernelspec")]

FORMS = ["sync", "async"]
SLOW = {"text": "Thinking slowly.", "delay_s": 60}
QUICK = {"text": "Hello."}


@pytest.fixture
def jp_base_url() -> str:
    return "/"


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": [SLOW, QUICK, QUICK, QUICK]})


@pytest.fixture
def jp_server_config(policy: str, form: str, fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    agent = {"pool_size": 0, "tiers": {"codegen": tier}}
    return authorizer_config(AUTHORIZERS[policy][form], agent)


@pytest.fixture
def mcp(jp_http_port: int, jp_auth_header: dict[str, str], jp_asyncio_loop: Any, fetch: Any) -> Any:
    """``mcp(fn)``: ``await fn(client)`` with a connected SDK client, on the server's loop."""
    url = f"http://127.0.0.1:{jp_http_port}/agent/mcp"

    def run(fn: Callable[[Client], Awaitable[Any]]) -> Any:
        async def go() -> Any:
            async with (
                httpx2.AsyncClient(headers=jp_auth_header, timeout=120) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                return await fn(client)

        return jp_asyncio_loop.run_until_complete(go())

    run.url = url  # type: ignore[attr-defined]
    return run


def until(spin: Any, what: Callable[[], bool], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not what():
        assert time.monotonic() < deadline, "timed out"
        spin(0.05)


def start_slow_run(service: Any, fake: Any, spin: Any, jp_asyncio_loop: Any, chat_id: str) -> str:
    """A run of ``chat_id`` started from inside, waiting on the fake's slow reply."""
    sent = jp_asyncio_loop.run_until_complete(service.manager.send(chat_id, text="go slowly"))
    until(spin, lambda: len(fake.requests) >= 1)
    assert service.manager.active_run_id(chat_id) == sent["run_id"]
    return str(sent["run_id"])


def end_run(service: Any, jp_asyncio_loop: Any, run_id: str) -> None:
    jp_asyncio_loop.run_until_complete(service.manager.break_run(run_id, hard=True))
    jp_asyncio_loop.run_until_complete(service.manager.wait(run_id))


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("policy", ["deny"])
def test_deny_all_refuses_before_any_mcp(
    mcp: Any, jp_asyncio_loop: Any, jp_auth_header: dict[str, str], agent_service: Any
) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    headers = {**jp_auth_header, "Accept": "application/json, text/event-stream"}

    async def post() -> Any:
        async with httpx2.AsyncClient() as http:
            return await http.post(mcp.url, json=initialize, headers=headers)

    answer = jp_asyncio_loop.run_until_complete(post())
    assert answer.status_code == 403
    assert answer.json()["reason"] == "Forbidden"
    assert "mcp-session-id" not in answer.headers
    with pytest.raises(BaseExceptionGroup) as info:
        mcp(lambda c: c.list_tools())
    assert info.group_contains(MCPError, depth=None)
    assert agent_service.store.list_chats() == []


def tool_calls(target: Path, chat_id: str, run_id: str) -> dict[str, dict[str, Any]]:
    """One acting call of every tool of the server, ``break_run`` last."""
    calls = {
        "run_cell": {"code": f"open({str(target)!r}, 'w').write('1')"},
        "export_notebook": {"chat_id": chat_id, "write": True},
        "chat": {"text": "hello", "wait": False},
        "list_runs": {},
        "show_run": {"run_id": run_id},
        "break_run": {"run_id": run_id, "hard": True},
    }
    assert set(calls) == set(TOOL_SCHEMAS), "a new MCP tool needs its acting call here"
    return calls


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("policy", ["read", "all"])
def test_every_tool_acts_only_when_allowed(
    policy: str,
    form: str,
    mcp: Any,
    fake: Any,
    spin: Any,
    jp_asyncio_loop: Any,
    agent_service: Any,
    jp_root_dir: Path,
    tmp_path: Path,
) -> None:
    store = agent_service.store
    chat = store.create_chat(chat_id="chat_01TOOLS", title="t", now="2026-01-01T00:00:00Z")
    run_id = start_slow_run(agent_service, fake, spin, jp_asyncio_loop, chat.id)
    target = tmp_path / "written_by_run_cell.txt"
    calls = tool_calls(target, chat.id, run_id)
    grants = AUTHORIZERS[policy][form].grants
    before = set(jp_root_dir.rglob("*.ipynb"))

    async def go(client: Client) -> Any:
        listed = [t.name for t in (await client.list_tools()).tools]
        return listed, {name: await client.call_tool(name, args) for name, args in calls.items()}

    listed, results = mcp(go)
    needs = {n: TOOL_SCHEMAS[n].permission(Args(n, calls[n])) for n in calls}
    allowed = {n: grants is None or needs[n] in grants for n in calls}
    if policy == "all":
        assert listed == list(TOOL_SCHEMAS)
    else:
        assert listed == [n for n, s in TOOL_SCHEMAS.items() if s.permission(Args(n, {})) == "read"]
        assert not all(allowed.values())
    for name, result in results.items():
        assert result.is_error == (not allowed[name]), (name, _text(result))
        if not allowed[name]:
            assert f"this needs '{needs[name]}'" in _text(result), name
    assert target.exists() == allowed["run_cell"]
    if allowed["run_cell"]:
        assert target.read_text() == "1"
    written = set(jp_root_dir.rglob("*.ipynb")) - before
    assert bool(written) == allowed["export_notebook"], written
    chats = store.list_chats()
    assert len(chats) == (2 if allowed["chat"] else 1)
    if allowed["break_run"]:
        until(spin, lambda: agent_service.manager.active_run_id(chat.id) is None)
    else:
        spin(0.3)
        assert agent_service.manager.active_run_id(chat.id) == run_id  # still going
        end_run(agent_service, jp_asyncio_loop, run_id)
    for other in chats:
        until(spin, lambda c=other: agent_service.manager.active_run_id(c.id) is None)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("policy", ["no_execute"])
def test_deleting_a_chat_whose_turn_runs_needs_execute(
    fetch: Any, fake: Any, spin: Any, jp_asyncio_loop: Any, agent_service: Any
) -> None:
    chat_id = new_chat(fetch, "mine")  # read + write: creating is allowed
    run_id = start_slow_run(agent_service, fake, spin, jp_asyncio_loop, chat_id)
    answer = refused(fetch, "agent", "chats", chat_id, status=403, method="DELETE")
    assert answer["reason"] == "Forbidden"
    assert "needs 'execute'" in answer["message"]
    refused(fetch, "agent", "break", run_id, status=403, method="POST", body={"hard": True})
    spin(0.3)
    assert agent_service.manager.active_run_id(chat_id) == run_id  # the run keeps going
    assert call(fetch, "agent", "chats", chat_id)[0] == 200
    end_run(agent_service, jp_asyncio_loop, run_id)
    assert call(fetch, "agent", "chats", chat_id, method="DELETE")[0] == 204
