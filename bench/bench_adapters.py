"""Adapter cost: build_request + parse_reply per call, per provider, for a 30-message run.

The conversation is what a real run looks like after 15 tool rounds: a user message, then
alternating assistant turns (text, thinking, a run_cell call) and user turns (a ~1.5 KB
digest as the tool result), then a final user question. Each figure is the median of
several repeats of ``chat.build_request`` (text modes included) plus the adapter's
``parse_reply`` of a realistic reply, and is shown as a fraction of a 1 ms loopback round
trip (PERF-BASELINES: a reused httpx AsyncClient POSTing 20 KB to loopback takes ~0.78 ms).

Run: ``python bench/bench_adapters.py``.
"""

from __future__ import annotations

import json
import statistics
import time
import warnings

from jupyter_agent.llm.chat import ADAPTERS, build_request
from jupyter_agent.llm.fenced import render_tools_for_prompt
from jupyter_agent.llm.spec import RequestParams
from jupyter_agent.llm.tiers import tier_from_config
from jupyter_agent.messages import Message, Text, Thinking, ToolCall, ToolResult
from jupyter_agent.tools import BASH, RUN_CELL

TOOLS = (RUN_CELL, BASH)
DIGEST = "Output\n" + "\n".join(f"[{i}] value {i}: {'x' * 40}" for i in range(30))


def conversation(rounds: int = 14) -> list[Message]:
    msgs = [Message(role="user", parts=(Text(text="Analyse sales.csv and plot it."),))]
    for i in range(rounds):
        state = {"type": "thinking", "thinking": f"step {i}", "signature": "s" * 200}
        msgs.append(
            Message(
                role="assistant",
                parts=(
                    Thinking(text=f"step {i}", provider_state=state),
                    Text(text=f"Step {i}: computing."),
                    ToolCall(
                        id=f"call_{i}",
                        name="run_cell",
                        args={"code": f"df{i} = df.groupby('k').sum()\nprint(df{i})"},
                    ),
                ),
            )
        )
        msgs.append(
            Message(
                role="user", parts=(ToolResult(call_id=f"call_{i}", content=(Text(text=DIGEST),)),)
            )
        )
    msgs.append(Message(role="user", parts=(Text(text="And the mean?"),)))
    return msgs


REPLIES = {
    "anthropic": {
        "type": "message",
        "model": "m",
        "stop_reason": "tool_use",
        "content": [
            {"type": "thinking", "thinking": "t" * 300, "signature": "s" * 200},
            {"type": "text", "text": "Next."},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "run_cell",
                "input": {"code": "print(df.mean())"},
            },
        ],
        "usage": {"input_tokens": 9000, "output_tokens": 80, "cache_read_input_tokens": 8000},
    },
    "openai-chat": {
        "object": "chat.completion",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": "Next.",
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {
                                "name": "run_cell",
                                "arguments": '{"code": "print(df.mean())"}',
                            },
                        }
                    ],
                },
            }
        ],
        "usage": {
            "prompt_tokens": 9000,
            "completion_tokens": 80,
            "prompt_tokens_details": {"cached_tokens": 8000},
        },
    },
    "openai-responses": {
        "object": "response",
        "status": "completed",
        "model": "m",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "g" * 800},
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "run_cell",
                "arguments": '{"code": "print(df.mean())"}',
            },
        ],
        "usage": {
            "input_tokens": 9000,
            "output_tokens": 80,
            "input_tokens_details": {"cached_tokens": 8000},
        },
    },
}

CASES = [
    ("anthropic (native)", "anthropic", "claude-sonnet-4-5", "chat", None, "anthropic"),
    ("openai chat (native)", "openai", "gpt-4.1", "chat", None, "openai-chat"),
    ("openai responses (native)", "openai", "o4-mini", "responses", None, "openai-responses"),
    (
        "openai-compatible (fenced)",
        "openai-compatible",
        "qwen2.5-coder",
        "chat",
        None,
        "openai-chat",
    ),
    (
        "anthropic (xml mode)",
        "anthropic",
        "claude-haiku-4-5",
        "chat",
        {"tool_mode": "xml"},
        "anthropic",
    ),
]


def measure(fn, *, number: int = 200, repeat: int = 7) -> float:
    """Median µs per call."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - start) / number * 1e6)
    return statistics.median(times)


def main() -> None:
    msgs = conversation()
    print(f"conversation: {len(msgs)} messages")
    print(
        f"{'case':30} {'build µs':>9} {'parse µs':>9} {'total µs':>9} {'of 1 ms':>8} {'body KB':>8}"
    )
    for label, provider, model, api, overrides, wire in CASES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            base = "http://127.0.0.1:11434/v1" if provider == "openai-compatible" else None
            data = {"provider": provider, "model": model, "api": api}
            if base:
                data["base_url"] = base
            tier = tier_from_config("codegen", data, overrides)
        mode = tier.profile.tool_mode
        system = "You are the agent." + (
            "" if mode == "native" else "\n\n" + render_tools_for_prompt(TOOLS, mode)
        )
        adapter = ADAPTERS[provider]
        reply = REPLIES[wire]

        def build(tier=tier, system=system):
            params = RequestParams(messages=msgs, system=system, tier=tier, tools=TOOLS)
            return build_request(params)

        def parse(adapter=adapter, reply=reply):
            return adapter.parse_reply(reply)

        size = len(json.dumps(build().json)) / 1024
        b, p = measure(build), measure(parse)
        total = b + p
        print(f"{label:30} {b:9.1f} {p:9.1f} {total:9.1f} {total / 1000:8.1%} {size:8.1f}")


if __name__ == "__main__":
    main()
