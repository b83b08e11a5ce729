"""The edges of the scrubber: model calls through the real transport and the fake provider
over loopback (refused when the request holds a known secret, answered scrubbed), and what
a person sends with a message."""

from __future__ import annotations

import base64
import json
import secrets
from typing import Any
from urllib.parse import quote

import pytest

from jupyter_agent.effects import Effect
from jupyter_agent.exceptions import ProviderStatusError, SecretInRequest
from jupyter_agent.llm.spec import RequestSpec
from jupyter_agent.llm.transport import Transport
from jupyter_agent.runtime.loop.model_calls import perform
from jupyter_agent.runtime.secret_guard import ScrubbingTransport, clean_file, clean_message
from jupyter_agent.runtime.secrets import Scrubber

NAME = "ANTHROPIC_API_KEY"


@pytest.fixture
def key() -> str:
    # "????" (bytes 0x3f) gives "/" in its base64 at every offset: base64url differs.
    return "sk-ant-test/????" + secrets.token_hex(12) + "+x"


def forms(key: str) -> dict[str, str]:
    raw = key.encode()
    return {
        "base64": base64.b64encode(raw).decode(),
        "base64 at offset 1": base64.b64encode(b"#" + raw).decode(),
        "base64url": base64.urlsafe_b64encode(b"##" + raw).decode().rstrip("="),
        "hex": raw.hex(),
        "HEX": raw.hex().upper(),
        "reversed": key[::-1],
        "url-encoded": quote(key, safe=""),
    }


def spec(base_url: str, text: str = "hi", *, stream: bool = False) -> RequestSpec:
    return RequestSpec(
        url=base_url + "/v1/messages",
        wire="anthropic",
        json={
            "model": "m",
            "max_tokens": 100,
            "messages": [{"role": "user", "content": text}],
            **({"stream": True} if stream else {}),
        },
        headers={"anthropic-version": "2023-06-01"},
        credential_ref=f"env:{NAME}",
        credential_header="x-api-key",
        credential_prefix="",
        stream=stream,
    )


def guarded(key: str) -> ScrubbingTransport:
    transport = Transport(env={NAME: key}, max_attempts=1)
    return ScrubbingTransport(transport, Scrubber({key: NAME}))


def assert_no_form(key: str, text: str) -> None:
    assert key not in text
    for form, value in forms(key).items():
        assert value[2:-3] not in text, form  # not even the stable middle of the form


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_a_reply_text_thinking_and_tool_call_come_back_scrubbed(
    fake_provider: Any, key: str, stream: bool
) -> None:
    every = " ".join(f"{k}: {v}" for k, v in forms(key).items())
    step = {
        "thinking": f"decoding it: {key} {every}",
        "text": f"the key is {key}; encoded: {every}",
        "cells": [f"k = {forms(key)['hex']!r}  # {forms(key)['base64']}"],
    }
    fake = fake_provider([step], expect_key=key)
    transport = guarded(key)
    deltas: list[str] = []
    data, error = await perform(
        Effect(name="http.post", data=spec(fake.base_url, stream=stream).to_intent()),
        config={},
        transport=transport,  # type: ignore[arg-type]
        on_delta=deltas.append,
    )
    await transport.aclose()
    assert error is None, error
    recorded = json.dumps(data)
    assert_no_form(key, recorded)
    blocks = {b["type"]: b for b in data["json"]["content"]}
    assert f"[redacted: {NAME}]" in blocks["text"]["text"]
    for label in ("base64", "base64url", "hex", "reversed", "url-encoded"):
        assert f"[redacted: {NAME} ({label})]" in blocks["text"]["text"], label
        assert f"[redacted: {NAME} ({label})]" in blocks["thinking"]["thinking"], label
    code = blocks["tool_use"]["input"]["code"]
    assert code.startswith(f"k = '[redacted: {NAME} (hex)]'")
    if stream:
        assert deltas, "the text was streamed"
        assert_no_form(key, "".join(deltas))
        assert "".join(deltas) == blocks["text"]["text"]  # held back, never lost
    assert fake.requests[0].headers["x-api-key"] == key  # the key still travels as a header


