"""The transport against the scripted fake provider over real loopback HTTP."""

from __future__ import annotations

import asyncio
import email.utils
import logging
import socket
import time
import uuid
from typing import Any

import pytest

from jupyter_agent.exceptions import (
    CredentialError,
    ProviderError,
    ProviderProtocolError,
    ProviderStatusError,
    ProviderTimeout,
    RetryAfterTooLong,
)
from jupyter_agent.llm.spec import RequestSpec
from jupyter_agent.llm.transport import RetryInfo, Transport, resolve_credential

PATHS = {
    "anthropic": "/v1/messages",
    "openai-chat": "/v1/chat/completions",
    "openai-responses": "/v1/responses",
}
KEY_HEADER = {
    "anthropic": ("x-api-key", ""),
    "openai-chat": ("authorization", "Bearer "),
    "openai-responses": ("authorization", "Bearer "),
}


def body_for(wire: str, text: str = "hello", *, stream: bool = False) -> dict[str, Any]:
    if wire == "openai-responses":
        body: dict[str, Any] = {"model": "m", "input": [{"role": "user", "content": text}]}
        body["include"] = ["reasoning.encrypted_content"]
    else:
        body = {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": text}]}
    if stream:
        body["stream"] = True
        if wire == "openai-chat":
            body["stream_options"] = {"include_usage": True}
    return body


def make_spec(
    fake: Any,
    wire: str = "anthropic",
    *,
    stream: bool = False,
    ref: str | None = None,
    deadline_s: float = 30.0,
) -> RequestSpec:
    header, prefix = KEY_HEADER[wire]
    return RequestSpec(
        url=fake.base_url + PATHS[wire],
        json=body_for(wire, stream=stream),
        wire=wire,  # type: ignore[arg-type]
        headers={"anthropic-version": "2023-06-01"} if wire == "anthropic" else {},
        credential_ref=ref,
        credential_header=header,
        credential_prefix=prefix,
        stream=stream,
        deadline_s=deadline_s,
    )


@pytest.fixture
async def transport():
    t = Transport(backoff_base_s=0.01, backoff_max_s=0.05)
    yield t
    await t.aclose()


def statuses(attempts: Any) -> list[Any]:
    return [a["status"] for a in attempts]


async def test_429_with_retry_after_is_retried(fake_provider, transport):
    fake = fake_provider([{"error": {"status": 429, "retry_after": 1}}, {"text": "ok"}])
    retries: list[RetryInfo] = []
    started = time.monotonic()
    reply = await transport.post(make_spec(fake), on_retry=retries.append)
    assert time.monotonic() - started >= 0.9
    assert reply.status == 200
    assert reply.json["content"] == [{"type": "text", "text": "ok"}]
    assert statuses(reply.attempts) == [429, 200]
    assert reply.attempts[0]["wait_s"] == 1.0
    assert retries == [RetryInfo(attempt=1, status=429, error="HTTP 429", wait_s=1.0)]


async def test_retry_after_ms_and_http_date_are_honoured(fake_provider, transport):
    soon = email.utils.formatdate(time.time() + 1, usegmt=True)
    fake = fake_provider(
        [
            {"error": {"status": 529, "retry_after_ms": 200}},
            {"error": {"status": 503, "retry_after": soon}},
            {"text": "ok"},
        ]
    )
    reply = await transport.post(make_spec(fake))
    assert statuses(reply.attempts) == [529, 503, 200]
    assert reply.attempts[0]["wait_s"] == 0.2
    assert 0.0 <= reply.attempts[1]["wait_s"] <= 1.0


async def test_retry_after_over_the_cap_fails_fast(fake_provider, transport):
    fake = fake_provider([{"error": {"status": 429, "retry_after": 300}}, {"text": "never"}])
    started = time.monotonic()
    with pytest.raises(RetryAfterTooLong) as caught:
        await transport.post(make_spec(fake))
    assert time.monotonic() - started < 10
    assert caught.value.status == 429
    assert len(caught.value.attempts) == 1
    assert fake.remaining == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
async def test_terminal_statuses_are_not_retried(fake_provider, transport, status):
    fake = fake_provider([{"error": {"status": status}}, {"text": "never"}])
    with pytest.raises(ProviderStatusError) as caught:
        await transport.post(make_spec(fake))
    assert caught.value.status == status
    assert statuses(caught.value.attempts) == [status]
    assert len(fake.requests) == 1


@pytest.mark.parametrize("status", [408, 409, 500, 529])
async def test_retryable_statuses_are_retried_then_succeed(fake_provider, transport, status):
    fake = fake_provider([{"error": {"status": status}}] * 2 + [{"text": "ok"}])
    retries: list[RetryInfo] = []
    reply = await transport.post(make_spec(fake), on_retry=retries.append)
    assert statuses(reply.attempts) == [status, status, 200]
    assert [r.attempt for r in retries] == [1, 2]
    assert reply.json["content"][0]["text"] == "ok"


async def test_retries_run_out(fake_provider):
    fake = fake_provider([{"error": {"status": 500}}] * 3 + [{"text": "never"}])
    transport = Transport(max_attempts=3, backoff_base_s=0.01)
    try:
        with pytest.raises(ProviderStatusError) as caught:
            await transport.post(make_spec(fake))
    finally:
        await transport.aclose()
    assert statuses(caught.value.attempts) == [500, 500, 500]
    assert caught.value.body["error"]["type"] == "api_error"
    assert fake.remaining == 1


async def test_connection_refused_is_retried_then_fails(transport):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    spec = RequestSpec(url=f"http://127.0.0.1:{port}/v1/messages", json={}, wire="anthropic")
    with pytest.raises(ProviderError) as caught:
        await transport.post(spec)
    assert len(caught.value.attempts) == transport.max_attempts
    assert all(a["status"] is None and "Connect" in a["error"] for a in caught.value.attempts)


async def test_deadline_is_honoured(fake_provider, transport):
    fake = fake_provider([{"timeout": True}])
    started = time.monotonic()
    with pytest.raises(ProviderTimeout) as caught:
        await transport.post(make_spec(fake, deadline_s=1.0))
    assert 0.9 <= time.monotonic() - started < 10
    assert caught.value.attempts[-1]["error"] == "deadline"


async def test_deadline_covers_backoff_sleeps(fake_provider, transport):
    fake = fake_provider([{"error": {"status": 429, "retry_after": 30}}, {"text": "late"}])
    started = time.monotonic()
    with pytest.raises(ProviderTimeout):
        await transport.post(make_spec(fake, deadline_s=1.0))
    assert time.monotonic() - started < 10


async def test_cancel_stops_a_call_in_flight(fake_provider, transport):
    fake = fake_provider([{"delay_s": 30, "text": "too late"}])
    task = asyncio.create_task(transport.post(make_spec(fake)))
    for _ in range(200):
        if fake.requests:
            break
        await asyncio.sleep(0.01)
    assert fake.requests, "the request never reached the fake"
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 5


def _normalized(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: "<id>" if k in ("id", "call_id", "created", "created_at") else _normalized(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_normalized(v) for v in value]
    return value


@pytest.mark.parametrize("wire", sorted(PATHS))
@pytest.mark.parametrize(
    "step",
    [
        {"thinking": "Think first.", "text": "Let me look.", "cells": ["import os\nprint(1)"]},
        {"text": "Done: 42.", "usage": {"in": 100, "out": 20, "cache_read": 50, "reasoning": 5}},
        {"bash": ["ls -la"], "stop": "length"},
    ],
)
async def test_streaming_assembles_the_non_streamed_reply(fake_provider, transport, wire, step):
    fake = fake_provider([step, step])
    plain = await transport.post(make_spec(fake, wire))
    deltas: list[str] = []
    streamed = await transport.post(make_spec(fake, wire, stream=True), on_delta=deltas.append)
    assert fake.requests[1].json["stream"] is True
    assert _normalized(streamed.json) == _normalized(plain.json)
    assert "".join(deltas) == step.get("text", "")
    assert len(deltas) == (len(step["text"].split()) if "text" in step else 0)


@pytest.mark.parametrize("wire", sorted(PATHS))
async def test_error_event_after_deltas_is_an_error(fake_provider, transport, wire):
    fake = fake_provider([{"text": "one two three four", "stream_error_after": 2}, {"text": "x"}])
    deltas: list[str] = []
    with pytest.raises(ProviderProtocolError) as caught:
        await transport.post(make_spec(fake, wire, stream=True), on_delta=deltas.append)
    assert deltas == ["one ", "two "]
    assert len(caught.value.attempts) == 1
    assert fake.remaining == 1


@pytest.mark.parametrize("wire", sorted(PATHS))
async def test_overloaded_error_event_before_deltas_is_retried(fake_provider, transport, wire):
    fake = fake_provider([{"text": "hi there", "stream_error_after": 0}, {"text": "hi there"}])
    deltas: list[str] = []
    reply = await transport.post(make_spec(fake, wire, stream=True), on_delta=deltas.append)
    assert deltas == ["hi ", "there"]
    assert len(reply.attempts) == 2
    assert reply.attempts[0]["error"] == "stream error: overloaded_error"


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("wire", sorted(PATHS))
async def test_malformed_body_is_a_protocol_error(fake_provider, transport, wire, stream):
    fake = fake_provider([{"malformed": True}, {"text": "never"}])
    with pytest.raises(ProviderProtocolError):
        await transport.post(make_spec(fake, wire, stream=stream))
    assert fake.remaining == 1


async def test_missing_credential_makes_no_call(fake_provider, transport, monkeypatch):
    monkeypatch.delenv("JA_TEST_MISSING_KEY", raising=False)
    fake = fake_provider([{"text": "never"}])
    with pytest.raises(CredentialError) as caught:
        await transport.post(make_spec(fake, ref="env:JA_TEST_MISSING_KEY"))
    assert "env:JA_TEST_MISSING_KEY" in str(caught.value)
    assert fake.requests == []


def test_resolve_credential_rejects_unknown_schemes():
    assert resolve_credential(None, {}) is None
    assert resolve_credential("env:A", {"A": "v"}) == "v"
    with pytest.raises(CredentialError):
        resolve_credential("file:/x", {})
    with pytest.raises(CredentialError):
        resolve_credential("env:A", {"A": ""})


@pytest.mark.parametrize("wire", sorted(PATHS))
async def test_key_reaches_the_provider_and_nothing_else(fake_provider, monkeypatch, caplog, wire):
    canary = f"sk-ant-canary-{uuid.uuid4()}"
    monkeypatch.setenv("JA_TEST_CANARY_KEY", canary)
    caplog.set_level(logging.DEBUG)
    for name in ("httpx", "httpcore", "jupyter_agent"):
        caplog.set_level(logging.DEBUG, logger=name)
    ref = "env:JA_TEST_CANARY_KEY"
    transport = Transport(max_attempts=2, backoff_base_s=0.01)
    seen: list[str] = []
    try:
        good = fake_provider([{"text": "ok"}], expect_key=canary)
        reply = await transport.post(make_spec(good, wire, ref=ref))
        header, prefix = KEY_HEADER[wire]
        assert good.requests[0].headers[header] == prefix + canary
        seen += [repr(reply), str(reply.to_json())]

        wrong = fake_provider([{"text": "never"}], expect_key=f"other-{uuid.uuid4()}")
        with pytest.raises(ProviderStatusError) as unauthorized:
            await transport.post(make_spec(wrong, wire, ref=ref))
        assert unauthorized.value.status == 401
        assert len(unauthorized.value.attempts) == 1

        echo = {"status": 500, "message": f"server saw key {canary}"}
        failing = fake_provider([{"error": echo}] * 2)
        with pytest.raises(ProviderStatusError) as exhausted:
            await transport.post(make_spec(failing, wire, ref=ref, stream=True))
        assert "[REDACTED]" in str(exhausted.value.body)
        for error in (unauthorized.value, exhausted.value):
            seen += [str(error), repr(error), str(error.to_json()), str(error.args)]
    finally:
        await transport.aclose()
    seen += [r.getMessage() + repr(r.args) for r in caplog.records]
    assert caplog.records, "expected some log records (httpx logs each request)"
    for text in seen:
        assert canary not in text


async def test_loopback_ignores_proxy_environment(fake_provider, transport, monkeypatch):
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    fake = fake_provider([{"text": "direct"}])
    reply = await transport.post(make_spec(fake))
    assert reply.json["content"][0]["text"] == "direct"


def test_one_transport_serves_several_event_loops(fake_provider):
    fake = fake_provider([{"text": "a"}, {"text": "b"}])
    transport = Transport()

    async def call() -> str:
        try:
            reply = await transport.post(make_spec(fake))
            return str(reply.json["content"][0]["text"])
        finally:
            await transport.aclose()

    assert asyncio.run(call()) == "a"
    assert asyncio.run(call()) == "b"


def test_a_key_with_a_trailing_newline_is_stripped_and_one_with_control_chars_refused():
    secret = "sk-ant-canary-" + uuid.uuid4().hex
    assert resolve_credential("env:K", {"K": secret + "\n"}) == secret
    with pytest.raises(CredentialError) as info:
        resolve_credential("env:K", {"K": secret[:10] + "\r\n" + secret[10:]})
    assert "env:K" in str(info.value)
    assert secret[10:] not in str(info.value)
    assert secret[10:] not in repr(info.value)
