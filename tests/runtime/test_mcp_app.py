"""The host side of the in-cell ``mcp`` app through a real RunDriver (its log, its event
bus, its ``approval.wait`` performer) and the hub over tests/mcp_demo: ``config.get mcp``,
the reply's shape and ``mutation``, unknown tools, and a mutating tool waiting for the
person under ``writes`` (approve, deny, a break, an approved cell, "the rest") but not
under ``none``. The cell is not run in a kernel: its ``cell.run`` intent is logged and
the kernel's calls are made as the kernel handle makes them (``CellHost.call``)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.core.loop.machine import PROGRAM
from jupyter_agent.core.mcp.catalogue import McpCatalogue
from jupyter_agent.effects import APPROVAL_WAIT, CELL_RUN, CONFIG_GET, Effect
from jupyter_agent.runtime.events import EventBus
from jupyter_agent.runtime.loop.apphost import CellHost
from jupyter_agent.runtime.loop.driver import RunConfig, RunDriver, RunServices
from jupyter_agent.runtime.mcp.config import parse_servers
from jupyter_agent.runtime.mcp.hub import McpHub
from jupyter_agent.runtime.runs.mailbox import Mailbox
from jupyter_agent.trace.log import EffectLog, pair_effects, read_log
from tests.mcp_demo import stdio_command

pytestmark = pytest.mark.timeout(120)

CHAT, RUN = "chat_01MCP", "run_01MCP"


def _program() -> Iterator[Any]:
    yield from ()  # never stepped: the test performs the effects itself


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[McpHub]:
    servers, _ = parse_servers(
        {
            "demo": {
                "command": stdio_command(),
                "env": {"MCP_DEMO_NOTES": "env:NOTES_FILE"},
                "tools": ["add", "write_note"],
            }
        }
    )
    hub = McpHub(servers, environ={**os.environ, "NOTES_FILE": str(tmp_path / "notes.txt")})
    yield hub
    await hub.aclose()


def make_driver(tmp_path: Path, hub: McpHub | None, approval: str) -> RunDriver:
    header = {"run_id": RUN, "chat_id": CHAT, "program": PROGRAM, "created": "2026-01-01"}
    services = RunServices(
        transport=None,
        pool=None,
        store=None,
        mailbox=Mailbox(),
        events=EventBus(),
        root_dir=str(tmp_path),
        mcp=hub,
    )
    config = RunConfig(
        tiers={}, ceilings={"approval": approval, "max_wall_s": 60}, spaces={}, agent="agent"
    )
    return RunDriver(
        run_id=RUN,
        chat_id=CHAT,
        log_=EffectLog.create(tmp_path / "run.jsonl", header),
        config=config,
        services=services,
        gen=_program(),  # type: ignore[arg-type]
    )


async def config_mcp(driver: RunDriver) -> Any:
    result = await driver.perform(Effect(name=CONFIG_GET, data={"key": "mcp"}))
    return result.data


async def cell(driver: RunDriver) -> CellHost:
    """A cell's host, its ``cell.run`` intent logged (and seen by the driver's state)."""
    seq = await driver.log_intent(Effect(name=CELL_RUN, data={"cell_id": "c1", "code": "..."}))
    driver.mcp.tool_started(seq, cell=True)
    return CellHost(driver, seq, "c1")


def events(driver: RunDriver, type_: str) -> list[dict[str, Any]]:
    return [e for e in driver.services.events.since(CHAT, 0) if e["type"] == type_]


async def approval_event(driver: RunDriver, n: int = 1) -> dict[str, Any]:
    """The run's ``n``-th approval event (waiting for it)."""
    for _ in range(400):
        found = events(driver, "approval")
        if len(found) >= n:
            return found[n - 1]
        await asyncio.sleep(0.025)
    raise AssertionError("no approval event")


