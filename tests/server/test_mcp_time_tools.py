"""``agent/mcp``'s time-travel and evaluation tools (issue 31) with the SDK's own client
against a real Jupyter server: a chat's turn forked, re-run, diffed against its rerun, and
an eval of a one-case suite run to its end, each through the tool and scoped to the
caller, with the answers REST gives.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import nbformat
import pytest
from mcp import Client

from tests.server.helpers import call
from tests.server.test_mcp_endpoint import (  # the endpoint's fixtures
    Session,
    agent_config,
    fake,
    jp_base_url,
    mcp_url,
    session,
)

__all__ = ["agent_config", "fake", "jp_base_url", "mcp_url", "session"]

pytestmark = [pytest.mark.timeout(240), pytest.mark.usefixtures("server_kernelspec")]


def _suite(root: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("What is six times seven?"),
        nbformat.v4.new_code_cell('assert "42" in reply, reply'),
    ]
    nbformat.write(nb, root / "suite.ipynb")


def test_fork_rerun_diff_and_eval_through_mcp(
    session: Session, fetch: Any, jp_root_dir: Path
) -> None:
    _suite(jp_root_dir)

    async def go(client: Client) -> dict[str, Any]:
        said = await client.call_tool("chat", {"text": "what is 6 * 7?"})
        chat_id, run_id = said.structured_content["chat_id"], said.structured_content["run_id"]
        fork = await client.call_tool("fork_chat", {"chat_id": chat_id, "turn": 1})
        rerun = await client.call_tool("rerun", {"run_id": run_id})
        rerun_id = rerun.structured_content["run_id"]
        for _ in range(400):
            shown = await client.call_tool("show_run", {"run_id": rerun_id})
            if shown.structured_content["summary"]["status"] != "running":
                break
            await asyncio.sleep(0.1)
        diff = await client.call_tool("diff_runs", {"run_a": run_id, "run_b": rerun_id})
        evaluated = await client.call_tool(
            "run_eval", {"suite": "suite.ipynb", "wait": True, "timeout_s": 120}
        )
        status = await client.call_tool(
            "eval_status", {"eval_id": evaluated.structured_content["eval_id"]}
        )
        bad = await client.call_tool("run_eval", {"suite": "nowhere.ipynb"})
        return {
            "chat_id": chat_id,
            "run_id": run_id,
            "fork": fork,
            "rerun": rerun,
            "diff": diff,
            "eval": evaluated,
            "status": status,
            "bad": bad,
        }

    out = session(go)
    fork = out["fork"].structured_content
    assert fork["forked_from"] == {"chat_id": out["chat_id"], "turn": 1}
    _, forked = call(fetch, "agent", "chats", fork["id"])
    assert len(forked["turns"]) == 1
    assert out["rerun"].structured_content["rerun_of"] == out["run_id"]
    assert out["diff"].structured_content["identical"] is True
    state = out["eval"].structured_content
    assert (state["status"], state["passed"], state["total"]) == ("done", 1, 1)
    text = "\n".join(c.text for c in out["eval"].content if c.type == "text")
    assert text.startswith("1 of 1 case runs passed; report: agent-traces/")
    assert out["status"].structured_content["results"] == state["results"]
    assert out["bad"].is_error
    assert "no suite at nowhere.ipynb" in out["bad"].content[0].text
