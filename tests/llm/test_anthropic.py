"""The Anthropic adapter: golden requests, real-format replies, and the fake end to end."""

from __future__ import annotations

import json

import pytest

from jupyter_agent.exceptions import ProviderProtocolError, ProviderStatusError
from jupyter_agent.llm import anthropic
from jupyter_agent.llm.chat import build_request
from jupyter_agent.llm.spec import RequestParams
from jupyter_agent.messages import File, Message, Text, Thinking, ToolCall, ToolResult, Usage
from tests.llm.adapters_support import (
    ANTHROPIC_REDACTED,
    ANTHROPIC_THINKING,
    TOOLS,
    check_golden,
    conversation,
    fixture,
    make_tier,
    system_for,
)
from tests.llm.e2e_support import Harness, canary


def _spec(tier, messages=None, **kw):
    return build_request(
        RequestParams(
            messages=conversation() if messages is None else messages,
            system=system_for(tier),
            tier=tier,
            tools=kw.pop("tools", TOOLS),
            stream=kw.pop("stream", False),
            **kw,
        )
    )


@pytest.mark.parametrize(
    ("name", "model", "overrides", "stream"),
    [
        ("anthropic_budget", "claude-sonnet-4-5-20250929", None, False),
        ("anthropic_adaptive_stream", "claude-opus-4-6", None, True),
        ("anthropic_fenced", "claude-haiku-4-5", {"tool_mode": "fenced"}, False),
        ("anthropic_xml", "claude-3-5-haiku-latest", {"tool_mode": "xml"}, False),
    ],
)
def test_golden_requests(name, model, overrides, stream):
    tier = make_tier("anthropic", model, overrides=overrides)
    check_golden(name, _spec(tier, stream=stream))


def test_golden_wrapup_keeps_tools_with_choice_none():
    tier = make_tier("anthropic", "claude-sonnet-4-5")
    spec = _spec(tier, tools=())
    check_golden("anthropic_wrapup", spec)
    assert spec.json["tool_choice"] == {"type": "none"}
    assert [t["name"] for t in spec.json["tools"]] == ["run_cell", "bash"]


def test_request_rules():
    tier = make_tier("anthropic", "claude-sonnet-4-5")
    spec = _spec(tier, max_tokens=4000)
    body = spec.json
    assert spec.url == "https://api.anthropic.com/v1/messages"
    assert spec.headers == {"anthropic-version": "2023-06-01"}
    assert (spec.credential_header, spec.credential_prefix) == ("x-api-key", "")
    # budget stays below max_tokens
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 3999}
    text = json.dumps(body)
    assert 0 < text.count("cache_control") <= 4
    assistant = body["messages"][1]["content"]
    # thinking blocks sent back exactly as received; the OpenAI reasoning item is dropped
    assert assistant[0] == ANTHROPIC_THINKING
    assert assistant[1] == ANTHROPIC_REDACTED
    assert "encrypted_content" not in text
    result = body["messages"][2]["content"][0]
    assert result["type"] == "tool_result"
    assert [b["type"] for b in result["content"]] == ["text", "image"]
    assert body["messages"][2]["content"][1]["is_error"] is True


def test_merges_roles_and_puts_tool_results_first():
    tier = make_tier("anthropic", "claude-haiku-4-5")
    msgs = [
        Message(role="user", parts=(Text(text="hi"),)),
        Message(role="user", parts=(Text(text="  "),)),
        Message(role="assistant", parts=(ToolCall(id="t1", name="run_cell", args={"code": "1"}),)),
        Message(role="user", parts=(Text(text="steer"),)),
        Message(role="user", parts=(ToolResult(call_id="t1", content=(Text(text="1"),)),)),
    ]
    params = RequestParams(messages=msgs, system="", tools=TOOLS, tier=tier, stream=False)
    body = anthropic.build_request(params).json
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert [b["type"] for b in body["messages"][2]["content"]] == ["tool_result", "text"]
    assert "system" not in body
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}
    ]


def test_no_vision_and_unknown_files_become_notes():
    tier = make_tier("anthropic", "claude-3-5-haiku")
    msg = Message(
        role="user",
        parts=(
            File(media_type="image/png", data=b"x"),
            File(media_type="application/zip", data=b"x", name="a.zip"),
        ),
    )
    params = RequestParams(messages=[msg], system="s", tier=tier, stream=False)
    body = anthropic.build_request(params).json
    texts = [b["text"] for b in body["messages"][0]["content"]]
    assert "no vision" in texts[0]
    assert "a.zip" in texts[1]


def test_parse_tool_use_fixture():
    reply = anthropic.parse_reply(fixture("anthropic_tool_use.json"))
    assert reply.stop == "tool"
    assert reply.stop_detail == "tool_use"
    assert reply.text.startswith("I'll check")
    assert reply.tool_calls == (
        ToolCall(
            id="toolu_01A09q90qw90lq917835lq9",
            name="get_weather",
            args={"location": "San Francisco, CA", "unit": "celsius"},
        ),
    )
    assert reply.usage == Usage(input_tokens=472, output_tokens=91)


