"""A provider reply holding a lone surrogate (half an emoji) is repaired as it is read.

Each wire (Anthropic Messages, Chat Completions, Responses), streamed and not, through the
real transport and effect log against the fake provider on loopback: the reply's text and
its tool-call arguments hold U+FFFD, the log holds valid text, and the next request sends
valid text. A character whose two halves arrive in two deltas is joined, not replaced.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.messages import Message, Text, ToolResult
from jupyter_agent.text import has_lone_surrogate, lone_surrogate
from tests.llm.e2e_support import Harness, canary

HALF = "\ud83d"  # the high half of U+1F600, as a provider cut mid-emoji sends it
FFFD = "\ufffd"

WIRES = {
    "anthropic": {"provider": "anthropic", "model": "claude-sonnet-4-5", "base_url": ""},
    "openai-chat": {"provider": "openai", "model": "gpt-4.1", "base_url": "/v1"},
    "openai-responses": {
        "provider": "openai",
        "model": "gpt-4.1",
        "api": "responses",
        "base_url": "/v1",
    },
}


def tier_for(wire: str, fake: Any) -> dict[str, Any]:
    tier = dict(WIRES[wire])
    tier["base_url"] = fake.base_url + tier["base_url"]
    return tier


def log_strings_valid(text: str) -> None:
    """Every string in the log is valid Unicode, written as UTF-8 (the writer's escaping
    fallback for surrogates was not needed). Chat Completions and Responses arguments are a
    JSON text inside a string: their ``\\ud83d`` is six valid characters there, decoded and
    repaired only when the adapter reads the arguments."""
    for line in text.splitlines():
        assert lone_surrogate(json.loads(line)) is None, line[:300]
    assert FFFD in text


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("wire", list(WIRES))
async def test_a_half_emoji_is_repaired_in_text_and_arguments(
    tmp_path: Path, fake_provider: Any, wire: str, stream: bool
) -> None:
    key = canary()
    fake = fake_provider(
        [{"text": f"half {HALF} here", "cells": [f"print('{HALF}')"]}, {"text": "ok"}],
        expect_key=key,
    )
    h = Harness(tmp_path, tier_for(wire, fake), key)
    first = await h.call([Message(role="user", parts=(Text(text="go"),))], stream=stream)
    assert first.reply.text == f"half {FFFD} here"
    [call] = first.reply.tool_calls
    assert call.args == {"code": f"print('{FFFD}')"}
    if stream:
        assert "".join(h.deltas) == f"half {FFFD} here"
    result = ToolResult(call_id=call.id, content=(Text(text="done"),))
    history = [
        Message(role="user", parts=(Text(text="go"),)),
        first.reply.as_message(),
        Message(role="user", parts=(result,)),
    ]
    second = await h.call(history, stream=stream)
    assert second.reply.text == "ok"
    sent = fake.requests[-1].json
    assert lone_surrogate(sent) is None
    assert FFFD in json.dumps(sent, ensure_ascii=False)
    log_strings_valid(await h.close())


def _anthropic_sse(pieces: list[str]) -> str:
    def event(kind: str, data: dict[str, Any]) -> str:
        return f"event: {kind}\ndata: {json.dumps(data)}\n\n"

    message = {
        "id": "msg_split",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 5, "output_tokens": 1},
    }
    out = event("message_start", {"type": "message_start", "message": message})
    block = {"type": "text", "text": ""}
    out += event(
        "content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}
    )
    for piece in pieces:
        delta = {"type": "text_delta", "text": piece}
        out += event(
            "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
        )
    out += event("content_block_stop", {"type": "content_block_stop", "index": 0})
    end = {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn"},
        "usage": {"output_tokens": 3},
    }
    out += event("message_delta", end)
    return out + event("message_stop", {"type": "message_stop"})


async def test_an_emoji_split_over_two_deltas_is_joined(tmp_path: Path, fake_provider: Any) -> None:
    # json.dumps writes each half as its escape, as a provider cutting a delta mid-emoji does
    raw = _anthropic_sse(["smile ", "\ud83d", "\ude00 and half ", HALF])
    fake = fake_provider([{"raw_stream": raw}])
    key = canary()
    fake_tier = tier_for("anthropic", fake)
    h = Harness(tmp_path, fake_tier, key)
    first = await h.call([Message(role="user", parts=(Text(text="go"),))], stream=True)
    assert first.reply.text == f"smile \U0001f600 and half {FFFD}"
    assert "".join(h.deltas) == first.reply.text
    assert not any(has_lone_surrogate(d) for d in h.deltas)
    log_strings_valid(await h.close())


async def test_a_raw_body_with_a_lone_surrogate_is_repaired(
    tmp_path: Path, fake_provider: Any
) -> None:
    arguments = json.dumps({"code": f"x = '{HALF}'"})  # the escape inside the JSON string
    body = {
        "id": "chatcmpl-raw",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4.1",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": f"a{HALF}",
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "run_cell", "arguments": arguments},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }
    fake = fake_provider([{"raw_body": json.dumps(body)}])
    key = canary()
    h = Harness(tmp_path, tier_for("openai-chat", fake), key)
    result = await h.call([Message(role="user", parts=(Text(text="go"),))], stream=False)
    assert result.reply.text == f"a{FFFD}"
    assert result.reply.tool_calls[0].args == {"code": f"x = '{FFFD}'"}
    log_strings_valid(await h.close())


def test_a_raw_step_answers_only_its_own_kind_of_request(fake_provider: Any) -> None:
    import httpx

    fake = fake_provider([{"raw_body": "{}"}])
    reply = httpx.post(
        fake.base_url + "/v1/messages",
        json={"model": "m", "max_tokens": 5, "messages": [], "stream": True},
    )
    assert reply.status_code == 400
    assert "a streaming request needs 'raw_stream'" in reply.text
