from __future__ import annotations

import json

import pytest

from jupyter_agent.messages import (
    File,
    LLMReply,
    Message,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    Usage,
    from_json,
    message_from_json,
    reply_from_json,
    to_json,
    usage_from_json,
)

ANTHROPIC_THINKING = {
    "type": "thinking",
    "thinking": "Let me think about é and \u2028 carefully.",
    "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds+//==\u0000",
}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw"}
RESPONSES_REASONING = {
    "type": "reasoning",
    "id": "rs_6820f383d7c08191846711c5df8233bc",
    "summary": [],
    "encrypted_content": "gAAAAABoIPOE" + "x" * 300 + "==",
}


def _sample_message() -> Message:
    return Message(
        role="assistant",
        parts=(
            Thinking(text="hmm", provider_state=ANTHROPIC_THINKING),
            Thinking(provider_state=REDACTED),
            Thinking(provider_state=RESPONSES_REASONING),
            Text(text="Let me run this."),
            ToolCall(id="toolu_01", name="run_cell", args={"code": "print(1)\n", "n": [1, 2.5]}),
        ),
    )


def test_message_round_trip_exact() -> None:
    msg = _sample_message()
    encoded = json.dumps(to_json(msg), ensure_ascii=False)
    decoded = message_from_json(json.loads(encoded))
    assert decoded == msg
    # provider_state comes back byte-exact: same keys, order and strings
    for before, after in zip(msg.parts[:3], decoded.parts[:3], strict=True):
        assert isinstance(before, Thinking)
        assert isinstance(after, Thinking)
        assert json.dumps(after.provider_state) == json.dumps(before.provider_state)
        assert list(after.provider_state) == list(before.provider_state)


def test_tool_result_with_file_round_trip() -> None:
    png = bytes(range(256)) * 3
    msg = Message(
        role="user",
        parts=(
            ToolResult(
                call_id="toolu_01",
                content=(Text(text="Output\n[1] 1"), File(media_type="image/png", data=png)),
                is_error=True,
            ),
            File(media_type="application/pdf", data=b"%PDF-1.4", name="a.pdf"),
        ),
    )
    assert from_json(json.loads(json.dumps(to_json(msg)))) == msg


def test_reply_round_trip_and_usage_keys() -> None:
    reply = LLMReply(
        parts=_sample_message().parts,
        stop="tool",
        usage=Usage(
            input_tokens=10,
            output_tokens=20,
            cache_read_tokens=3,
            cache_write_tokens=4,
            reasoning_tokens=5,
        ),
        stop_detail="tool_use",
        model="claude-x",
    )
    data = to_json(reply)
    assert data["usage"] == {"in": 10, "out": 20, "cacheRead": 3, "cacheWrite": 4, "reasoning": 5}
    assert reply_from_json(json.loads(json.dumps(data))) == reply
    assert reply.as_message().role == "assistant"
    assert reply.tool_calls[0].name == "run_cell"


def test_usage_adds() -> None:
    a = Usage(input_tokens=1, output_tokens=2, cache_read_tokens=3)
    b = usage_from_json({"in": 10, "reasoning": 7})
    assert a + b == Usage(input_tokens=11, output_tokens=2, cache_read_tokens=3, reasoning_tokens=7)


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "nope"},
        {"role": "system", "parts": []},
        {"parts": [], "stop": "maybe"},
        {
            "type": "tool_result",
            "call_id": "x",
            "is_error": False,
            "content": [{"type": "tool_call", "id": "a", "name": "b", "args": {}}],
        },
        {"type": "file", "media_type": "image/png", "data": "not base64!"},
    ],
)
def test_bad_json_is_rejected(bad: dict[str, object]) -> None:
    with pytest.raises((ValueError, KeyError)):
        from_json(bad)
