"""The kernel's ``mcp`` app in-process: the request a call sends, the record it leaves, what
each kind of reply value becomes, names that are never proxied, batch specs."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from IPython.core.formatters import DisplayFormatter

from jupyter_agent.core.digest.cells import AppCallRecord
from jupyter_agent.exceptions import AppCallError
from jupyter_agent.kernel.apps import make_batch
from jupyter_agent.kernel.mcp_app import McpApp
from jupyter_agent.kernel.mcp_values import McpImage, McpResource, mcp_value

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()


class _Channel:
    """A HostChannel answering every request with ``reply`` (a batch: one per item)."""

    def __init__(self, reply: dict[str, Any]) -> None:
        self.reply = reply
        self.requests: list[dict[str, Any]] = []
        self.records: list[AppCallRecord] = []

    def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(payload)
        if payload["jupyter_agent"] == "batch":
            return {"results": [dict(self.reply, seq=i) for i in range(len(payload["items"]))]}
        return self.reply

    def record(self, record: AppCallRecord) -> None:
        self.records.append(record)

    def next_batch(self) -> int:
        return 3


def _ok(value: Any, *, mutation: bool = False) -> dict[str, Any]:
    return {"ok": True, "value": value, "error": None, "seq": 12, "mutation": mutation}


def test_a_call_sends_the_app_request_and_records_it() -> None:
    channel = _Channel(_ok({"structured": {"sum": 3}, "content": []}, mutation=True))
    mcp = McpApp(channel)
    assert mcp.demo.add(a=1, b=2) == {"sum": 3}
    assert mcp.demo.add({"a": 1}, b=2) == {"sum": 3}  # one positional dict
    want = {"jupyter_agent": "app", "app": "mcp", "method": "demo.add", "args": {"a": 1, "b": 2}}
    assert channel.requests == [want, want]
    assert channel.records[0] == AppCallRecord(
        seq=12, app="mcp", method="demo.add", args={"a": 1, "b": 2}, ok=True, mutation=True
    )


def test_bad_arguments_fail_before_anything_is_sent() -> None:
    channel = _Channel(_ok(None))
    mcp = McpApp(channel)
    with pytest.raises(TypeError, match=r"mcp\.demo\.add takes keyword arguments"):
        mcp.demo.add(1, 2)
    with pytest.raises(TypeError, match="a given twice"):
        mcp.demo.add({"a": 1}, a=2)
    with pytest.raises(TypeError, match="JSON"):
        mcp.demo.add(a=object())
    assert channel.requests == []


def test_a_failed_call_raises_with_the_hosts_message_and_is_recorded() -> None:
    error = "mcp.demo.nope: unknown tool; demo has add, echo"
    channel = _Channel({"ok": False, "value": None, "error": error, "seq": 4, "mutation": False})
    with pytest.raises(AppCallError, match="unknown tool; demo has add, echo"):
        McpApp(channel).demo.nope(x=1)
    assert [(r.method, r.ok, r.error) for r in channel.records] == [("demo.nope", False, error)]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"structured": [1, {"a": None}], "content": [{"type": "text", "text": "x"}]},
         [1, {"a": None}]),
        ({"structured": None, "content": [{"type": "text", "text": "a"},
                                           {"type": "text", "text": "b"}]}, "a\nb"),
        ({"structured": None, "content": []}, ""),
        ({"structured": 0, "content": []}, 0),  # a falsy structured result is still it
        ({"structured": None, "content": [
            {"type": "text", "text": "see"},
            {"type": "image", "data": PNG, "mime_type": "image/png"},
            {"type": "resource", "uri": "file:///a.txt", "mime_type": "text/plain",
             "text": "hello"},
        ]}, ["see", McpImage(PNG, "image/png"),
             McpResource("file:///a.txt", "text/plain", "hello")]),
        ({"structured": None, "content": [
            {"type": "resource", "uri": "mem://x", "mime_type": "", "text": ""},
        ]}, McpResource("mem://x")),  # one block: the block itself
        ({"structured": None, "content": [
            {"type": "image", "data": PNG, "mime_type": "image/png"},
        ]}, McpImage(PNG, "image/png")),  # so a cell ending with the call shows it
        ("a plain value", "a plain value"),  # not the result shape: as it is
    ],
)  # fmt: skip
def test_value_conversion(value: Any, expected: Any) -> None:
    assert mcp_value(value) == expected
    channel = _Channel(_ok(value))
    assert McpApp(channel).s.t() == expected  # the call returns the same


def test_an_image_displays_as_an_image_and_a_resource_shows_its_head() -> None:
    image = McpImage(PNG, "image/png")
    data, _ = DisplayFormatter().format(image)
    assert data["image/png"] == PNG
    assert data["text/plain"].startswith("<McpImage image/png, about")
    assert image.raw.startswith(b"\x89PNG")
    jpeg = McpImage("/9j/4AAQ", "image/jpeg")
    assert jpeg._repr_jpeg_() == base64.b64decode("/9j/4AAQ")
    assert jpeg._repr_png_() is None
    resource = McpResource("file:///big.txt", "text/plain", "x" * 500)
    assert repr(resource) == f"<McpResource file:///big.txt (text/plain): {'x' * 200 + '...'!r}>"


def test_underscore_names_are_not_proxied() -> None:
    channel = _Channel(_ok(None))
    mcp = McpApp(channel)
    for name in ("_repr_html_", "_ipython_canary_method_should_not_exist_", "__wrapped__"):
        assert not hasattr(mcp, name)
        assert not hasattr(mcp.demo, name)
    # IPython's formatter probes every _repr_*_ of a value: no call goes out.
    data, _ = DisplayFormatter().format(mcp)
    assert data == {"text/plain": "MCP tools: see the system prompt (mcp.<server>.<tool>(**args))"}
    DisplayFormatter().format(mcp.demo)
    DisplayFormatter().format(mcp.demo.add)
    assert channel.requests == []
    assert dir(mcp) == []
    assert repr(mcp.demo.add) == "<mcp tool mcp.demo.add(**args): see the system prompt>"


def test_batch_takes_mcp_specs_and_tuples() -> None:
    channel = _Channel(_ok({"structured": None, "content": [{"type": "text", "text": "ok"}]}))
    mcp = McpApp(channel)
    batch = make_batch(channel)
    results = batch(mcp.demo.add.spec(a=1, b=2), ("mcp", "demo.echo", {"text": "hi"}))
    assert channel.requests == [
        {
            "jupyter_agent": "batch",
            "items": [
                {"app": "mcp", "method": "demo.add", "args": {"a": 1, "b": 2}},
                {"app": "mcp", "method": "demo.echo", "args": {"text": "hi"}},
            ],
        }
    ]
    assert [r.value for r in results] == ["ok", "ok"]
    assert [(r.method, r.batch) for r in channel.records] == [("demo.add", 3), ("demo.echo", 3)]
    with pytest.raises(AppCallError, match=r"'server\.tool'"):
        batch(("mcp", "add", {}))
