"""SSE parsing and stream assembly on recorded stream text (no network)."""

# ruff: noqa: E501  (recorded wire lines are kept whole, as the providers send them)

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import pytest

from jupyter_agent.exceptions import ProviderProtocolError
from jupyter_agent.llm.sse import SSEEvent, SSEParser
from jupyter_agent.llm.streams import StreamErrorEvent, make_assembler


def parse_sse(lines: Iterable[str]) -> Iterator[SSEEvent]:
    """Whole lines into events, through the parser the transport feeds line by line."""
    parser = SSEParser()
    for line in lines:
        event = parser.feed(line)
        if event is not None:
            yield event
    last = parser.flush()
    if last is not None:
        yield last


def assemble(wire: str, text: str) -> tuple[dict[str, Any], list[str], bool]:
    assembler = make_assembler(wire)
    deltas: list[str] = []
    for event in parse_sse(text.splitlines()):
        if event.data == "[DONE]":
            assembler.mark_done()
            continue
        deltas += assembler.feed(event.event, json.loads(event.data))
    return assembler.result(), deltas, assembler.done


def test_sse_fields_comments_and_multiline_data():
    text = (
        ": keep-alive comment\n"
        "event: one\n"
        "id: 7\n"
        "data: first line\n"
        "data:second line\n"
        "retry: 100\n"
        "\n"
        "\n"
        "data: [DONE]\r\n"
        "\r\n"
        "event: tail\n"
        "data: unterminated"
    )
    events = list(parse_sse(text.splitlines()))
    assert events == [
        SSEEvent(event="one", data="first line\nsecond line", id="7"),
        SSEEvent(event=None, data="[DONE]", id="7"),  # the last event id persists (SSE spec)
        SSEEvent(event="tail", data="unterminated", id="7"),
    ]


def test_sse_parser_is_incremental():
    parser = SSEParser()
    assert parser.feed("event: ping") is None
    assert parser.feed('data: {"type": "ping"}') is None
    assert parser.feed("") == SSEEvent(event="ping", data='{"type": "ping"}')
    assert parser.feed("event: lonely") is None
    assert parser.feed("") is None  # an event with no data is dropped
    assert parser.flush() is None


ANTHROPIC = """\
event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":3,"cache_read_input_tokens":10,"output_tokens":1}}}

event: ping
data: {"type": "ping"}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me "}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"think."}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Checking "}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"now."}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: content_block_start
data: {"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_01","name":"run_cell","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\\"code\\": \\"print"}}

event: content_block_delta
data: {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"(1)\\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":3}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}

event: message_stop
data: {"type":"message_stop"}
"""


def test_anthropic_stream_assembles_the_message():
    body, deltas, done = assemble("anthropic", ANTHROPIC)
    assert done
    assert deltas == ["Checking ", "now."]
    assert body == {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [
            {"type": "thinking", "thinking": "Let me think.", "signature": "EqQBCgIYAhIM1gbcDa"},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
            {"type": "text", "text": "Checking now."},
            {
                "type": "tool_use",
                "id": "toolu_01",
                "name": "run_cell",
                "input": {"code": "print(1)"},
            },
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 25,
            "cache_creation_input_tokens": 3,
            "cache_read_input_tokens": 10,
            "output_tokens": 89,
        },
    }


def test_anthropic_truncated_stream_is_not_done():
    cut = ANTHROPIC.split("event: message_delta")[0]
    _, _, done = assemble("anthropic", cut)
    assert not done


def test_anthropic_error_event_raises_with_its_type():
    text = ANTHROPIC.split("event: content_block_start")[0] + (
        "event: error\n"
        'data: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n'
    )
    with pytest.raises(StreamErrorEvent) as caught:
        assemble("anthropic", text)
    assert caught.value.error_type == "overloaded_error"
    assert isinstance(caught.value, ProviderProtocolError)


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
    data = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-x",
        "system_fingerprint": "fp_1",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        "usage": None,
    }
    data.update(extra)
    return f"data: {json.dumps(data)}\n\n"