async def test_config_get_mcp_and_a_read_only_call(tmp_path: Path, hub: McpHub) -> None:
    driver = make_driver(tmp_path, hub, "writes")
    answer = await config_mcp(driver)
    assert [t["name"] for t in answer["servers"][0]["tools"]] == ["add", "write_note"]
    assert driver.mcp.catalogue is not None
    assert driver.mcp.catalogue.to_json() == answer
    host = await cell(driver)
    reply = await host.call("mcp", "demo.add", {"a": 1, "b": 2})
    assert reply["ok"] is True
    assert reply["error"] is None
    assert reply["mutation"] is False
    assert reply["value"] == {
        "structured": {"sum": 3},
        "content": [{"type": "text", "text": '{\n  "sum": 3\n}'}],
    }
    unknown = await host.call("mcp", "demo.nope", {})
    assert unknown["ok"] is False
    assert unknown["error"] == "mcp.demo.nope: unknown tool; demo has add, write_note"
    bad = await host.call("mcp", "nothing", {})
    assert bad["error"] == "mcp.nothing: call a tool as mcp.<server>.<tool>(**args)"
    assert events(driver, "approval") == []  # read-only: nobody is asked
    driver.log.close()
    # The log holds the recorded catalogue and each call, parented to the cell.
    calls = [p for p in pair_effects(read_log(tmp_path / "run.jsonl")) if p.name == "app.call"]
    assert [c.intent.data["method"] for c in calls] == ["demo.add", "demo.nope", "nothing"]
    assert {c.intent.parent for c in calls} == {host.cell_seq}
    assert calls[0].result is not None
    assert calls[0].result.data["value"]["structured"] == {"sum": 3}


async def test_without_a_hub_the_answer_is_empty_and_calls_fail_clearly(tmp_path: Path) -> None:
    driver = make_driver(tmp_path, None, "none")
    assert await config_mcp(driver) == {"servers": []}
    reply = await (await cell(driver)).call("mcp", "demo.add", {"a": 1, "b": 2})
    assert reply["error"] == "mcp.demo.add: no MCP servers are configured on this server"


async def test_under_writes_a_mutating_call_waits_for_the_person(
    tmp_path: Path, hub: McpHub
) -> None:
    driver = make_driver(tmp_path, hub, "writes")
    await config_mcp(driver)
    host = await cell(driver)
    call = asyncio.ensure_future(host.call("mcp", "demo.write_note", {"text": "hello"}))
    approval = await approval_event(driver, 1)
    assert approval["kind"] == "mcp"
    assert approval["code"] == "mcp.demo.write_note(text='hello')"
    assert approval["summary"] == "Call the MCP tool mcp.demo.write_note"
    await asyncio.sleep(0.1)
    assert not (tmp_path / "notes.txt").exists()  # nothing runs while it waits
    driver.services.approvals.decide(RUN, approval["approval_id"], approve=True)
    reply = await asyncio.wait_for(call, 30)
    assert reply["ok"] is True
    assert reply["mutation"] is True
    assert (tmp_path / "notes.txt").read_text() == "hello\n"
    # Denied: the call fails and the tool never runs.
    call = asyncio.ensure_future(host.call("mcp", "demo.write_note", {"text": "no"}))
    approval = await approval_event(driver, 2)
    driver.services.approvals.decide(RUN, approval["approval_id"], approve=False)
    reply = await asyncio.wait_for(call, 30)
    assert reply["error"] == "The person denied mcp.demo.write_note."
    assert (tmp_path / "notes.txt").read_text() == "hello\n"
    # A soft break answers the wait: not run.
    call = asyncio.ensure_future(host.call("mcp", "demo.write_note", {"text": "stop"}))
    await approval_event(driver, 3)
    while len(driver.services.approvals.pending(RUN)) == 0:
        await asyncio.sleep(0.02)
    driver.services.approvals.break_run(RUN)
    reply = await asyncio.wait_for(call, 30)
    assert reply["error"] == "Not run: the person asked you to stop."
    driver.log.close()
    logged = pair_effects(read_log(tmp_path / "run.jsonl"))
    waits = [p for p in logged if p.name == APPROVAL_WAIT]
    calls = [p.seq for p in logged if p.name == "app.call"]
    assert len(waits) == 3
    assert [w.intent.parent for w in waits] == calls  # each nested under its app.call
    assert [w.result.data["approve"] for w in waits if w.result] == [True, False, False]


