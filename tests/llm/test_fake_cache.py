"""The fake provider's prompt-cache emulation, through the real adapters on all three wires.

The second call of a conversation repeats the first call's request as its prefix, so it
reports those tokens as cache reads (Anthropic ``cache_read_input_tokens``, OpenAI
``cached_tokens``) and only the rest as input; the adapters read them back as ``Usage``.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from jupyter_agent.core.tokens import count_tokens
from jupyter_agent.llm.fake.cache import PrefixCache, request_units
from jupyter_agent.llm.fake.script import parse_script
from jupyter_agent.messages import Message, Text, ToolResult
from tests.llm.e2e_support import Harness, canary

TIERS = {
    "anthropic": {"provider": "anthropic", "model": "claude-sonnet-4-5"},
    "openai-chat": {"provider": "openai", "model": "gpt-4.1", "api": "chat"},
    "openai-responses": {"provider": "openai", "model": "gpt-4.1", "api": "responses"},
}
SYSTEM = "You are the agent.\n\n# Runtime context\n\n- Chat id: chat_01CACHE\n- Agent name: a"
STEPS = [{"text": "Let me look.", "cells": ["print(1)"]}, {"text": "Done."}]


def _total(body: dict[str, Any]) -> int:
    """The fake's input tokens of a request with no cache (its JSON size / 4)."""
    sized = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
    return max(1, math.ceil(len(json.dumps(sized)) / 4))


def _harness(tmp_path: Any, fake: Any, wire: str) -> Harness:
    base = fake.base_url if wire == "anthropic" else fake.base_url + "/v1"
    return Harness(tmp_path, {**TIERS[wire], "base_url": base}, canary())


async def _two_calls(h: Harness, stream: bool) -> tuple[Any, Any]:
    ask = Message(role="user", parts=(Text(text="what is in data.csv? " * 20),))
    first = await h.call([ask], stream=stream, system=SYSTEM)
    results = tuple(
        ToolResult(call_id=c.id, content=(Text(text="a,b\n1,2"),)) for c in first.reply.tool_calls
    )
    history = [ask, first.reply.as_message(), Message(role="user", parts=results)]
    second = await h.call(history, stream=stream, system=SYSTEM)
    return first, second


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("wire", list(TIERS))
async def test_the_second_call_reads_the_first_calls_prefix_from_the_cache(
    tmp_path, fake_provider, wire, stream
):
    fake = fake_provider(STEPS, prefix_cache=True)
    h = _harness(tmp_path, fake, wire)
    first, second = await _two_calls(h, stream)
    await h.close()
    req1, req2 = (r.json for r in fake.requests)
    assert first.reply.usage.cache_read_tokens == 0
    assert first.reply.usage.input_tokens == _total(req1)
    # The whole first request is the second's prefix: header, then its one user message.
    prefix = sum(count_tokens(u) for u in request_units(wire, req1))
    assert prefix > 50
    assert second.reply.usage.cache_read_tokens == prefix
    assert second.reply.usage.input_tokens == _total(req2) - prefix


@pytest.mark.parametrize("wire", list(TIERS))
async def test_without_the_option_nothing_is_read_from_the_cache(tmp_path, fake_provider, wire):
    fake = fake_provider(STEPS)
    h = _harness(tmp_path, fake, wire)
    _, second = await _two_calls(h, False)
    await h.close()
    assert second.reply.usage.cache_read_tokens == 0
    assert second.reply.usage.input_tokens == _total(fake.requests[1].json)


async def test_the_script_option_and_a_scripted_usage(tmp_path, fake_provider):
    usage = {"in": 7, "out": 3}
    script = {"steps": [STEPS[0], {**STEPS[1], "usage": usage}], "prefix_cache": True}
    assert parse_script(script).prefix_cache
    fake = fake_provider(script)
    h = _harness(tmp_path, fake, "anthropic")
    _, second = await _two_calls(h, False)
    await h.close()
    assert (second.reply.usage.input_tokens, second.reply.usage.cache_read_tokens) == (7, 0)


def test_prefixes_are_kept_per_model_and_chat() -> None:
    def body(model: str, chat: str, *texts: str) -> dict[str, Any]:
        system = f"# Runtime context\n\n- Chat id: {chat}\n"
        messages = [{"role": "user", "content": t} for t in texts]
        return {"model": model, "system": system, "messages": messages}

    cache = PrefixCache()
    assert cache.serve("anthropic", body("m", "chat_A", "one")) == 0
    header, one = request_units("anthropic", body("m", "chat_A", "one"))
    hit = count_tokens(header) + count_tokens(one)
    assert cache.serve("anthropic", body("m", "chat_A", "one", "two")) == hit
    assert cache.serve("anthropic", body("m", "chat_A", "uno")) == count_tokens(header)
    assert cache.serve("anthropic", body("m2", "chat_A", "one")) == 0  # another model
    assert cache.serve("anthropic", body("m", "chat_B", "one")) == 0  # another chat
    small = PrefixCache(max_prefixes=2)
    small.serve("anthropic", body("m", "chat_A", "one", "two"))  # 3 prefixes: 1 forgotten
    assert small.serve("anthropic", body("m", "chat_A", "one")) == 0


def test_cache_control_markers_do_not_break_a_prefix() -> None:
    marked = {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}
    plain = {"type": "text", "text": "hi"}
    a = request_units("anthropic", {"messages": [{"role": "user", "content": [marked]}]})
    b = request_units("anthropic", {"messages": [{"role": "user", "content": [plain]}]})
    assert a == b


def test_the_fakes_counter_is_the_projects() -> None:
    from jupyter_agent.core.tokens import count_tokens
    from jupyter_agent.llm.fake import cache as fake_cache

    for text in ("", "a", "abcd", "abcde", "é→π🚀" * 7, "x" * 1001):
        assert fake_cache.count_tokens(text) == count_tokens(text)
