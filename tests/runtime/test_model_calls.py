"""The small performer: ``config.get`` and ``http.post`` logged through a real EffectLog,
against the fake provider over loopback with a canary key."""

from __future__ import annotations

import asyncio
import json
import secrets

import pytest

from jupyter_agent.effects import Effect
from jupyter_agent.exceptions import CredentialError, ProviderStatusError
from jupyter_agent.llm.chat import chat
from jupyter_agent.llm.spec import RequestSpec
from jupyter_agent.llm.transport import Transport
from jupyter_agent.messages import Message, Text
from jupyter_agent.runtime.loop.model_calls import perform
from jupyter_agent.trace.log import EffectLog, read_log
from tests.plugins.model_calls import run_gen

USER = [Message(role="user", parts=(Text(text="hello"),))]


@pytest.fixture
def key():
    return "sk-canary-" + secrets.token_hex(16)


@pytest.fixture
def log(tmp_path):
    log = EffectLog.create(tmp_path / "run.jsonl", {"run_id": "run_x", "chat_id": "chat_x"})
    yield log
    log.close()


async def test_perform_config_and_http(fake_provider, key):
    fake = fake_provider([{"text": "hi there"}], expect_key=key)
    transport = Transport(env={"K": key}, max_attempts=1)
    config = {"llm.tier.codegen": {"provider": "fake"}}
    value, error = await perform(
        Effect(name="config.get", data={"key": "llm.tier.codegen"}),
        config=config,
        transport=transport,
    )
    assert (value, error) == ({"provider": "fake"}, None)
    assert await perform(
        Effect(name="config.get", data={"key": "nope"}), config=config, transport=transport
    ) == (None, None)
    spec = RequestSpec(
        url=fake.base_url + "/v1/messages",
        wire="anthropic",
        json={"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "x"}]},
        headers={"anthropic-version": "2023-06-01"},
        credential_ref="env:K",
        credential_header="x-api-key",
        credential_prefix="",
    )
    data, error = await perform(
        Effect(name="http.post", data=spec.to_intent()), config=config, transport=transport
    )
    assert error is None
    assert data["status"] == 200
    assert data["json"]["content"][0]["text"] == "hi there"
    with pytest.raises(ValueError, match="cannot perform"):
        await perform(Effect(name="clock.now", data={}), config=config, transport=transport)
    await transport.aclose()


async def test_run_gen_logs_every_effect_without_the_key(fake_provider, key, log):
    fake = fake_provider([{"text": "hi there", "usage": {"in": 7, "out": 3}}], expect_key=key)
    config = {
        "llm.tier.codegen": {
            "provider": "fake",
            "model": "claude-haiku-4-5",
            "base_url": fake.base_url,
            "api_key_ref": "env:K",
        }
    }
    transport = Transport(env={"K": key}, max_attempts=1)
    result = await run_gen(
        chat(USER, system="s", tier="codegen", tools=()),
        log=log,
        config=config,
        transport=transport,
    )
    await transport.aclose()
    log.close()
    assert result.reply.text == "hi there"
    trace = read_log(log.path)
    text = log.path.read_text()
    assert key not in text
    lines = [json.loads(x) for x in text.splitlines()[1:]]
    assert [(x["seq"], x["phase"], x["name"]) for x in lines] == [
        (1, "intent", "config.get"),
        (1, "result", "config.get"),
        (2, "intent", "config.get"),
        (2, "result", "config.get"),
        (3, "intent", "http.post"),
        (3, "result", "http.post"),
    ]
    assert lines[5]["data"]["json"]["usage"]["input_tokens"] == 7
    assert trace is not None


async def test_run_gen_records_provider_errors(fake_provider, key, log):
    fake = fake_provider([{"error": {"status": 400, "message": "bad request"}}], expect_key=key)
    config = {
        "llm.tier.codegen": {
            "provider": "fake",
            "model": "claude-haiku-4-5",
            "base_url": fake.base_url,
            "api_key_ref": "env:K",
        }
    }
    transport = Transport(env={"K": key}, max_attempts=1)
    with pytest.raises(ProviderStatusError) as info:
        await run_gen(
            chat(USER, system="s", tier="codegen", tools=()),
            log=log,
            config=config,
            transport=transport,
        )
    assert info.value.status == 400
    # a missing credential fails before any HTTP call, naming the ref only
    with pytest.raises(CredentialError, match="env:MISSING"):
        await run_gen(
            chat(USER, system="s", tier="codegen", tools=()),
            log=log,
            config={
                **config,
                "llm.tier.codegen": {**config["llm.tier.codegen"], "api_key_ref": "env:MISSING"},
            },
            transport=transport,
        )
    await transport.aclose()
    log.close()
    text = log.path.read_text()
    assert key not in text
    errors = [json.loads(x).get("error") for x in text.splitlines()[1:]]
    kinds = [e["type"] for e in errors if e]
    assert kinds == ["ProviderStatusError", "CredentialError"]


async def test_run_gen_cancelled_mid_call(fake_provider, key, log):
    fake = fake_provider([{"text": "slow", "delay_s": 30}], expect_key=key)
    config = {
        "llm.tier.codegen": {
            "provider": "fake",
            "model": "claude-haiku-4-5",
            "base_url": fake.base_url,
            "api_key_ref": "env:K",
        }
    }
    transport = Transport(env={"K": key}, max_attempts=1)
    task = asyncio.create_task(
        run_gen(
            chat(USER, system="s", tier="codegen", tools=()),
            log=log,
            config=config,
            transport=transport,
        )
    )
    deadline = asyncio.get_running_loop().time() + 30
    while log.last_seq < 3:
        assert asyncio.get_running_loop().time() < deadline, "the model call never started"
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await transport.aclose()
    log.close()
    last = json.loads(log.path.read_text().splitlines()[-1])
    assert (last["seq"], last["phase"], last["data"]) == (3, "result", {"cancelled": "break_hard"})