async def test_an_approved_cell_and_the_rest_of_the_turn_do_not_wait(
    tmp_path: Path, hub: McpHub
) -> None:
    driver = make_driver(tmp_path, hub, "every_cell")
    await config_mcp(driver)
    # The loop's approval.wait for the cell, approved by the person: its calls do not wait.
    wait = asyncio.ensure_future(
        driver.perform(
            Effect(
                name=APPROVAL_WAIT,
                data={"approval_id": "approval_1", "kind": "cell", "code": "x", "timeout_s": 30},
            )
        )
    )
    await approval_event(driver, 1)
    driver.services.approvals.decide(RUN, "approval_1", approve=True)
    await wait
    approved = await cell(driver)
    reply = await approved.call("mcp", "demo.write_note", {"text": "in an approved cell"})
    assert reply["ok"] is True
    assert len(events(driver, "approval")) == 1  # only the cell's
    # The next cell was not approved: its mutating call waits; "the rest" approves it
    # and every later one.
    other = await cell(driver)
    call = asyncio.ensure_future(other.call("mcp", "demo.write_note", {"text": "two"}))
    approval = await approval_event(driver, 2)
    assert approval["kind"] == "mcp"
    driver.services.approvals.decide(RUN, approval["approval_id"], approve=True, rest=True)
    assert (await asyncio.wait_for(call, 30))["ok"] is True
    third = await cell(driver)
    assert (await third.call("mcp", "demo.write_note", {"text": "three"}))["ok"] is True
    assert len(events(driver, "approval")) == 2
    assert (tmp_path / "notes.txt").read_text().splitlines() == [
        "in an approved cell",
        "two",
        "three",
    ]
    driver.log.close()


async def test_under_none_a_mutating_call_does_not_wait(tmp_path: Path, hub: McpHub) -> None:
    driver = make_driver(tmp_path, hub, "none")
    await config_mcp(driver)
    reply = await (await cell(driver)).call("mcp", "demo.write_note", {"text": "free"})
    assert reply["ok"] is True
    assert reply["mutation"] is True
    assert events(driver, "approval") == []
    assert (tmp_path / "notes.txt").read_text() == "free\n"
    driver.log.close()


def _as_read_only(catalogue: McpCatalogue, tool_name: str) -> McpCatalogue:
    servers = tuple(
        replace(
            s,
            tools=tuple(replace(t, mutating=False) if t.name == tool_name else t for t in s.tools),
        )
        for s in catalogue.servers
    )
    return McpCatalogue(servers=servers)


async def test_a_tool_the_run_saw_as_read_only_but_now_mutating_still_waits(
    tmp_path: Path, hub: McpHub
) -> None:
    """The run's recorded catalogue says read-only, the hub's current one mutating (the
    server changed its annotations): the call waits for the person."""
    driver = make_driver(tmp_path, hub, "writes")
    await config_mcp(driver)
    assert driver.mcp.catalogue is not None
    driver.mcp.catalogue = _as_read_only(driver.mcp.catalogue, "write_note")
    call = asyncio.ensure_future((await cell(driver)).call("mcp", "demo.write_note", {"text": "x"}))
    approval = await approval_event(driver, 1)
    assert not (tmp_path / "notes.txt").exists()
    driver.services.approvals.decide(RUN, approval["approval_id"], approve=False)
    reply = await asyncio.wait_for(call, 30)
    assert reply["error"] == "The person denied mcp.demo.write_note."
    assert reply["mutation"] is True
    assert not (tmp_path / "notes.txt").exists()
    driver.log.close()


async def test_a_tool_that_turns_mutating_as_the_hub_lists_again_is_not_run(
    tmp_path: Path, hub: McpHub
) -> None:
    """Neither catalogue knew the tool as mutating when the call was decided, and the hub's
    re-listing (a tools/list_changed) finds it mutating: refused, never run unapproved."""
    driver = make_driver(tmp_path, hub, "writes")
    await config_mcp(driver)
    assert driver.mcp.catalogue is not None
    driver.mcp.catalogue = _as_read_only(driver.mcp.catalogue, "write_note")
    server = hub._servers[0]
    server.tools = tuple(t for t in server.tools or () if t.name != "write_note")
    server.stale = True  # as a tools/list_changed notification leaves it
    reply = await (await cell(driver)).call("mcp", "demo.write_note", {"text": "x"})
    assert reply["ok"] is False
    assert "needs the person's approval" in reply["error"]
    assert events(driver, "approval") == []
    assert not (tmp_path / "notes.txt").exists()
    driver.log.close()