@pytest.mark.parametrize("form", sorted(forms("k" * 20)))
async def test_a_request_holding_a_secret_in_any_form_is_never_sent(
    fake_provider: Any, key: str, form: str
) -> None:
    fake = fake_provider([{"text": "never asked"}], expect_key=key)
    transport = guarded(key)
    data, error = await perform(
        Effect(
            name="http.post",
            data=spec(fake.base_url, f"please decode {forms(key)[form]}").to_intent(),
        ),
        config={},
        transport=transport,  # type: ignore[arg-type]
    )
    await transport.aclose()
    assert data is None
    assert error is not None
    assert error["type"] == "SecretInRequest"
    assert NAME in error["message"]
    assert_no_form(key, json.dumps(error))
    assert fake.requests == []  # nothing left the process


async def test_the_refusal_names_the_secret_and_its_form_never_the_value(
    fake_provider: Any, key: str
) -> None:
    fake = fake_provider([{"text": "never asked"}], expect_key=key)
    transport = guarded(key)
    with pytest.raises(SecretInRequest) as caught:
        await transport.post(spec(fake.base_url, f"{key} and {forms(key)['hex']}"))
    await transport.aclose()
    message = str(caught.value)
    assert f"{NAME}, {NAME} (hex)" in message
    assert key not in message
    assert forms(key)["hex"] not in message
    assert fake.requests == []


async def test_a_provider_error_echoing_an_encoded_key_is_scrubbed(
    fake_provider: Any, key: str
) -> None:
    echoed = f"bad key {forms(key)['base64']} / {forms(key)['reversed']}"
    fake = fake_provider([{"error": {"status": 400, "message": echoed}}], expect_key=key)
    transport = guarded(key)
    with pytest.raises(ProviderStatusError) as caught:
        await transport.post(spec(fake.base_url))
    await transport.aclose()
    err = caught.value
    assert_no_form(key, f"{err} {json.dumps(err.body)} {json.dumps(err.attempts)}")
    assert f"[redacted: {NAME} (base64)]" in json.dumps(err.body)


async def test_without_secrets_the_reply_is_the_transports_own(fake_provider: Any) -> None:
    fake = fake_provider([{"text": "plain"}])
    inner = Transport(env={}, max_attempts=1)
    transport = ScrubbingTransport(inner, Scrubber())
    request = spec(fake.base_url)
    request = RequestSpec(**{**request.__dict__, "credential_ref": None})
    reply = await transport.post(request)
    await transport.aclose()
    assert reply.json["content"][0]["text"] == "plain"
    assert transport.max_attempts == 1  # all else is the wrapped transport's


def test_a_message_its_view_and_its_attachments_are_cleaned(key: str) -> None:
    scrubber = Scrubber({key: NAME})
    dotenv = f"# settings\n{NAME}={key}\nOTHER={forms(key)['hex']}\n".encode()
    image = bytes(range(256)) * 4
    files = [
        {"name": ".env", "media_type": "text/plain", "data": base64.b64encode(dotenv).decode()},
        {"name": "x.png", "media_type": "image/png", "data": base64.b64encode(image).decode()},
    ]
    text, view, cleaned = clean_message(
        scrubber, f"my key: {forms(key)['base64']}", {"selection": key, "path": "a.py"}, files
    )
    assert text.startswith(f"my key: [redacted: {NAME} (base64)]")
    assert view == {"selection": f"[redacted: {NAME}]", "path": "a.py"}
    env_text = base64.b64decode(cleaned[0]["data"]).decode()
    assert env_text == (f"# settings\n{NAME}=[redacted: {NAME}]\nOTHER=[redacted: {NAME} (hex)]\n")
    assert cleaned[1] is files[1]  # a file without a secret is passed on as it came
    assert clean_file(Scrubber(), files[0]) is files[0]
