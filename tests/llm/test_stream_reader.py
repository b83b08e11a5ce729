"""The stream reader on real streams: every chunking gives one result, in linear time.

The recorded streams are what the fake provider sends for one reply (text, thinking where
the wire has it, a tool call), read raw off loopback; the reader is fed them whole, byte
by byte, split at every byte boundary, and with CRLF / CR line ends.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from jupyter_agent.exceptions import ProviderProtocolError
from jupyter_agent.llm.sse import SSEParser, StreamReader

STEP = {
    "text": "Héllo wörld, 😀 an emoji and plain words to stream",
    "thinking": "think about it",
    "cells": ["print('x')"],
}
WIRES = {
    "anthropic": ("/v1/messages", {"model": "m", "max_tokens": 50}),
    "openai-chat": ("/v1/chat/completions", {"model": "m"}),
    "openai-responses": ("/v1/responses", {"model": "m", "input": "hi"}),
}


def record(base_url: str, wire: str) -> bytes:
    path, body = WIRES[wire]
    request = {**body, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    if wire == "openai-responses":
        request.pop("messages")
    with (
        httpx.Client(trust_env=False) as client,
        client.stream("POST", base_url + path, json=request) as reply,
    ):
        assert reply.status_code == 200
        return b"".join(reply.iter_raw())


def read(wire: str, chunks: list[bytes]) -> tuple[dict[str, Any], list[str]]:
    deltas: list[str] = []
    reader = StreamReader(wire, on_delta=deltas.append)
    for chunk in chunks:
        reader.feed(chunk)
    return reader.close(), deltas


@pytest.fixture(scope="module")
def streams() -> dict[str, bytes]:
    from jupyter_agent.llm.fake.server import FakeProvider

    with FakeProvider({"steps": [STEP], "repeat": True}) as fake:
        return {wire: record(fake.base_url, wire) for wire in WIRES}


@pytest.mark.parametrize("wire", sorted(WIRES))
def test_every_chunking_gives_the_unsplit_result(streams: dict[str, bytes], wire: str) -> None:
    raw = streams[wire]
    whole, deltas = read(wire, [raw])
    assert "".join(deltas) == STEP["text"]  # the reply as the person saw it
    assert read(wire, [raw[i : i + 1] for i in range(len(raw))]) == (whole, deltas)
    for cut in range(1, len(raw)):
        assert read(wire, [raw[:cut], raw[cut:]]) == (whole, deltas), cut
    for ending in (b"\r\n", b"\r"):
        other = raw.replace(b"\n", ending)
        assert read(wire, [other]) == (whole, deltas), ending
        for cut in range(1, len(other), 7):
            assert read(wire, [other[:cut], other[cut:]]) == (whole, deltas), (ending, cut)


@pytest.mark.parametrize("wire", sorted(WIRES))
def test_a_stream_cut_short_is_an_error_at_every_cut(streams: dict[str, bytes], wire: str) -> None:
    raw = streams[wire]
    end = raw.rindex(b"data:")  # the last event (the terminal one, or [DONE])
    for cut in range(0, end, max(1, end // 50)):
        reader = StreamReader(wire)
        reader.feed(raw[:cut])
        with pytest.raises(ProviderProtocolError):
            reader.close()


def frames(wire: str, pieces: list[str]) -> bytes:
    """A stream of ``wire`` carrying ``pieces`` as its text deltas."""

    def sse(data: Any, event: str | None = None) -> str:
        head = f"event: {event}\n" if event else ""
        return f"{head}data: {json.dumps(data)}\n\n"

    out: list[str] = []
    if wire == "anthropic":
        message = {"id": "m", "type": "message", "role": "assistant", "content": []}
        out.append(sse({"type": "message_start", "message": message}, "message_start"))
        block = {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}
        out.append(sse(block, "content_block_start"))
        for piece in pieces:
            delta = {"type": "text_delta", "text": piece}
            out.append(sse({"type": "content_block_delta", "index": 0, "delta": delta}))
        out.append(sse({"type": "content_block_stop", "index": 0}))
        out.append(sse({"type": "message_stop"}))
    elif wire == "openai-chat":
        for piece in pieces:
            out.append(sse({"id": "c", "choices": [{"index": 0, "delta": {"content": piece}}]}))
        out.append(
            sse({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        )
        out.append("data: [DONE]\n\n")
    else:
        for piece in pieces:
            out.append(sse({"type": "response.output_text.delta", "delta": piece}))
        response = {"id": "r", "output": [{"type": "message", "content": []}]}
        out.append(sse({"type": "response.completed", "response": response}))
    return "".join(out).encode()


@pytest.mark.parametrize("wire", sorted(WIRES))
def test_ten_thousand_deltas_are_read_in_linear_time(wire: str) -> None:
    # 10,000 deltas of 200 characters: a reply of 2 MB. Re-copying the text at each delta
    # (quadratic) moves 10 GB and took 0.8 s (chat) to 3.9 s (Anthropic); a linear reader
    # takes about 0.05 s: the bound leaves it ten times that.
    pieces = [f"{i:05d}" + "x" * 195 for i in range(10_000)]
    raw = frames(wire, pieces)
    started = time.perf_counter()
    body, deltas = read(wire, [raw[i : i + 1024] for i in range(0, len(raw), 1024)])
    elapsed = time.perf_counter() - started
    assert deltas == pieces
    text = {
        "anthropic": lambda: body["content"][0]["text"],
        "openai-chat": lambda: body["choices"][0]["message"]["content"],
        "openai-responses": lambda: "".join(deltas),
    }[wire]()
    assert text == "".join(pieces)
    assert elapsed < 0.5, f"{elapsed:.2f} s for 10,000 deltas"


def test_one_long_line_in_small_chunks_is_read_in_linear_time() -> None:
    # A 4 MB data line in 100-byte chunks: joining the unfinished line to each chunk
    # (quadratic) moves 80 GB; keeping its pieces until its end is linear.
    line = b"data: " + b"y" * 4_000_000 + b"\n\n"
    parser = SSEParser()
    started = time.perf_counter()
    events = []
    for i in range(0, len(line), 100):
        events += parser.feed_bytes(line[i : i + 100])
    elapsed = time.perf_counter() - started
    assert [len(e.data) for e in events] == [4_000_000]
    assert elapsed < 1.0, f"{elapsed:.2f} s for a 4 MB line"


def test_invalid_utf8_is_replaced_wherever_the_chunks_split() -> None:
    raw = 'data: {"a": "é😀"}\n\n'.encode()
    raw = raw[:14] + b"\xff" + raw[14:]  # a stray byte before the emoji
    expected = raw.decode("utf-8", "replace")[6:-2]
    for cut in range(len(raw)):
        parser = SSEParser()
        events = parser.feed_bytes(raw[:cut]) + parser.feed_bytes(raw[cut:]) + parser.close()
        assert [e.data for e in events] == [expected], cut


def test_event_data_is_decoded_as_json_loads_decodes_it() -> None:
    def read_one(data: str) -> list[str]:
        deltas: list[str] = []
        reader = StreamReader("openai-responses", on_delta=deltas.append)
        reader.feed(f"data:{data}\n\n".encode())
        return deltas

    event = '{"type": "response.output_text.delta", "delta": "x\\ud83d\\ude00"}'
    for data in (event, "  " + event, event + "  ", " \t" + event + "\t"):
        assert read_one(data) == ["x😀"], data
    for bad in ("\ufeff" + event, event + " x", event[:-1], '"a string"', "[1]", "{"):
        with pytest.raises(ProviderProtocolError):
            read_one(bad)
