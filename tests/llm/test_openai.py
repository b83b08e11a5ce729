"""The OpenAI adapter (Chat Completions and Responses): goldens, fixtures, the fake."""

from __future__ import annotations

import json

import pytest

from jupyter_agent.exceptions import ProviderStatusError
from jupyter_agent.llm import openai, openai_responses
from jupyter_agent.llm.chat import build_request
from jupyter_agent.llm.spec import RequestParams
from jupyter_agent.messages import Message, Text, Thinking, ToolCall, ToolResult, Usage
from tests.llm.adapters_support import (
    OPENAI_REASONING,
    TOOLS,
    check_golden,
    conversation,
    fixture,
    make_tier,
    system_for,
)
from tests.llm.e2e_support import Harness, canary


def _spec(tier, **kw):
    return build_request(
        RequestParams(
            messages=conversation(),
            system=system_for(tier),
            tier=tier,
            tools=kw.pop("tools", TOOLS),
            stream=kw.pop("stream", False),
            **kw,
        )
    )


@pytest.mark.parametrize(
    ("name", "model", "api", "overrides", "stream"),
    [
        ("openai_chat_native", "gpt-4.1-2025-04-14", "chat", None, False),
        ("openai_chat_reasoning_stream", "o3", "chat", {"reasoning_effort": "high"}, True),
        ("openai_chat_fenced", "gpt-4o-mini", "chat", {"tool_mode": "fenced"}, False),
        ("openai_responses_reasoning", "o4-mini", "responses", None, False),
        ("openai_responses_stream", "gpt-5", "responses", {"reasoning_effort": "low"}, True),
        ("openai_responses_xml", "gpt-4.1", "responses", {"tool_mode": "xml"}, False),
    ],
)
def test_golden_requests(name, model, api, overrides, stream):
    tier = make_tier("openai", model, api=api, overrides=overrides)
    check_golden(name, _spec(tier, stream=stream))


def test_golden_wrapups():
    chat_spec = _spec(make_tier("openai", "gpt-4.1"), tools=())
    check_golden("openai_chat_wrapup", chat_spec)
    assert chat_spec.json["tool_choice"] == "none"
    resp_spec = _spec(make_tier("openai", "o3", api="responses"), tools=())
    check_golden("openai_responses_wrapup", resp_spec)
    assert resp_spec.json["tool_choice"] == "none"


