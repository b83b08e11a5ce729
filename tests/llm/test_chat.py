"""``chat``: the effects it yields, and how it reads their results."""

from __future__ import annotations

import json

import pytest

from jupyter_agent.effects import Result
from jupyter_agent.exceptions import (
    ProviderError,
    ProviderProtocolError,
    ProviderStatusError,
    ProviderTimeout,
    RunCancelled,
)
from jupyter_agent.llm import anthropic, openai, openai_compatible
from jupyter_agent.llm.chat import ADAPTERS, ChatResult, chat
from jupyter_agent.messages import Message, Text
from tests.llm.adapters_support import TOOLS, make_tier

USER = [Message(role="user", parts=(Text(text="hi"),))]


def _anthropic_body(text, stop="end_turn"):
    return {
        "type": "message",
        "model": "claude-haiku-4-5",
        "stop_reason": stop,
        "content": [{"type": "text", "text": text}],
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def _drive(gen, *results):
    """Send ``results`` in order; returns (effects asked, value or the exception)."""
    effects = [next(gen)]
    try:
        for result in results:
            effects.append(gen.send(result))
    except StopIteration as stop:
        return effects, stop.value
    raise AssertionError(f"chat asked for more effects: {effects[-1]}")


def _ok(body, seq=3):
    return Result(seq=seq, name="http.post", data={"status": 200, "json": body, "attempts": []})


def test_registry():
    assert {
        "anthropic": anthropic,
        "fake": anthropic,
        "openai": openai,
        "openai-compatible": openai_compatible,
    } == ADAPTERS


def test_by_name_two_config_gets_then_one_http_post():
    tier = {"provider": "anthropic", "model": "claude-haiku-4-5", "api_key_ref": "env:K"}
    gen = chat(USER, system="s", tier="codegen", tools=TOOLS)
    effects, value = _drive(
        gen,
        Result(seq=1, name="config.get", data=tier),
        Result(seq=2, name="config.get", data=None),
        _ok(_anthropic_body("hello")),
    )
    assert [e.name for e in effects] == ["config.get", "config.get", "http.post"]
    intent = effects[2].data
    assert intent["credential_ref"] == "env:K"
    assert "env:K" not in json.dumps(intent["headers"])
    assert isinstance(value, ChatResult)
    assert value.reply.text == "hello"
    assert value.cost_usd == pytest.approx((10 * 1 + 5 * 5) / 1e6)
    assert value.tier.name == "codegen"


@pytest.mark.parametrize(
    ("error", "cls"),
    [
        (
            {
                "type": "ProviderStatusError",
                "message": "HTTP 400",
                "status": 400,
                "body": {"error": {"type": "invalid_request_error"}},
                "attempts": [{"status": 400}],
            },
            ProviderStatusError,
        ),
        ({"error": "ProviderTimeout", "message": "deadline", "status": None}, ProviderTimeout),
        ({"type": "Weird", "message": "?"}, ProviderError),
    ],
)
def test_errors_are_rebuilt(error, cls):
    gen = chat(USER, system="s", tier=make_tier("anthropic", "claude-haiku-4-5"), tools=TOOLS)
    next(gen)
    with pytest.raises(cls) as info:
        gen.send(Result(seq=1, name="http.post", error=error))
    assert type(info.value) is cls
    assert info.value.status == error.get("status")


def test_cancelled_raises_run_cancelled():
    gen = chat(USER, system="s", tier=make_tier("openai", "gpt-4.1"), tools=TOOLS)
    next(gen)
    with pytest.raises(RunCancelled):
        gen.send(Result(seq=1, name="http.post", data={"cancelled": "break_hard"}))


@pytest.mark.parametrize(
    ("data", "cls"),
    [
        ({"status": 200, "json": {"no": "content"}}, ProviderProtocolError),
        ({"json": {}}, ProviderProtocolError),
        ({"status": 500, "json": {}}, ProviderStatusError),
    ],
)
def test_bad_results(data, cls):
    gen = chat(USER, system="s", tier=make_tier("anthropic", "claude-haiku-4-5"), tools=TOOLS)
    next(gen)
    with pytest.raises(cls):
        gen.send(Result(seq=1, name="http.post", data=data))


def test_text_mode_calls_and_format_errors():
    tier = make_tier("anthropic", "claude-haiku-4-5", overrides={"tool_mode": "fenced"})
    gen = chat(USER, system="s", tier=tier, tools=TOOLS)
    effects, value = _drive(
        gen, _ok(_anthropic_body("Go.\n```python\nprint(1)\n```", "stop_sequence"))
    )
    intent = effects[0].data
    assert "tools" not in intent["json"]
    assert intent["json"]["stop_sequences"] == ["```result"]
    assert value.reply.stop == "tool"
    assert value.reply.tool_calls[0].args == {"code": "print(1)"}
    assert value.format_error is None

    gen = chat(USER, system="s", tier=tier, tools=TOOLS)
    _, value = _drive(gen, _ok(_anthropic_body("```python\nprint(1)")))
    assert value.format_error is not None
    assert "never closed" in value.format_error
    assert value.reply.tool_calls == ()
    assert value.reply.text == "```python\nprint(1)"

    gen = chat(USER, system="s", tier=tier, tools=TOOLS)
    _, value = _drive(gen, _ok(_anthropic_body("```python\nprint(1)", "max_tokens")))
    assert (value.reply.stop, value.format_error) == ("length", None)


def test_wrapup_in_text_mode_does_not_parse_calls():
    tier = make_tier("openai", "gpt-4o", overrides={"tool_mode": "xml"})
    gen = chat(USER, system="s", tier=tier, tools=())
    body = {
        "choices": [{"message": {"content": "<run_cell>x</run_cell>"}, "finish_reason": "stop"}]
    }
    _, value = _drive(gen, _ok(body))
    assert value.reply.tool_calls == ()
    assert value.reply.stop == "done"
