"""``agent/mcp``: the SDK's own client against a real Jupyter server with the extension.

The client (``mcp.Client`` over the SDK's streamable HTTP transport) runs on the server's
loop (``jp_asyncio_loop``), like ``fetch``; model replies come from the fake provider, cells
run in real agent kernels.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

import httpx2
import pytest
from jupyter_server.auth.authorizer import Authorizer
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.server.helpers import call, new_chat, wait_turn

if sys.version_info < (3, 11):  # a builtin from 3.11 on (anyio depends on the backport)
    from exceptiongroup import BaseExceptionGroup

pytestmark = pytest.mark.timeout(180)

SCRIPT = [
    {"text": "Let me compute.", "cells": ["print(6 * 7)\n6 * 7"]},
    {"text": "The answer is **42**."},
]
SLOW = [
    {"text": "Slowly.", "cells": ["import time\ntime.sleep(1.0)\nprint('slept')"]},
    {"text": "Done sleeping."},
]
TOOLS = [
    "chat", "break_run", "list_runs", "show_run", "export_notebook", "run_cell",
    "fork_chat", "diff_runs", "rerun", "run_eval", "eval_status",
]  # fmt: skip


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": SCRIPT, "repeat": True})


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {"pool_size": 0, "tiers": {"codegen": tier}}


@pytest.fixture
def jp_base_url() -> str:
    return "/user/someone/"  # a prefix: the route lives under the base URL


@pytest.fixture
def mcp_url(jp_http_port: int, jp_base_url: str) -> str:
    return f"http://127.0.0.1:{jp_http_port}{jp_base_url}agent/mcp"


Session = Callable[..., Any]


@pytest.fixture
def session(
    mcp_url: str, jp_auth_header: dict[str, str], jp_asyncio_loop: Any, fetch: Any
) -> Session:
    """``session(fn, headers=..., mode=...)``: ``await fn(client)`` with a connected client
    (the test server's token by default), run to completion on the server's loop (``fetch``
    is asked for: it is what makes the test server listen)."""

    def run(
        fn: Callable[[Client], Awaitable[Any]],
        *,
        headers: dict[str, str] | None = None,
        mode: str = "legacy",
    ) -> Any:
        async def go() -> Any:
            sent = jp_auth_header if headers is None else headers
            async with httpx2.AsyncClient(headers=sent, timeout=120) as http:
                transport = streamable_http_client(mcp_url, http_client=http)
                async with Client(transport, mode=mode) as client:
                    return await fn(client)

        return jp_asyncio_loop.run_until_complete(go())

    return run


def _names(tools: Any) -> list[str]:
    return [t.name for t in tools.tools]


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_tools_and_templates_are_listed(session: Session, agent_service: Any, mode: str) -> None:
    async def go(client: Client) -> Any:
        return await client.list_tools(), await client.list_resource_templates()

    tools, templates = session(go, mode=mode)
    assert _names(tools) == TOOLS
    chat = next(t for t in tools.tools if t.name == "chat")
    assert chat.input_schema["required"] == ["text"]
    assert set(chat.input_schema["properties"]) == {"text", "chat_id", "wait", "timeout_s", "agent"}
    assert chat.description
    assert "wait" in chat.description
    assert [t.uri_template for t in templates.resource_templates] == [
        "agent://chats/{chat_id}",
        "agent://runs/{run_id}",
    ]


def test_no_token_is_refused(mcp_url: str, jp_asyncio_loop: Any, session: Session) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}

    async def post(headers: dict[str, str]) -> Any:
        async with httpx2.AsyncClient() as http:
            return await http.post(mcp_url, json=body, headers=headers)

    for headers in ({}, {"Authorization": "token wrong"}, {"Authorization": "Bearer wrong"}):
        answer = jp_asyncio_loop.run_until_complete(post(headers))
        assert answer.status_code == 403, headers
        assert set(answer.json()) == {"message", "reason"}  # Jupyter's refusal, no MCP body
    # The SDK's client fails to connect (it reports the refused initialize as an error).
    with pytest.raises(BaseExceptionGroup) as info:
        session(lambda c: c.list_tools(), headers={})
    assert info.group_contains(MCPError, match="error response", depth=None)


def test_a_bearer_token_works(session: Session, jp_auth_header: dict[str, str]) -> None:
    token = jp_auth_header["Authorization"].split()[1]

    async def go(client: Client) -> Any:
        return await client.list_tools()

    assert _names(session(go, headers={"Authorization": f"Bearer {token}"})) == TOOLS


class NoExecuteAuthorizer(Authorizer):  # type: ignore[misc]
    """Everything but ``execute``."""

    asked: ClassVar[list[str]] = []

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        self.asked.append(action)
        return action != "execute"


@pytest.mark.parametrize(
    "jp_server_config",
    [
        {
            "ServerApp": {
                "jpserver_extensions": {"jupyter_agent": True},
                "authorizer_class": NoExecuteAuthorizer,
            },
            "JupyterAgent": {"pool_size": 0},
        }
    ],
)
def test_a_user_without_execute_may_read_but_not_chat(session: Session, agent_service: Any) -> None:
    async def go(client: Client) -> Any:
        listed = await client.list_tools()
        chat = await client.call_tool("chat", {"text": "hello"})
        runs = await client.call_tool("list_runs", {})
        export = await client.call_tool("export_notebook", {"chat_id": "chat_x", "write": True})
        return listed, chat, runs, export

    listed, chat, runs, export = session(go)
    assert _names(listed) == [
        "list_runs",
        "show_run",
        "export_notebook",
        "diff_runs",
        "eval_status",
    ]
    assert chat.is_error
    assert "'execute'" in _text(chat)
    assert not runs.is_error
    assert runs.structured_content == {"runs": [], "next": None}
    assert export.is_error
    assert "'execute'" in _text(export)
    assert agent_service.store.list_chats() == []  # nothing happened


def _same_turn(turn: dict[str, Any]) -> dict[str, Any]:
    """A turn without what differs between two runs of one script (ids, times)."""
    drop = {"id", "chat_id", "run_id", "created", "durationMs", "traceRef"}
    clean = {k: v for k, v in turn.items() if k not in drop}
    # The system prompt names the chat's id, so its fingerprint differs with the chat.
    clean["llm"] = {**turn["llm"], "fingerprints": {**turn["llm"]["fingerprints"], "system": ""}}
    return clean


@pytest.mark.usefixtures("server_kernelspec")
def test_chat_through_mcp_gives_the_rest_turn(
    session: Session, fetch: Any, spin: Any, agent_service: Any
) -> None:
    agent_service.manager.recall = False  # the REST chat must not recall the MCP one
    text = "what is six times seven?"

    async def go(client: Client) -> Any:
        return await client.call_tool("chat", {"text": text})

    result = session(go)
    assert not result.is_error, _text(result)
    value = result.structured_content
    assert value["ended"] is True
    assert value["reply"] == "Let me compute.\n\nThe answer is **42**."
    assert _text(result) == value["reply"]
    _, chat = call(fetch, "agent", "chats", value["chat_id"])
    [stored] = chat["turns"]
    assert value["turn"] == stored  # the REST JSON of the turn, as stored
    assert stored["run_id"] == value["run_id"]

    rest_chat = new_chat(fetch)
    code, sent = call(
        fetch, "agent", "chats", rest_chat, "messages", method="POST", body={"text": text}
    )
    assert code == 202
    rest_turn = wait_turn(fetch, spin, rest_chat, sent["run_id"])
    assert _same_turn(value["turn"]) == _same_turn(rest_turn)


@pytest.mark.usefixtures("server_kernelspec")
@pytest.mark.parametrize("mode", ["legacy", "auto"])  # auto: protocol 2026-07-28
def test_a_long_run_streams_progress(
    session: Session, fake: Any, agent_service: Any, mode: str
) -> None:
    fake.load({"steps": SLOW, "repeat": True})
    messages: list[tuple[float, str | None]] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        messages.append((value, message))

    async def go(client: Client) -> Any:
        return await client.call_tool("chat", {"text": "sleep a bit"}, progress_callback=progress)

    result = session(go)
    assert not result.is_error, _text(result)
    texts = [m for _, m in messages]
    assert any(m and m.startswith("cell c1 (python) started: import time") for m in texts), texts
    assert any(m and re.match(r"cell c1 ended: ok \(\d+\.\d s\)", m) for m in texts), texts
    assert "reply: Done sleeping." in texts
    values = [v for v, _ in messages]
    assert values == sorted(values)
    assert len(values) == len(set(values))  # strictly increasing, as the spec asks


def _no_duration(text: str) -> str:
    return re.sub(r"\d+(\.\d+)?s\)", "Ns)", text)


@pytest.mark.usefixtures("server_kernelspec")
def test_run_cell_gives_the_digest_the_model_reads(session: Session, fetch: Any, spin: Any) -> None:
    chat_id = new_chat(fetch)
    _, sent = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": "compute"}
    )
    wait_turn(fetch, spin, chat_id, sent["run_id"])
    _, detail = call(fetch, "agent", "runs", sent["run_id"])
    [step] = [s for s in detail["steps"] if s["type"] == "cell"]
    model_read = step["digest"]

    async def go(client: Client) -> Any:
        ok = await client.call_tool("run_cell", {"code": SCRIPT[0]["cells"][0]})
        bad = await client.call_tool("run_cell", {"code": "1/0"})
        empty = await client.call_tool("run_cell", {"code": "  "})
        return ok, bad, empty

    ok, bad, empty = session(go)
    assert not ok.is_error
    assert _no_duration(_text(ok)) == _no_duration(model_read)
    assert "42" in _text(ok)
    assert ok.structured_content["status"] == "ok"
    assert ok.structured_content["digest"] == _text(ok)
    assert ok.structured_content["outputs"][0] == {
        "output_type": "stream",
        "name": "stdout",
        "text": "42\n",
    }
    assert not bad.is_error  # a failing cell is a digest, not a tool failure
    assert bad.structured_content["status"] == "error"
    assert "ZeroDivisionError" in _text(bad)
    assert empty.is_error
    assert "'code' is empty" in _text(empty)


@pytest.mark.usefixtures("server_kernelspec")
def test_each_read_tool_and_the_resources(
    session: Session, fetch: Any, spin: Any, jp_root_dir: Any
) -> None:
    chat_id = new_chat(fetch, "numbers")
    _, sent = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": "compute"}
    )
    wait_turn(fetch, spin, chat_id, sent["run_id"])
    run_id = sent["run_id"]

    async def go(client: Client) -> dict[str, Any]:
        return {
            "runs": await client.call_tool("list_runs", {"chat_id": chat_id}),
            "all": await client.call_tool("list_runs", {"limit": 5}),
            "show": await client.call_tool("show_run", {"run_id": run_id}),
            "missing": await client.call_tool("show_run", {"run_id": "run_nope"}),
            "nb": await client.call_tool("export_notebook", {"run_id": run_id}),
            "written": await client.call_tool(
                "export_notebook", {"chat_id": chat_id, "write": True}
            ),
            "both": await client.call_tool(
                "export_notebook", {"chat_id": chat_id, "run_id": run_id}
            ),
            "break": await client.call_tool("break_run", {"run_id": run_id}),
            "bad": await client.call_tool("list_runs", {"limit": 0}),
            "unknown": await client.call_tool("list_runs", {"color": "red"}),
            "resources": await client.list_resources(),
            "chat": await client.read_resource(f"agent://chats/{chat_id}"),
            "run": await client.read_resource(f"agent://runs/{run_id}"),
        }

    got = session(go)
    assert [r["run_id"] for r in got["runs"].structured_content["runs"]] == [run_id]
    assert got["all"].structured_content["runs"][0]["run_id"] == run_id
    _, rest = call(fetch, "agent", "runs", run_id)
    assert got["show"].structured_content == rest
    assert got["missing"].is_error
    assert "no trace for run" in _text(got["missing"])
    _, rest_nb = call(fetch, "agent", "runs", run_id, "notebook")
    assert got["nb"].structured_content == rest_nb
    written = got["written"].structured_content
    assert written["created"] is True
    assert (jp_root_dir / written["path"]).is_file()
    assert got["both"].is_error
    assert got["break"].structured_content == {"run_id": run_id, "state": "ended"}
    assert got["bad"].is_error
    assert "'limit'" in _text(got["bad"])
    assert got["unknown"].is_error
    assert "color" in _text(got["unknown"])
    uris = [str(r.uri) for r in got["resources"].resources]
    assert f"agent://chats/{chat_id}" in uris
    assert f"agent://runs/{run_id}" in uris
    _, rest_chat = call(fetch, "agent", "chats", chat_id)
    assert json.loads(got["chat"].contents[0].text) == rest_chat
    assert json.loads(got["run"].contents[0].text) == rest


@pytest.mark.usefixtures("server_kernelspec")
def test_a_cancelled_chat_breaks_its_run_softly(
    session: Session, fake: Any, fetch: Any, spin: Any, agent_service: Any
) -> None:
    fake.load(
        {
            "steps": [
                {"text": "Slowly.", "cells": ["import time\ntime.sleep(2.0)"]},
                {"text": "More.", "cells": ["print('never')"]},
                {"text": "never"},
            ]
        }
    )
    started = asyncio.Event()

    async def progress(value: float, total: float | None, message: str | None) -> None:
        if message and message.startswith("cell c1"):
            started.set()

    async def go(client: Client) -> None:
        call_ = asyncio.ensure_future(
            client.call_tool("chat", {"text": "take your time"}, progress_callback=progress)
        )
        await asyncio.wait_for(started.wait(), 60)
        call_.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call_
        await asyncio.sleep(0.3)  # the cancel notification reaches the server

    session(go)
    [chat] = agent_service.store.list_chats()
    deadline = time.monotonic() + 60
    while agent_service.manager.active_run_id(chat.id) is not None and time.monotonic() < deadline:
        spin(0.05)
    _, detail = call(fetch, "agent", "chats", chat.id)
    [turn] = detail["turns"]
    assert turn["llm"]["stopReason"] == "wrapup"
    assert turn["llm"]["endCause"] == "break_soft"
    assert all("never" not in r["text"] for r in turn["replies"])


RACE = [
    {"text": "Working.", "cells": ["import time\ntime.sleep(1.5)\nprint('done')"]},
    {"text": "First answer.", "delay_s": 1.5},  # a message lands while this reply is made
    {"text": "Got it."},
    {"text": "Got it."},
    {"text": "Got it."},
]


def _holds(turn: dict[str, Any], text: str) -> bool:
    steering = [str(s.get("text") or "") for s in turn.get("steering") or ()]
    return turn.get("userText") == text or text in steering


@pytest.mark.usefixtures("server_kernelspec")
def test_chats_sent_while_a_run_works_and_as_it_ends_answer_the_run_holding_them(
    session: Session, fake: Any, fetch: Any, agent_service: Any
) -> None:
    """The issue-16 race through MCP: ``chat`` calls on one chat while its run runs a cell
    (the message goes to the run's mailbox) and while its final reply is being made (held
    back for the mail, or a run of its own): each answer is the run whose turn holds its
    message, never an ended run that does not."""
    agent_service.manager.recall = False
    fake.load({"steps": RACE})
    chat_id = new_chat(fetch)

    async def until(n: int) -> None:
        deadline = time.monotonic() + 30
        while len(fake.requests) < n:
            assert time.monotonic() < deadline, f"the fake got {len(fake.requests)} requests"
            await asyncio.sleep(0.02)

    async def go(client: Client) -> list[Any]:
        def chat(text: str) -> asyncio.Task[Any]:
            args = {"text": text, "chat_id": chat_id}
            return asyncio.ensure_future(client.call_tool("chat", args))

        first = chat("first")
        await until(1)
        await asyncio.sleep(0.5)  # the cell is sleeping
        second = chat("second")
        await until(2)
        await asyncio.sleep(0.5)  # the final reply is being made
        third = chat("third")
        return list(await asyncio.gather(first, second, third))

    answers = session(go)
    for text, result in zip(("first", "second", "third"), answers, strict=True):
        assert not result.is_error, _text(result)
        value = result.structured_content
        assert value["ended"] is True, (text, value)
        turn = value["turn"]
        assert turn is not None, (text, value)
        assert turn["run_id"] == value["run_id"], (text, value)
        assert _holds(turn, text), (text, turn)
    _, chat = call(fetch, "agent", "chats", chat_id)
    holders = {
        text: [t["run_id"] for t in chat["turns"] if _holds(t, text)]
        for text in ("first", "second", "third")
    }
    assert all(len(runs) == 1 for runs in holders.values()), holders  # each in one turn
    by_text = {
        t: a.structured_content["run_id"]
        for t, a in zip(("first", "second", "third"), answers, strict=True)
    }
    assert by_text == {text: runs[0] for text, runs in holders.items()}
