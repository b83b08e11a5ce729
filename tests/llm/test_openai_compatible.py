"""OpenAI-compatible servers: goldens, reasoning parsing, num_ctx, stop, and the fake."""

from __future__ import annotations

from dataclasses import replace

import pytest

from jupyter_agent.llm import openai_compatible
from jupyter_agent.llm.chat import build_request
from jupyter_agent.llm.spec import RequestParams
from jupyter_agent.messages import Message, Text, Thinking, ToolResult, Usage
from tests.llm.adapters_support import (
    TOOLS,
    check_golden,
    conversation,
    fixture,
    make_tier,
    system_for,
)
from tests.llm.e2e_support import Harness, canary


def _spec(tier, **kw):
    params = RequestParams(
        messages=conversation(), system=system_for(tier), tier=tier, tools=TOOLS, stream=False
    )
    return build_request(replace(params, **kw))


@pytest.mark.parametrize(
    ("name", "model", "base_url", "overrides"),
    [
        ("compat_ollama_fenced", "qwen2.5-coder:7b", "http://127.0.0.1:11434/v1", None),
        (
            "compat_vllm_native",
            "llama3.1-8b-instruct",
            "http://gpu:8000/v1",
            {"tool_mode": "native", "vision": True},
        ),
        (
            "compat_mistral_xml_nostop",
            "mistral:7b",
            "http://localhost:8080/v1",
            {"supports_stop": False},
        ),
        (
            "compat_openrouter",
            "deepseek/deepseek-r1",
            "https://openrouter.ai/api/v1",
            {"num_ctx_param": "provider.context"},
        ),
    ],
)
def test_golden_requests(name, model, base_url, overrides):
    tier = make_tier("openai-compatible", model, base_url=base_url, overrides=overrides)
    check_golden(name, _spec(tier))


def test_compatible_rules():
    ollama = make_tier(
        "openai-compatible", "qwen2.5-coder:7b", base_url="http://127.0.0.1:11434/v1"
    )
    body = _spec(ollama).json
    assert body["options"] == {"num_ctx": 32768}
    assert body["stop"] == ["```result"]
    assert body["max_tokens"] == 8192
    assert "max_completion_tokens" not in body
    assert "tools" not in body  # fenced mode: tools live in the system prompt
    vllm = make_tier("openai-compatible", "qwen2.5-coder", base_url="http://127.0.0.1:8000/v1")
    assert "options" not in _spec(vllm).json
    nostop = make_tier(
        "openai-compatible", "mistral", base_url="http://h:1/v1", overrides={"supports_stop": False}
    )
    assert "stop" not in _spec(nostop).json


def test_key_is_optional():
    tier = make_tier("openai-compatible", "mistral", base_url="http://127.0.0.1:8080/v1")
    tier = type(tier)(**{**tier.__dict__, "api_key_ref": None})
    spec = openai_compatible.build_request(
        RequestParams(messages=[], system="s", tier=tier, stream=False)
    )
    assert spec.credential_ref is None


def test_parse_vllm_reasoning_content():
    reply = openai_compatible.parse_reply(fixture("vllm_reasoning_content.json"))
    assert reply.parts == (
        Thinking(text="9.11 and 9.8: compare the tenths, 1 < 8."),
        Text(text="9.8 is greater than 9.11."),
    )
    assert reply.stop == "done"
    assert reply.usage == Usage(input_tokens=18, output_tokens=102)


def test_parse_openrouter_reasoning_and_think_tags():
    reply = openai_compatible.parse_reply(fixture("openrouter_reasoning.json"))
    assert reply.parts[0] == Thinking(text="The user wants a code sample.")
    raw = {
        "choices": [
            {"message": {"content": "<think>\nhmm\n</think>\n\nHello"}, "finish_reason": "stop"}
        ]
    }
    reply = openai_compatible.parse_reply(raw)
    assert reply.parts == (Thinking(text="hmm"), Text(text="Hello"))


@pytest.mark.parametrize("mode", ["fenced", "xml"])
async def test_fake_text_mode_end_to_end(tmp_path, fake_provider, mode):
    key = canary()
    fake = fake_provider(
        [
            {
                "thinking": "Think first.",
                "text": "Counting.",
                "cells": ["print(3)"],
                "bash": ["echo hi"],
                "tool_mode": mode,
            },
            {"text": "Three.", "tool_mode": mode},
        ],
        expect_key=key,
    )
    h = Harness(
        tmp_path,
        {
            "provider": "openai-compatible",
            "model": "qwen2.5-coder:7b",
            "base_url": fake.base_url + "/v1",
        },
        key,
        profile={"tool_mode": mode},
    )
    first = await h.call([Message(role="user", parts=(Text(text="count"),))])
    assert first.format_error is None
    assert first.reply.stop == "tool"
    assert first.reply.parts[0] == Thinking(text="Think first.")
    assert [(c.name, c.args) for c in first.reply.tool_calls] == [
        ("run_cell", {"code": "print(3)"}),
        ("bash", {"command": "echo hi"}),
    ]
    assert first.cost_usd is None  # no prices for a local model
    results = tuple(
        ToolResult(call_id=c.id, content=(Text(text="3"),)) for c in first.reply.tool_calls
    )
    history = [
        Message(role="user", parts=(Text(text="count"),)),
        first.reply.as_message(),
        Message(role="user", parts=results),
    ]
    second = await h.call(history)
    assert second.reply.text == "Three."
    sent = fake.requests[-1].json["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert ("```python" if mode == "fenced" else "<run_cell>") in sent[2]["content"]
    await h.close()