def test_chat_request_rules():
    spec = _spec(make_tier("openai", "gpt-4.1"), stream=True, max_tokens=500)
    body = spec.json
    assert spec.url == "https://api.openai.com/v1/chat/completions"
    assert spec.wire == "openai-chat"
    assert (spec.credential_header, spec.credential_prefix) == ("authorization", "Bearer ")
    assert body["max_completion_tokens"] == 500
    assert body["stream_options"] == {"include_usage": True}
    roles = [m["role"] for m in body["messages"]]
    # system, user, assistant (tool_calls), tool, tool, user (moved image), assistant, user
    assert roles == ["system", "user", "assistant", "tool", "tool", "user", "assistant", "user"]
    call = body["messages"][2]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"code": "df = load('sales.csv')"}
    assert body["messages"][4]["content"].startswith("[error]")
    moved = body["messages"][5]["content"]
    assert moved[0]["text"] == "Files from tool call call_1:"
    assert moved[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert "reasoning" not in json.dumps(body["messages"])  # no way to return it on chat


def test_reasoning_models_use_developer_role_and_no_stop():
    body = _spec(make_tier("openai", "o3", overrides={"tool_mode": "fenced"})).json
    assert body["messages"][0]["role"] == "developer"
    assert "stop" not in body
    body = _spec(make_tier("openai", "gpt-4o", overrides={"tool_mode": "fenced"})).json
    assert body["messages"][0]["role"] == "system"
    assert body["stop"] == ["```result"]


def test_responses_request_rules():
    spec = _spec(make_tier("openai", "o4-mini", api="responses"))
    body = spec.json
    assert spec.url == "https://api.openai.com/v1/responses"
    assert spec.wire == "openai-responses"
    assert body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["instructions"].startswith("You are the agent")
    kinds = [i.get("type", i.get("role")) for i in body["input"]]
    assert kinds == [
        "user",
        "reasoning",
        "assistant",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
        "user",
        "assistant",
        "user",
    ]
    reasoning = body["input"][1]
    assert reasoning == {k: v for k, v in OPENAI_REASONING.items() if k != "id"}
    assert "thinking" not in json.dumps(body)  # Anthropic blocks are not sent


def test_parse_chat_tool_calls_fixture():
    reply = openai.parse_reply(fixture("openai_chat_tool_calls.json"))
    assert reply.stop == "tool"
    assert reply.tool_calls == (
        ToolCall(id="call_abc123", name="get_current_weather", args={"location": "Boston, MA"}),
    )
    assert reply.usage == Usage(input_tokens=82, output_tokens=17)
    assert reply.model == "gpt-4o-mini-2024-07-18"


def test_parse_chat_usage_normalises_cache():
    reply = openai.parse_reply(fixture("openai_chat_cached_reasoning.json"))
    assert reply.stop == "done"
    assert reply.usage == Usage(
        input_tokens=2006 - 1920, output_tokens=300, cache_read_tokens=1920, reasoning_tokens=192
    )


@pytest.mark.parametrize(
    ("reason", "stop"),
    [("stop", "done"), ("length", "length"), ("content_filter", "done"), ("tool_calls", "done")],
)
def test_chat_finish_reasons(reason, stop):
    body = {"choices": [{"message": {"content": "x"}, "finish_reason": reason}]}
    reply = openai.parse_reply(body)
    assert reply.stop == stop  # tool_calls without calls is not a tool stop
    assert reply.stop_detail == reason


def test_chat_bad_arguments_and_refusal():
    body = {
        "choices": [
            {
                "message": {
                    "content": None,
                    "refusal": "I can't help with that.",
                    "tool_calls": [
                        {
                            "id": "c",
                            "type": "function",
                            "function": {"name": "run_cell", "arguments": "{bad"},
                        }
                    ],
                },
                "finish_reason": "stop",
            }
        ]
    }
    reply = openai.parse_reply(body)
    assert reply.stop == "tool"  # calls present: some servers say "stop"
    assert reply.tool_calls[0].args == {"__invalid_json__": "{bad"}
    assert reply.stop_detail == "refusal"


def test_parse_responses_reasoning_and_call():
    body = fixture("openai_responses_reasoning_call.json")
    reply = openai.parse_reply(body)
    assert reply.stop == "tool"
    thinking, call = reply.parts
    assert isinstance(thinking, Thinking)
    assert thinking.provider_state == body["output"][0]
    assert thinking.text is not None
    assert thinking.text.startswith("**Checking")
    assert call == ToolCall(
        id="call_12345xyz", name="get_weather", args={"location": "Paris, France"}
    )
    assert reply.usage == Usage(
        input_tokens=200, output_tokens=150, cache_read_tokens=128, reasoning_tokens=128
    )
    # sent back: the encrypted content byte-exact, the item id left out (store: false)
    items = openai_responses.input_items(
        [reply.as_message()], make_tier("openai", "o4-mini").profile
    )
    assert items[0]["encrypted_content"] == body["output"][0]["encrypted_content"]
    assert "id" not in items[0]
    assert items[1] == {
        "type": "function_call",
        "call_id": "call_12345xyz",
        "name": "get_weather",
        "arguments": '{"location": "Paris, France"}',
    }


def test_parse_responses_incomplete_is_length():
    reply = openai.parse_reply(fixture("openai_responses_incomplete.json"))
    assert reply.stop == "length"
    assert reply.stop_detail == "max_output_tokens"
    assert reply.text.startswith("Silent circuits")


@pytest.mark.parametrize("stream", [True, False])
async def test_fake_chat_end_to_end(tmp_path, fake_provider, stream):
    key = canary()
    fake = fake_provider(
        [
            {
                "text": "Let me run it.",
                "cells": ["print(1)"],
                "bash": ["ls"],
                "usage": {"in": 1000, "out": 40, "cache_read": 600, "reasoning": 10},
            },
            {"text": "Done.", "expect": {"system_contains": "agent of this Jupyter"}},
        ],
        expect_key=key,
    )
    h = Harness(
        tmp_path, {"provider": "openai", "model": "gpt-4.1", "base_url": fake.base_url + "/v1"}, key
    )
    first = await h.call([Message(role="user", parts=(Text(text="go"),))], stream=stream)
    assert first.reply.stop == "tool"
    assert [c.name for c in first.reply.tool_calls] == ["run_cell", "bash"]
    assert first.reply.usage == Usage(
        input_tokens=1000, output_tokens=40, cache_read_tokens=600, reasoning_tokens=10
    )
    assert first.cost_usd == pytest.approx((1000 * 2 + 40 * 8 + 600 * 0.5) / 1e6)
    results = tuple(
        ToolResult(call_id=c.id, content=(Text(text="one"),)) for c in first.reply.tool_calls
    )
    history = [
        Message(role="user", parts=(Text(text="go"),)),
        first.reply.as_message(),
        Message(role="user", parts=results),
    ]
    second = await h.call(history, stream=stream)
    assert second.reply.text == "Done."
    roles = [m["role"] for m in fake.requests[-1].json["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "tool"]
    assert fake.requests[-1].headers["authorization"] == f"Bearer {key}"
    await h.close()


@pytest.mark.parametrize("stream", [True, False])
async def test_fake_responses_reasoning_round_trip(tmp_path, fake_provider, stream):
    key = canary()
    fake = fake_provider(
        [{"thinking": "Plan: print.", "cells": ["print(2)"]}, {"text": "2"}], expect_key=key
    )
    h = Harness(
        tmp_path,
        {
            "provider": "openai",
            "model": "o4-mini",
            "api": "responses",
            "base_url": fake.base_url + "/v1",
        },
        key,
    )
    first = await h.call([Message(role="user", parts=(Text(text="go"),))], stream=stream)
    thinking = first.reply.parts[0]
    assert isinstance(thinking, Thinking)
    assert thinking.provider_state["encrypted_content"]
    call = first.reply.tool_calls[0]
    history = [
        Message(role="user", parts=(Text(text="go"),)),
        first.reply.as_message(),
        Message(role="user", parts=(ToolResult(call_id=call.id, content=(Text(text="2"),)),)),
    ]
    second = await h.call(history, stream=stream)
    assert second.reply.text == "2"
    sent = fake.requests[-1].json["input"][1]
    assert sent["encrypted_content"] == thinking.provider_state["encrypted_content"]
    # an altered encrypted_content is refused by the fake, like the real API
    forged = Thinking(provider_state={**thinking.provider_state, "encrypted_content": "gAAAAx"})
    bad = [history[0], Message(role="assistant", parts=(forged, call)), history[2]]
    fake.load([{"text": "never"}])
    with pytest.raises(ProviderStatusError):
        await h.call(bad, stream=stream)
    await h.close()