def test_parse_thinking_fixture_and_cache_usage():
    body = fixture("anthropic_thinking.json")
    reply = anthropic.parse_reply(body)
    assert reply.stop == "done"
    thinking = reply.parts[0]
    assert isinstance(thinking, Thinking)
    assert thinking.provider_state == body["content"][0]
    assert thinking.text
    assert thinking.text.startswith("Let me analyze")
    # Anthropic input_tokens already exclude cache: kept as is
    assert reply.usage == Usage(
        input_tokens=2095, output_tokens=503, cache_read_tokens=8192, cache_write_tokens=1024
    )


def test_parse_redacted_thinking_and_send_back_unchanged():
    body = fixture("anthropic_redacted_thinking.json")
    reply = anthropic.parse_reply(body)
    assert [type(p).__name__ for p in reply.parts] == ["Thinking", "Thinking", "ToolCall"]
    tier = make_tier("anthropic", "claude-3-7-sonnet")
    sent = anthropic.build_request(
        RequestParams(
            messages=[Message(role="user", parts=(Text(text="q"),)), reply.as_message()],
            system="s",
            tools=TOOLS,
            tier=tier,
            stream=False,
        )
    ).json
    assert sent["messages"][1]["content"] == body["content"]


@pytest.mark.parametrize(
    ("reason", "stop"),
    [
        ("end_turn", "done"),
        ("stop_sequence", "done"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("pause_turn", "done"),
        ("refusal", "done"),
        ("something_new", "done"),
        (None, "done"),
    ],
)
def test_stop_reasons(reason, stop):
    body = {
        "type": "message",
        "content": [{"type": "text", "text": "x"}],
        "stop_reason": reason,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    reply = anthropic.parse_reply(body)
    assert reply.stop == stop
    assert reply.stop_detail == reason


def test_error_body_is_a_protocol_error():
    with pytest.raises(ProviderProtocolError):
        anthropic.parse_reply({"type": "error", "error": {"type": "overloaded_error"}})
    with pytest.raises(ProviderProtocolError):
        anthropic.parse_reply({"nothing": 1})


@pytest.mark.parametrize("stream", [True, False])
async def test_fake_end_to_end_thinking_round_trip(tmp_path, fake_provider, stream):
    key = canary()
    fake = fake_provider(
        [
            {
                "thinking": "Compute it.",
                "text": "Running.",
                "cells": ["print(6*7)"],
                "usage": {"in": 100, "out": 20, "cache_read": 50, "cache_write": 10},
            },
            {"text": "42", "expect": {"last_user_contains": "42"}},
        ],
        expect_key=key,
    )
    h = Harness(
        tmp_path, {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}, key
    )
    first = await h.call([Message(role="user", parts=(Text(text="6*7?"),))], stream=stream)
    assert first.reply.stop == "tool"
    call = first.reply.tool_calls[0]
    assert call.args == {"code": "print(6*7)"}
    assert first.reply.usage == Usage(
        input_tokens=100, output_tokens=20, cache_read_tokens=50, cache_write_tokens=10
    )
    assert first.cost_usd == pytest.approx((100 * 3 + 20 * 15 + 50 * 0.3 + 10 * 3.75) / 1e6)
    history = [
        Message(role="user", parts=(Text(text="6*7?"),)),
        first.reply.as_message(),
        Message(role="user", parts=(ToolResult(call_id=call.id, content=(Text(text="42"),)),)),
    ]
    second = await h.call(history, stream=stream)
    assert second.reply.text == "42"
    assert second.reply.stop == "done"
    sent = fake.requests[-1].json["messages"][1]["content"][0]
    assert sent == first.reply.parts[0].provider_state  # the signature went back unchanged
    if stream:
        assert "".join(h.deltas).endswith("42")
    text = await h.close()
    lines = [json.loads(x) for x in text.splitlines()[1:]]
    assert [(x["name"], x["phase"]) for x in lines].count(("http.post", "intent")) == 2


async def test_fake_rejects_an_altered_signature(tmp_path, fake_provider):
    key = canary()
    fake = fake_provider([{"thinking": "hmm", "cells": ["1"]}, {"text": "never"}], expect_key=key)
    h = Harness(
        tmp_path, {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}, key
    )
    first = await h.call([Message(role="user", parts=(Text(text="go"),))])
    thinking = first.reply.parts[0]
    assert isinstance(thinking, Thinking)
    forged = Thinking(
        text=thinking.text, provider_state={**thinking.provider_state, "thinking": "altered"}
    )
    call = first.reply.tool_calls[0]
    history = [
        Message(role="user", parts=(Text(text="go"),)),
        Message(role="assistant", parts=(forged, call)),
        Message(role="user", parts=(ToolResult(call_id=call.id, content=(Text(text="1"),)),)),
    ]
    with pytest.raises(ProviderStatusError) as info:
        await h.call(history)
    assert info.value.status == 400
    text = await h.close()
    assert '"error"' in text
