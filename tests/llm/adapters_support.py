"""Shared helpers of the adapter tests: a realistic conversation, tiers, golden files.

Golden request bodies live in ``tests/llm/golden/<name>.json`` and are compared exactly
(as JSON values). ``UPDATE_GOLDEN=1 pytest tests/llm`` rewrites them; review the diff.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

from jupyter_agent.llm.fenced import render_tools_for_prompt
from jupyter_agent.llm.spec import RequestSpec
from jupyter_agent.llm.tiers import Tier, tier_from_config
from jupyter_agent.messages import File, Message, Text, Thinking, ToolCall, ToolResult
from jupyter_agent.tools import BASH, RUN_CELL

HERE = Path(__file__).parent
GOLDEN = HERE / "golden"
FIXTURES = HERE / "fixtures"
TOOLS = (RUN_CELL, BASH)
SYSTEM = "You are the agent of this Jupyter server. Answer with Python you run."
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
PDF = b"%PDF-1.4\n%fake\n"

ANTHROPIC_THINKING = {
    "type": "thinking",
    "thinking": "I should load the CSV first.",
    "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds+Gf/ZwAA==",
}
ANTHROPIC_REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT"}
OPENAI_REASONING = {
    "id": "rs_6820f383d7c08191846711c5df8233bc",
    "type": "reasoning",
    "summary": [{"type": "summary_text", "text": "Load the CSV."}],
    "encrypted_content": "gAAAAABoIPOD1tM6AJ0x9v1Qz3eXW3nTXQ8g+/u9b6bjHEklUSRZZoQ8fzVRN8==",
}


def conversation() -> list[Message]:
    """Five messages using every part kind: files, thinking of both wires, calls, results."""
    return [
        Message(
            role="user",
            parts=(
                Text(text="Plot sales.csv and read the attached spec."),
                File(media_type="image/png", data=PNG, name="sketch.png"),
                File(media_type="application/pdf", data=PDF, name="spec.pdf"),
                File(media_type="text/csv", data=b"a,b\n1,2\n", name="sales.csv"),
            ),
        ),
        Message(
            role="assistant",
            parts=(
                Thinking(text="I should load the CSV first.", provider_state=ANTHROPIC_THINKING),
                Thinking(text=None, provider_state=ANTHROPIC_REDACTED),
                Thinking(text="Load the CSV.", provider_state=OPENAI_REASONING),
                Text(text="Loading the data."),
                ToolCall(id="call_1", name="run_cell", args={"code": "df = load('sales.csv')"}),
                ToolCall(id="call_2", name="bash", args={"command": "ls -la"}),
            ),
        ),
        Message(
            role="user",
            parts=(
                ToolResult(
                    call_id="call_1",
                    content=(
                        Text(text="Output\n[1] 2 rows"),
                        File(media_type="image/png", data=PNG, name="plot.png"),
                    ),
                ),
                ToolResult(
                    call_id="call_2", content=(Text(text="exit 2: no such file"),), is_error=True
                ),
            ),
        ),
        Message(role="assistant", parts=(Text(text="Here is the plot."),)),
        Message(role="user", parts=(Text(text="Thanks. Now the mean of b?"),)),
    ]


def make_tier(
    provider: str,
    model: str,
    *,
    api: str = "chat",
    base_url: str | None = None,
    overrides: dict[str, Any] | None = None,
    name: str = "codegen",
) -> Tier:
    data: dict[str, Any] = {
        "provider": provider,
        "model": model,
        "api": api,
        "api_key_ref": "env:JA_TEST_KEY",
    }
    if base_url is not None:
        data["base_url"] = base_url
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return tier_from_config(name, data, overrides)


def system_for(tier: Tier) -> str:
    """The system prompt as the loop composes it (text modes append the tool section)."""
    mode = tier.profile.tool_mode
    return SYSTEM if mode == "native" else SYSTEM + "\n\n" + render_tools_for_prompt(TOOLS, mode)


def check_golden(name: str, spec: RequestSpec) -> None:
    """Compare ``spec``'s intent with ``golden/<name>.json`` (or rewrite it)."""
    path = GOLDEN / f"{name}.json"
    actual = json.loads(json.dumps(spec.to_intent()))
    if os.environ.get("UPDATE_GOLDEN") == "1" or not path.exists():
        if os.environ.get("UPDATE_GOLDEN") != "1":
            raise AssertionError(f"missing golden file {path.name}: run with UPDATE_GOLDEN=1")
        path.write_text(json.dumps(actual, indent=2, ensure_ascii=False) + "\n")
    expected = json.loads(path.read_text())
    assert actual == expected, f"request differs from golden/{path.name}"


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return data
