"""``mcp`` in a real agent kernel (through jupyter_client): a tool call is one app request
the host answers, and an image the tool returned, ending the cell, is an image output the
digest attaches for a model that sees images."""

from __future__ import annotations

import base64
from typing import Any

from jupyter_agent.core.digest.render import DigestOptions, digest_cell
from jupyter_agent.messages import File
from jupyter_agent.runtime.kernels.pool import AgentKernelHandle
from tests.core.test_digest import _png


class McpHost:
    """An AppHost answering ``mcp`` calls the way the host's MCP app does: ``demo.add``
    with a structured sum, ``demo.picture`` with a text and an image block."""

    def __init__(self, png: bytes) -> None:
        self.png = base64.b64encode(png).decode()
        self.calls: list[tuple[str, str, dict[str, Any], int | None]] = []

    async def call(
        self, app: str, method: str, args: dict[str, Any], *, parent: int | None
    ) -> dict[str, Any]:
        self.calls.append((app, method, args, parent))
        if method == "demo.add":
            value: dict[str, Any] = {
                "structured": {"result": args["a"] + args["b"]},
                "content": [{"type": "text", "text": str(args["a"] + args["b"])}],
            }
        else:
            value = {
                "structured": None,
                "content": [
                    {"type": "text", "text": "a red square"},
                    {"type": "image", "data": self.png, "mime_type": "image/png"},
                ],
            }
        seq = 40 + len(self.calls)
        return {"ok": True, "value": value, "error": None, "seq": seq, "mutation": False}


async def test_an_mcp_call_is_an_app_request_and_its_image_an_output(
    agent_kernel: AgentKernelHandle,
) -> None:
    host = McpHost(_png(3, 2))
    code = (
        "total = mcp.demo.add(a=1, b=2)\n"
        "print(total)\n"
        'text, image = mcp.demo.picture(size="small")\n'
        "print(text, type(image).__name__)\n"
        "image"
    )
    result = await agent_kernel.run_cell("c1", code, timeout_s=30, host=host, parent=5)
    assert result.error is None, result.error
    assert host.calls == [
        ("mcp", "demo.add", {"a": 1, "b": 2}, 5),
        ("mcp", "demo.picture", {"size": "small"}, 5),
    ]
    assert [p.text for p in result.prints] == ["{'result': 3}", "a red square McpImage"]
    assert [(c.app, c.method, c.seq, c.ok) for c in result.app_calls] == [
        ("mcp", "demo.add", 41, True),
        ("mcp", "demo.picture", 42, True),
    ]
    execute = [o for o in result.outputs if o["output_type"] == "execute_result"]
    assert execute[0]["data"]["image/png"] == host.png
    digest = digest_cell(result, DigestOptions(vision=True))
    assert digest.content[1:] == (
        File(media_type="image/png", data=_png(3, 2), name="image-1.png"),
    )
    assert "image/png 3x2 (attached as image 1)" in digest.text


async def test_a_record_never_answers_a_cell_the_host_runs(
    agent_kernel: AgentKernelHandle,
) -> None:
    """An exported notebook's record installed in a kernel (by any cell) answers only the
    cells an ordinary client runs: a cell run by the agent's host still asks the host."""
    host = McpHost(_png(1, 1))
    recorded = {
        "calls": [
            {
                "app": "mcp",
                "method": "demo.add",
                "args": {"a": 1, "b": 2},
                "reply": {"ok": True, "value": {"structured": {"result": -1}, "content": []},
                          "error": None, "seq": 1, "mutation": False},
            }
        ],
        "cells": [],
    }  # fmt: skip
    install = (
        f"from jupyter_agent.kernel.recorded import play_recorded\nplay_recorded({recorded!r})"
    )
    done = await agent_kernel.run_cell("c1", install, timeout_s=30, host=host, parent=1)
    assert done.error is None, done.error
    result = await agent_kernel.run_cell(
        "c2", "print(mcp.demo.add(a=1, b=2))", timeout_s=30, host=host, parent=2
    )
    assert result.error is None, result.error
    assert [p.text for p in result.prints] == ["{'result': 3}"]  # the host's, not -1
    assert host.calls == [("mcp", "demo.add", {"a": 1, "b": 2}, 2)]