CHAT = (
    _chunk({"role": "assistant", "content": "", "refusal": None})
    + _chunk({"reasoning_content": "Hmm, "})
    + _chunk({"reasoning_content": "ok."})
    + _chunk({"content": "Running "})
    + _chunk({"content": "it."})
    + _chunk(
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "run_cell", "arguments": ""},
                }
            ]
        }
    )
    + _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"code": '}}]})
    + _chunk(
        {
            "tool_calls": [
                {
                    "index": 1,
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                }
            ]
        }
    )
    + _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"1+1"}'}}]})
    + _chunk({}, "tool_calls")
    + _chunk(
        {}, choices=[], usage={"prompt_tokens": 9, "completion_tokens": 12, "total_tokens": 21}
    )
    + "data: [DONE]\n\n"
)


def test_chat_stream_assembles_the_completion():
    body, deltas, done = assemble("openai-chat", CHAT)
    assert done
    assert deltas == ["Running ", "it."]
    assert body == {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "gpt-x",
        "system_fingerprint": "fp_1",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "Running it.",
                    "refusal": None,
                    "reasoning_content": "Hmm, ok.",
                    "tool_calls": [
                        {
                            "id": "call_a",
                            "type": "function",
                            "function": {"name": "run_cell", "arguments": '{"code": "1+1"}'},
                        },
                        {
                            "id": "call_b",
                            "type": "function",
                            "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                        },
                    ],
                },
                "logprobs": None,
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 12, "total_tokens": 21},
    }


def test_chat_error_chunk_raises():
    text = CHAT.split("data: ")[1]
    error = {"error": {"message": "boom", "type": "server_error", "code": None}}
    with pytest.raises(StreamErrorEvent) as caught:
        assemble("openai-chat", "data: " + text + f"data: {json.dumps(error)}\n\n")
    assert caught.value.error_type == "server_error"


def _event(kind: str, **fields: Any) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **fields})}\n\n"


FINAL = {
    "id": "resp_1",
    "object": "response",
    "status": "incomplete",
    "incomplete_details": {"reason": "max_output_tokens"},
    "output": [
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "incomplete",
            "content": [{"type": "output_text", "text": "Partial answ", "annotations": []}],
        }
    ],
    "usage": {"input_tokens": 5, "output_tokens": 16, "total_tokens": 21},
}
RESPONSES = (
    _event(
        "response.created", sequence_number=0, response=dict(FINAL, output=[], status="in_progress")
    )
    + _event("response.output_item.added", sequence_number=1, output_index=0, item={"id": "msg_1"})
    + _event("response.output_text.delta", sequence_number=2, item_id="msg_1", delta="Partial ")
    + _event("response.output_text.delta", sequence_number=3, item_id="msg_1", delta="answ")
    + _event(
        "response.output_item.done", sequence_number=4, output_index=0, item=FINAL["output"][0]
    )
    + _event("response.incomplete", sequence_number=5, response=FINAL)
)


def test_responses_stream_gives_the_final_response():
    body, deltas, done = assemble("openai-responses", RESPONSES)
    assert done
    assert deltas == ["Partial ", "answ"]
    assert body == FINAL


def test_responses_final_response_without_output_is_filled_from_items():
    text = RESPONSES.replace(
        _event("response.incomplete", sequence_number=5, response=FINAL),
        _event("response.completed", sequence_number=5, response=dict(FINAL, output=[])),
    )
    body, _, _ = assemble("openai-responses", text)
    assert body["output"] == FINAL["output"]


def test_responses_without_a_final_event_has_no_result():
    text = RESPONSES.split("event: response.incomplete")[0]
    with pytest.raises(ProviderProtocolError):
        assemble("openai-responses", text)


@pytest.mark.parametrize(
    ("event", "expected"),
    [
        (
            _event("error", code="rate_limit_exceeded", message="slow down", param=None),
            "rate_limit_exceeded",
        ),
        (
            _event(
                "response.failed",
                response={"status": "failed", "error": {"code": "server_error", "message": "x"}},
            ),
            "server_error",
        ),
    ],
)
def test_responses_error_events_raise(event, expected):
    with pytest.raises(StreamErrorEvent) as caught:
        assemble("openai-responses", RESPONSES.split("event: response.output_text")[0] + event)
    assert caught.value.error_type == expected


def test_unknown_wire_is_refused():
    with pytest.raises(ValueError, match="unknown wire"):
        make_assembler("smoke-signals")
