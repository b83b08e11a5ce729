"""The MCP hub against the suite's own MCP server (tests/mcp_demo), over stdio and
streamable HTTP: the catalogue (allow-list, the mutating rule), each kind of result, a
timeout, a crash and the restart, a mutating call lost mid-flight (never retried),
connection failures with their backoff, secrets scrubbed, and ``aclose`` leaving no
server process."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.exceptions import McpCallError
from jupyter_agent.runtime.mcp.config import parse_servers
from jupyter_agent.runtime.mcp.hub import McpHub
from jupyter_agent.runtime.mcp.results import MAX_TEXT_CHARS
from jupyter_agent.runtime.secrets import Scrubber, known_secrets
from tests.mcp_demo import SERVER, stdio_command

pytestmark = pytest.mark.timeout(120)

SECRET = "demo-secret-" + "7f3a9c" * 5


def children() -> set[int]:
    """The live (not zombie) child processes of this test process, from /proc."""
    found: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[1]) == os.getpid():
            found.add(int(entry))
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def make_hub(servers: dict[str, Any], notes: Path, **kw: Any) -> McpHub:
    environ = {**os.environ, "NOTES_FILE": str(notes), "DEMO_TOKEN": SECRET}
    good, bad = parse_servers(servers)
    refs = [ref for s in good for ref in s.refs()]
    # As the assembly does: the references' values are known secrets.
    scrubber = Scrubber(known_secrets(environ={"DEMO_TOKEN": SECRET}, key_refs=refs))
    return McpHub(good, problems=bad, environ=environ, scrubber=scrubber, **kw)


def demo(**extra: Any) -> dict[str, Any]:
    return {
        "command": stdio_command(),
        "env": {"MCP_DEMO_NOTES": "env:NOTES_FILE", "MCP_DEMO_SECRET": "env:DEMO_TOKEN"},
        "tools": ["*"],
        **extra,
    }


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[McpHub]:
    hub = make_hub({"demo": demo()}, tmp_path / "notes.txt")
    yield hub
    await hub.aclose()


async def pid_of(hub: McpHub, server: str = "demo") -> int:
    value = await hub.call(server, "pid", {})
    return int(value["content"][0]["text"])


async def test_no_servers_is_an_empty_catalogue_at_once() -> None:
    hub = McpHub([])
    before = children()
    catalogue = await hub.catalogue()
    assert not catalogue
    assert catalogue.to_json() == {"servers": []}
    assert children() == before
    with pytest.raises(McpCallError, match="unknown MCP server 'x'; configured: none"):
        await hub.call("x", "y", {})


async def test_the_catalogue_keeps_the_allowed_tools_in_order_with_the_mutating_rule(
    tmp_path: Path,
) -> None:
    servers = {
        "demo-1": demo(tools=["echo", "add", "write_note", "slow"], mutating=["echo"]),
    }
    hub = make_hub(servers, tmp_path / "notes.txt")
    try:
        before = children()
        catalogue = await hub.catalogue()
        assert len(children() - before) == 1  # one server process
        (server,) = catalogue.servers
        assert server.name == "demo-1"
        assert server.error is None
        # The server's order (add before echo), not the allow-list's.
        assert [(t.name, t.mutating) for t in server.tools] == [
            ("add", False),  # readOnlyHint
            ("echo", True),  # readOnlyHint, but the admin lists it as mutating
            ("write_note", True),  # no annotation: mutating
            ("slow", False),
        ]
        add = server.tools[0]
        assert add.input_schema["required"] == ["a", "b"]
        assert catalogue.find("demo_1.add") is not None  # the server "demo-1" as a cell names it
        # Cached: a second catalogue starts nothing and answers the same.
        assert await hub.catalogue() == catalogue
        assert len(children() - before) == 1
        with pytest.raises(McpCallError) as refused:
            await hub.call("demo_1", "pid", {})  # not allowed
        assert str(refused.value) == (
            "mcp.demo_1.pid: unknown tool; demo_1 has add, echo, write_note, slow"
        )
    finally:
        await hub.aclose()


async def test_each_kind_of_result(hub: McpHub, tmp_path: Path) -> None:
    assert await hub.call("demo", "add", {"a": 2, "b": 40}) == {
        "structured": {"sum": 42},
        "content": [{"type": "text", "text": '{\n  "sum": 42\n}'}],
    }
    assert await hub.call("demo", "echo", {"text": "hi"}) == {
        "structured": None,
        "content": [{"type": "text", "text": "hi"}],
    }
    image = await hub.call("demo", "image", {})
    assert image["content"][0]["type"] == "image"
    assert image["content"][0]["mime_type"] == "image/png"
    assert image["content"][0]["data"].startswith("iVBORw0KGgo")  # a PNG, base64
    resource = await hub.call("demo", "resource", {})
    assert resource["content"] == [
        {"type": "resource", "uri": "demo://notes", "mime_type": "text/plain", "text": "the notes"}
    ]
    assert (await hub.call("demo", "write_note", {"text": "one"}))["content"][0]["text"] == (
        "1 notes"
    )
    assert (tmp_path / "notes.txt").read_text() == "one\n"
    with pytest.raises(McpCallError) as failed:
        await hub.call("demo", "fail", {})
    assert str(failed.value).startswith("mcp.demo.fail: ")
    assert "the demo tool failed on purpose" in str(failed.value)
    big = await hub.call("demo", "big", {"n": MAX_TEXT_CHARS + 50})
    text = big["content"][0]["text"]
    assert text.startswith("x" * MAX_TEXT_CHARS)
    assert text.endswith("[cut: 50 more characters]")
    with pytest.raises(McpCallError, match=r"^mcp\.demo\.add: "):
        await hub.call("demo", "add", {"a": "not a number", "b": 1})


async def test_a_secret_in_a_result_is_scrubbed(hub: McpHub) -> None:
    value = await hub.call("demo", "whoami", {})
    assert value["content"] == [{"type": "text", "text": "token=[redacted: DEMO_TOKEN]"}]
    assert SECRET not in repr(value)


async def test_a_timeout_fails_the_call_and_the_connection_goes_on(hub: McpHub) -> None:
    pid = await pid_of(hub)
    started = time.monotonic()
    with pytest.raises(McpCallError) as late:
        await hub.call("demo", "slow", {"seconds": 20}, timeout_s=0.5)
    assert str(late.value) == "mcp.demo.slow: timed out after 0.5 s"
    assert time.monotonic() - started < 5
    assert await pid_of(hub) == pid  # the same process
    assert (await hub.call("demo", "slow", {"seconds": 0.05}))["content"][0]["text"] == "slept"


async def test_a_crash_then_a_restart(hub: McpHub) -> None:
    pid = await pid_of(hub)
    with pytest.raises(McpCallError) as crashed:
        await hub.call("demo", "crash", {})
    # crash is read-only: tried once more on a fresh process, which crashed too.
    assert "mcp.demo.crash: the server exited" in str(crashed.value)
    assert "restarting" in str(crashed.value)
    assert not alive(pid)
    assert (await hub.call("demo", "echo", {"text": "back"}))["content"][0]["text"] == "back"
    assert await pid_of(hub) != pid
    catalogue = await hub.catalogue()
    assert catalogue.servers[0].error is None
    assert catalogue.servers[0].tools


async def test_a_dead_server_restarts_before_a_mutating_call_is_sent(
    hub: McpHub, tmp_path: Path
) -> None:
    pid = await pid_of(hub)
    os.kill(pid, 9)  # died while idle: the call has not been sent
    for _ in range(100):
        if not alive(pid):
            break
        await asyncio.sleep(0.05)
    value = await hub.call("demo", "write_note", {"text": "once"})
    assert value["content"][0]["text"] == "1 notes"
    assert (tmp_path / "notes.txt").read_text() == "once\n"


async def test_a_mutating_call_lost_mid_flight_is_not_retried(hub: McpHub, tmp_path: Path) -> None:
    with pytest.raises(McpCallError) as lost:
        await hub.call("demo", "write_then_crash", {"text": "maybe"})
    assert "it may or may not have run" in str(lost.value)
    assert (tmp_path / "notes.txt").read_text() == "maybe\n"  # ran once, not twice
    assert (await hub.call("demo", "echo", {"text": "ok"}))["content"][0]["text"] == "ok"


async def test_aclose_leaves_no_server_process(tmp_path: Path) -> None:
    before = children()
    hub = make_hub({"a": demo(), "b": demo()}, tmp_path / "notes.txt")
    catalogue = await hub.catalogue()
    assert [s.error for s in catalogue.servers] == [None, None]
    pids = {await pid_of(hub, "a"), await pid_of(hub, "b")}
    assert len(pids) == 2
    assert pids <= children()
    await hub.aclose()
    assert not any(alive(p) for p in pids)
    assert children() <= before
    with pytest.raises(McpCallError, match="unavailable: the agent is stopping"):
        await hub.call("a", "echo", {"text": "x"})


async def test_a_server_that_fails_is_shown_and_tried_again_after_the_backoff(
    tmp_path: Path,
) -> None:
    now = [1000.0]
    servers = {
        "gone": {"command": [sys.executable, "-c", "pass"], "tools": ["*"]},
        "nokey": demo(env={"MCP_DEMO_SECRET": "env:UNSET_VARIABLE_FOR_MCP"}),
        "bad": {"command": ["x"], "tools": ["*"], "env": {"K": "literal"}},
    }
    hub = make_hub(servers, tmp_path / "notes.txt", retry_after_s=30, clock=lambda: now[0])
    try:
        catalogue = await hub.catalogue()
        errors = {s.name: s.error for s in catalogue.servers}
        assert errors["gone"]
        assert len(errors["gone"]) <= 200
        assert errors["nokey"] == (
            "mcp_servers['nokey'].env['MCP_DEMO_SECRET']: UNSET_VARIABLE_FOR_MCP is not set"
        )
        assert "mcp_servers['bad']" in str(errors["bad"])
        assert catalogue.app_spec() is not None
        assert "Unreachable now: gone" in catalogue.app_spec().doc  # type: ignore[union-attr]
        with pytest.raises(McpCallError, match=r"^mcp\.gone\.x: gone is unavailable: "):
            await hub.call("gone", "x", {})
        with pytest.raises(McpCallError, match=r"^mcp\.bad\.x: the server is misconfigured"):
            await hub.call("bad", "x", {})
        # Within the backoff nothing is tried again; after it, it is.
        before = children()
        hub._environ = {**os.environ, "UNSET_VARIABLE_FOR_MCP": "now-set-value"}
        assert (await hub.catalogue()).servers[1].error is not None
        now[0] += 31
        again = await hub.catalogue()
        assert again.servers[1].error is None
        assert again.servers[1].tools
        assert len(children() - before) == 1
    finally:
        await hub.aclose()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = _free_port()
    notes = tmp_path_factory.mktemp("mcp") / "notes.txt"
    env = {**os.environ, "MCP_DEMO_NOTES": str(notes), "MCP_DEMO_SECRET": SECRET}
    proc = subprocess.Popen(
        [sys.executable, SERVER, "--http", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert proc.poll() is None, "the HTTP server exited"
                assert time.monotonic() < deadline, "no HTTP server"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


async def test_a_streamable_http_server(http_server: str, tmp_path: Path) -> None:
    servers = {
        "web": {
            "url": http_server,
            "headers": {"Authorization": "Bearer {env:DEMO_TOKEN}"},
            "tools": ["add", "image", "whoami", "write_note"],
            "read_only": ["write_note"],
        }
    }
    hub = make_hub(servers, tmp_path / "notes.txt")
    try:
        catalogue = await hub.catalogue()
        (server,) = catalogue.servers
        assert server.error is None
        assert [(t.name, t.mutating) for t in server.tools] == [
            ("add", False),
            ("image", False),
            ("write_note", False),  # the admin says it is read-only
            ("whoami", False),
        ]
        assert (await hub.call("web", "add", {"a": 1, "b": 2}))["structured"] == {"sum": 3}
        assert (await hub.call("web", "image", {}))["content"][0]["mime_type"] == "image/png"
        whoami = await hub.call("web", "whoami", {})
        assert whoami["content"][0]["text"] == "token=[redacted: DEMO_TOKEN]"
    finally:
        await hub.aclose()


async def test_a_server_that_never_answers_fails_at_the_connect_timeout(tmp_path: Path) -> None:
    """A child that starts but never answers ``initialize``: the catalogue says so once the
    connect timeout passes (not after the stop grace on top of it), and the child is gone."""
    before = children()
    mute = {"command": [sys.executable, "-c", "import time; time.sleep(120)"], "tools": ["*"]}
    hub = make_hub({"mute": mute}, tmp_path / "notes.txt", connect_timeout_s=0.5)
    try:
        started = time.monotonic()
        catalogue = await hub.catalogue()
        took = time.monotonic() - started
        assert catalogue.servers[0].error == "no answer within 0.5 s"
        assert took < 4.0, took
        for _ in range(100):
            if children() <= before:
                break
            await asyncio.sleep(0.05)
        assert children() <= before
    finally:
        await hub.aclose()
