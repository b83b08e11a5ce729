"""The ``mcp_servers`` trait validated (runtime/mcp/config.py): each bad entry is an error
naming the server and the field (never the value), references resolve at connect time,
literal credentials are refused, and the trait reaches the assembly (bad entries logged
and shown in the catalogue, references scrubbed)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.exceptions import ConfigError, McpConfigError
from jupyter_agent.runtime.mcp.config import McpServerConfig, parse_server, parse_servers
from tests.mcp_demo import stdio_command

SECRET = "sk-ant-api03-" + "Q" * 40  # a key's shape: credential_reason flags it


def _error(name: Any, raw: Any) -> str:
    with pytest.raises(McpConfigError) as caught:
        parse_server(name, raw)
    assert isinstance(caught.value, ConfigError)  # the config error family
    return str(caught.value)


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"tools": ["*"]}, "exactly one of 'command'"),
        ({"command": ["x"], "url": "https://a/mcp", "tools": ["*"]}, "exactly one of"),
        ({"command": [], "tools": ["*"]}, "['command']"),
        ({"command": [1], "tools": ["*"]}, "['command']"),
        ({"url": "ftp://a/mcp", "tools": ["*"]}, "['url']"),
        ({"command": ["x"]}, "needs 'tools'"),
        ({"command": ["x"], "tools": "read"}, "['tools']"),
        ({"command": ["x"], "tools": ["*"], "read_only": "a"}, "['read_only']"),
        ({"command": ["x"], "tools": ["*"], "timeout_s": 0}, "['timeout_s']"),
        ({"command": ["x"], "tools": ["*"], "timeout_s": True}, "['timeout_s']"),
        ({"command": ["x"], "tools": ["*"], "cwd": ""}, "['cwd']"),
        ({"command": ["x"], "tools": ["*"], "env": {"A-B": "env:X"}}, "['env']"),
        ({"command": ["x"], "tools": ["*"], "headers": {"A": "b"}}, "['headers']"),
        ({"url": "https://a/mcp", "tools": ["*"], "env": {"A": "env:X"}}, "['env']"),
        ({"command": ["x"], "tools": ["*"], "token": "x"}, "unknown key(s) token"),
    ],
)
def test_a_bad_entry_names_the_server_and_the_field(raw: dict[str, Any], field: str) -> None:
    message = _error("files", raw)
    assert message.startswith("mcp_servers['files']"), message
    assert field in message, message


def test_a_name_must_be_a_non_empty_string_and_an_entry_a_dict() -> None:
    assert "non-empty" in _error("", {"command": ["x"], "tools": ["*"]})
    assert "non-empty" in _error(3, {"command": ["x"], "tools": ["*"]})
    assert "must be a dict" in _error("files", ["x"])


def test_literal_secrets_are_refused_and_never_echoed() -> None:
    cases = [
        {"command": ["x"], "tools": ["*"], "env": {"API_TOKEN": SECRET}},
        {"command": ["x", "--key", SECRET], "tools": ["*"]},
        {"url": "https://a/mcp", "tools": ["*"], "headers": {"Authorization": f"Bearer {SECRET}"}},
        {"url": f"https://user:{SECRET}@a/mcp", "tools": ["*"]},
    ]
    for raw in cases:
        message = _error("files", raw)
        assert SECRET not in message
        assert "reference" in message, message
    # The env value must be a reference even when it does not look like a key.
    assert "env:NAME" in _error("f", {"command": ["x"], "tools": ["*"], "env": {"A": "plain"}})


def test_references_resolve_at_connect_time_and_name_what_is_missing() -> None:
    stdio = parse_server(
        "files",
        {
            "command": "python -m my_server --flag",
            "env": {"API_TOKEN": "env:FILES_TOKEN"},
            "tools": ["read-file", "search"],
            "read_only": ["search"],
            "mutating": ["read_file"],
            "timeout_s": 30,
        },
    )
    assert stdio.command == ("python", "-m", "my_server", "--flag")  # a str is shlex-split
    assert stdio.transport == "stdio"
    assert stdio.timeout_s == 30.0
    assert stdio.refs() == ["env:FILES_TOKEN"]
    assert stdio.resolve_env({"FILES_TOKEN": SECRET}) == {"API_TOKEN": SECRET}
    with pytest.raises(McpConfigError) as missing:
        stdio.resolve_env({})
    assert "FILES_TOKEN is not set" in str(missing.value)
    http = parse_server(
        "github",
        {
            "url": "https://mcp.example.com/mcp",
            "headers": {"Authorization": "Bearer {env:GH_TOKEN}", "X-Team": "{env:TEAM}-x"},
            "tools": ["*"],
        },
    )
    assert http.transport == "http"
    assert http.timeout_s == 60.0
    assert http.refs() == ["env:GH_TOKEN", "env:TEAM"]
    assert http.resolve_headers({"GH_TOKEN": SECRET, "TEAM": "data"}) == {
        "Authorization": f"Bearer {SECRET}",
        "X-Team": "data-x",
    }
    with pytest.raises(McpConfigError, match="GH_TOKEN is not set"):
        http.resolve_headers({"TEAM": "data"})
    assert SECRET not in repr(stdio) + repr(http)  # configs hold references only


def test_allow_lists_and_the_mutating_rule() -> None:
    config = McpServerConfig(
        name="files",
        command=("x",),
        tools=("read-file", "search", "write_file"),
        read_only=frozenset({"write_file"}),
        mutating=frozenset({"search"}),
    )
    assert config.allows("read-file")
    assert config.allows("search")
    assert not config.allows("delete")
    assert config.is_mutating("read-file", read_only_hint=None)  # unknown: mutating
    assert not config.is_mutating("read-file", read_only_hint=True)  # annotated read-only
    assert config.is_mutating("search", read_only_hint=True)  # the admin says it mutates
    assert not config.is_mutating("write_file", read_only_hint=False)  # the admin says not
    everything = McpServerConfig(name="all", command=("x",), tools=("*",))
    assert everything.allows("anything")
    # Matched by the Python name too (the name a cell calls it by).
    assert McpServerConfig(name="f", command=("x",), tools=("read_file",)).allows("read-file")


def test_parse_servers_keeps_the_good_entries_and_reports_the_bad() -> None:
    good, bad = parse_servers(
        {
            "files": {"command": ["x"], "tools": ["*"]},
            "broken": {"command": ["x"]},
            "my-files": {"url": "https://a/mcp", "tools": ["*"]},  # python name my_files
            "my_files": {"url": "https://b/mcp", "tools": ["*"]},  # collides: refused
        }
    )
    assert [c.name for c in good] == ["files", "my-files"]
    assert set(bad) == {"broken", "my_files"}
    assert "needs 'tools'" in bad["broken"]
    assert "'my_files'" in bad["my_files"]
    assert "'my-files'" in bad["my_files"]
    assert parse_servers({}) == ((), {})
    assert parse_servers(["x"])[0] == ()


async def test_the_assembly_logs_bad_entries_scrubs_references_and_shows_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from jupyter_agent.runtime.assembly import AdminConfig, Parts
    from jupyter_agent.store.repo import Store

    class Pool:
        async def start(self) -> None: ...

        async def stop(self) -> None: ...

    class NoTransport:
        async def aclose(self) -> None: ...

    admin = AdminConfig(
        tiers={},
        mcp_servers={
            "demo": {
                "command": stdio_command(),
                "env": {"MCP_DEMO_SECRET": "env:DEMO_TOKEN"},
                "tools": ["echo"],
            },
            "broken": {"command": ["x"], "tools": ["*"], "env": {"A": "oops"}},
        },
    )
    parts = Parts(
        admin=admin,
        store=Store(f"sqlite:///{tmp_path / 'agent.sqlite'}"),
        pool=Pool(),
        transport=NoTransport(),
        data_dir=tmp_path / "data",
        root_dir=str(tmp_path),
        environ={"DEMO_TOKEN": SECRET},
    )
    assert parts.manager.services.mcp is parts.mcp
    assert parts.scrubber.scrub(f"x {SECRET} y") == "x [redacted: DEMO_TOKEN] y"
    with caplog.at_level(logging.WARNING):
        await parts.start()
    assert any("mcp_servers['broken']" in r.getMessage() for r in caplog.records)
    catalogue = await parts.mcp.catalogue()
    assert [(s.name, s.error is None) for s in catalogue.servers] == [
        ("demo", True),
        ("broken", False),
    ]
    assert [t.name for t in catalogue.servers[0].tools] == ["echo"]
    await parts.stop()
    assert parts.mcp.cached.servers[0].tools == ()  # stopped with the parts
