"""``toolcaller@v6``: the MCP catalogue in the prompt, driven by hand (no I/O).

After the memory read, v6 asks ``config.get {key: "mcp"}``; a catalogue makes the system
prompt list the ``mcp`` app, one ``mcp.<server>.<tool>(...)`` line per tool, and name
``mcp`` among the installed apps; no catalogue (None, no server, a failed read) leaves
v5's prompt exactly. v5 never asks.
"""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_agent.core.history.answer import HistoryWindow
from jupyter_agent.core.loop.machine import PROGRAMS, V6_PROGRAMS, Turn, setup
from jupyter_agent.core.mcp.catalogue import McpCatalogue, McpServerTools, McpTool
from tests.core.test_loop_step import NOW, TIER, Stepper

LAYOUT = {"chunk_turns": 10, "l2_chunks": 5}
OFF = {"categories": [], "recall": {"enabled": False, "k": 5, "budget_tokens": 0, "threshold": 1}}
HELLO = {"kind": "message", "text": "hi", "at": NOW}

CATALOGUE = McpCatalogue(
    servers=(
        McpServerTools(
            name="files",
            tools=(
                McpTool(
                    name="read-file",
                    description="Read a text file.",
                    input_schema={
                        "type": "object",
                        "properties": {
                            "path": {"type": "string"},
                            "limit": {"type": "integer", "default": 100},
                        },
                        "required": ["path"],
                    },
                    mutating=False,
                ),
                McpTool(
                    name="write_file",
                    description="Write a text file.",
                    input_schema={
                        "type": "object",
                        "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
                        "required": ["path", "text"],
                    },
                ),
            ),
        ),
        McpServerTools(name="github", error="connect timed out after 15 s"),
    )
)


def open_turn(
    version: int, mcp: Any = None, *, mcp_error: dict[str, Any] | None = None
) -> tuple[Turn, list[dict[str, Any]]]:
    """A turn set up by hand; returns it and every config.get intent's data, in order."""
    s = Stepper(setup("run_1", "chat_1", version=version))
    s.answer("clock.now", NOW)
    asked = [s.answer("config.get", {}).data]  # ceilings
    asked.append(s.answer("config.get", {}).data)  # spaces
    asked.append(s.answer("config.get", TIER).data)
    asked.append(s.answer("config.get", None).data)  # profile
    window = HistoryWindow(turns=(), layout=LAYOUT, anchor=0).to_json()
    asked.append(s.answer("config.get", window).data)
    s.answer("mailbox.drain", [HELLO])
    asked.append(s.answer("config.get", OFF).data)  # memory, recall off
    if version >= 6:
        asked.append(s.answer("config.get", mcp, mcp_error).data)
    assert s.returned, s.effect
    assert isinstance(s.value, Turn)
    return s.value, [dict(a) for a in asked]


def test_v6_records_its_programs() -> None:
    assert PROGRAMS["toolcaller@v6"] == 6
    turn, asked = open_turn(6)
    assert asked[-2:] == [{"key": "memory"}, {"key": "mcp"}]
    assert turn.state.programs == V6_PROGRAMS == ("toolcaller@v6", "autorecall@v1")


def test_a_catalogue_lists_each_tool_in_the_prompt() -> None:
    turn, _ = open_turn(6, CATALOGUE.to_json())
    system = turn.system
    assert "### mcp: Tools of the MCP servers the admin configured" in system
    assert (
        "- `mcp.files.read_file(path: str, limit: int = 100) -> Any`: Read a text file.\n" in system
    )
    assert (
        "- `mcp.files.write_file(path: str, text: str) -> Any`: Write a text file. "
        "(changes things: may wait for the person)" in system
    )
    assert "Unreachable now: github (connect timed out after 15 s)." in system
    assert "- Installed apps: chat, llm, mcp, memory, notebook\n" in system
    # The mcp section comes after the catalogue's apps (the last of them: notebook).
    assert system.index("### notebook:") < system.index("### mcp:")


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (None, None),  # the driver before the hub: no MCP at all
        ({"servers": []}, None),  # no server configured
        (None, {"type": "StoreUnavailable", "message": "x"}),  # a failed read
        ("not a catalogue", None),
    ],
)
def test_no_catalogue_is_v5s_prompt_exactly(answer: Any, error: dict[str, Any] | None) -> None:
    v5, asked5 = open_turn(5)
    v6, _ = open_turn(6, answer, mcp_error=error)
    assert {"key": "mcp"} not in asked5  # v5 never asks
    assert v6.system == v5.system
    assert v6.state.fingerprints == v5.state.fingerprints
    assert "mcp" not in v6.system.split("# Runtime context")[1]
    assert [t.name for t in v6.tools] == [t.name for t in v5.tools]


def test_the_catalogue_changes_the_system_fingerprint() -> None:
    plain, _ = open_turn(6)
    listed, _ = open_turn(6, CATALOGUE.to_json())
    assert plain.state.fingerprints["system"] != listed.state.fingerprints["system"]
