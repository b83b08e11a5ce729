"""What an authorizer's refusal leaves undone, in its sync and its async form alike (issue 25):
every MCP tool through the SDK's client, and deleting a chat whose turn is running.

The tools are the server's own catalogue (``TOOL_SCHEMAS``, what ``tools/list`` lists to a
caller allowed everything): each is called with arguments that would act (``run_cell``
writes a file, ``chat`` starts a run, ``break_run`` ends one, ``export_notebook`` writes a
notebook, ``fork_chat`` makes a chat, ``rerun`` starts a rerun, ``run_eval`` starts an eval);
a refused call is a tool error naming the permission and has no effect, an allowed one
acts. The long run the tools aim at waits on a slow model reply of the fake provider; the
ended run (``rerun``, ``diff_runs``) and the ended eval (``eval_status``) are made first.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
import nbformat
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
    return fake_provider({"steps": [SLOW, *[QUICK] * 12]})


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


def quick_run(service: Any, jp_asyncio_loop: Any, chat_id: str) -> str:
    """A run of ``chat_id`` answered at once by the fake, waited for to its end."""
    sent = jp_asyncio_loop.run_until_complete(service.manager.send(chat_id, text="say hello"))
    jp_asyncio_loop.run_until_complete(service.manager.wait(sent["run_id"]))
    ended = service.store.get_run(sent["run_id"])
    assert ended is not None
    assert ended.status != "running"
    return str(sent["run_id"])


def write_suite(root: Path) -> str:
    """A one-case eval suite under the server's root; its contents path."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("Say hello."),
        nbformat.v4.new_code_cell('assert "Hello" in reply, reply'),
    ]
    nbformat.write(nb, root / "authz-suite.ipynb")
    return "authz-suite.ipynb"


def finished_eval(service: Any, jp_asyncio_loop: Any, suite: str) -> dict[str, Any]:
    """An eval of ``suite`` started from inside and waited for: its state (done)."""
    evals = service.services.evals
    state = jp_asyncio_loop.run_until_complete(evals.start(owner="", suite=suite))
    jp_asyncio_loop.run_until_complete(evals.wait(state["eval_id"]))
    state = jp_asyncio_loop.run_until_complete(evals.get(state["eval_id"], owner=""))
    assert (state["status"], state["passed"], state["total"]) == ("done", 1, 1), state
    return dict(state)


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


def tool_calls(
    target: Path, chat_id: str, run_id: str, ended: str, other: str, suite: str, eval_id: str
) -> dict[str, dict[str, Any]]:
    """One acting call of every tool of the server, ``break_run`` last: ``run_id`` is the
    slow run, ``ended`` an ended run of chat ``chat_id`` (its one turn), ``other`` another
    ended run, ``eval_id`` an ended eval."""
    calls = {
        "run_cell": {"code": f"open({str(target)!r}, 'w').write('1')"},
        "export_notebook": {"chat_id": chat_id, "write": True},
        "chat": {"text": "hello", "wait": False},
        "list_runs": {},
        "show_run": {"run_id": run_id},
        "fork_chat": {"chat_id": chat_id, "turn": 1},
        "diff_runs": {"run_a": ended, "run_b": other},
        "rerun": {"run_id": ended},
        "run_eval": {"suite": suite, "wait": False},
        "eval_status": {"eval_id": eval_id},
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
    services = agent_service.services
    chat = store.create_chat(chat_id="chat_01TOOLS", title="t", now="2026-01-01T00:00:00Z")
    run_id = start_slow_run(agent_service, fake, spin, jp_asyncio_loop, chat.id)
    done = store.create_chat(chat_id="chat_01ENDED", title="e", now="2026-01-01T00:00:00Z")
    ended = quick_run(agent_service, jp_asyncio_loop, done.id)
    suite = write_suite(jp_root_dir)
    old_eval = finished_eval(agent_service, jp_asyncio_loop, suite)
    other = old_eval["results"][0]["run_id"]
    assert other
    assert other != ended
    target = tmp_path / "written_by_run_cell.txt"
    calls = tool_calls(target, done.id, run_id, ended, other, suite, old_eval["eval_id"])
    grants = AUTHORIZERS[policy][form].grants
    before = set(jp_root_dir.rglob("*.ipynb"))
    asked = len(fake.requests)

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
            assert result.structured_content is None, name
    assert target.exists() == allowed["run_cell"]
    if allowed["run_cell"]:
        assert target.read_text() == "1"

    # What the allowed calls made, each waited for to its end.
    out = {n: r.structured_content for n, r in results.items() if not r.is_error}
    rerun_id = out["rerun"]["run_id"] if allowed["rerun"] else None
    if rerun_id is not None:
        assert out["rerun"]["rerun_of"] == ended
        jp_asyncio_loop.run_until_complete(services.runs.wait(rerun_id))
    new_eval = out["run_eval"]["eval_id"] if allowed["run_eval"] else None
    if new_eval is not None:
        assert new_eval != old_eval["eval_id"]
        jp_asyncio_loop.run_until_complete(services.evals.wait(new_eval))
        state = jp_asyncio_loop.run_until_complete(services.evals.get(new_eval, owner=""))
        assert (state["status"], state["passed"], state["total"]) == ("done", 1, 1), state

    # Read-only tools answered for the real ids.
    assert out["diff_runs"]["identical"] is False
    assert out["eval_status"]["eval_id"] == old_eval["eval_id"]
    assert out["eval_status"]["status"] == "done"
    assert out["eval_status"]["results"] == old_eval["results"]

    chats = store.list_chats()
    made = {c.id for c in chats} - {chat.id, done.id}
    expected: set[str] = set()
    if allowed["chat"]:
        expected.add(out["chat"]["chat_id"])
    if allowed["fork_chat"]:
        fork = out["fork_chat"]
        assert fork["forked_from"] == {"chat_id": done.id, "turn": 1}
        assert len(store.list_turns(fork["id"])) == 1
        expected.add(fork["id"])
    assert made == expected
    assert len(chats) == 2 + allowed["chat"] + allowed["fork_chat"]
    assert len(store.list_turns(done.id)) == 1  # the forked chat is unchanged

    runs = store.list_runs(limit=200)[0]
    reruns = [r.run_id for r in runs if r.rerun_of is not None]
    assert reruns == ([rerun_id] if rerun_id else [])
    if rerun_id is not None:
        rerun = store.get_run(rerun_id)
        assert rerun.rerun_of == ended
        assert rerun.status != "running"
    evals = {r.chat_id for r in runs if r.chat_id.startswith("eval_")}
    assert evals == {old_eval["eval_id"], *([new_eval] if new_eval else [])}

    written = set(jp_root_dir.rglob("*.ipynb")) - before
    if new_eval is not None:  # the new eval's report
        report = jp_root_dir / state["report"]
        assert report in written
        written.discard(report)
    assert bool(written) == allowed["export_notebook"], written

    if allowed["break_run"]:
        until(spin, lambda: agent_service.manager.active_run_id(chat.id) is None)
    else:
        spin(0.3)
        assert agent_service.manager.active_run_id(chat.id) == run_id  # still going
        end_run(agent_service, jp_asyncio_loop, run_id)
    for other_chat in chats:
        until(spin, lambda c=other_chat: agent_service.manager.active_run_id(c.id) is None)
    # Each acting call that was refused asked the model nothing; each allowed one did.
    assert len(fake.requests) - asked == sum(allowed[n] for n in ("chat", "rerun", "run_eval"))


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
