"""One long-lived connection pool per provider origin, shared by every call, closed at
shutdown: counted by the fake provider, which counts the sockets it accepts."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

from jupyter_agent.effects import HTTP_POST, Effect
from jupyter_agent.llm.chat import build_request
from jupyter_agent.llm.pools import origin
from jupyter_agent.llm.spec import RequestParams
from jupyter_agent.llm.tiers import tier_from_config
from jupyter_agent.llm.transport import Transport
from jupyter_agent.messages import Message, Text
from jupyter_agent.runtime.loop.model_calls import perform
from jupyter_agent.runtime.secret_guard import ScrubbingTransport
from jupyter_agent.runtime.secrets import Scrubber

KEY = "sk-pool-test-0123456789"
ENV = {"ANTHROPIC_API_KEY": KEY, "OPENAI_API_KEY": KEY}


def effect(base_url: str, provider: str = "anthropic", *, stream: bool = True) -> Effect:
    """The http.post effect the adapter builds for a one-message chat (what a run yields)."""
    suffix = "" if provider == "anthropic" else "/v1"
    data = {"provider": provider, "model": "claude-sonnet-4-5", "base_url": base_url + suffix}
    tier = tier_from_config("codegen", data)
    params = RequestParams(
        messages=[Message(role="user", parts=(Text(text="hi"),))],
        system="You are the agent.",
        tier=tier,
        stream=stream,
    )
    return Effect(name=HTTP_POST, data=build_request(params).to_intent())


def production() -> ScrubbingTransport:
    """The server's transport as runs see it (wrapped by the secret guard)."""
    inner = Transport(env=ENV, max_attempts=1)
    return ScrubbingTransport(inner, Scrubber({KEY: "ANTHROPIC_API_KEY"}))


async def call(transport: Any, effect: Effect) -> dict[str, Any]:
    data, error = await perform(effect, config={}, transport=transport, on_delta=lambda _d: None)
    assert error is None, error
    assert isinstance(data, dict)
    return data


async def test_five_calls_share_one_connection(fake_provider: Any) -> None:
    fake = fake_provider({"steps": [{"text": "pooled"}], "repeat": True})
    transport = production()
    try:
        for stream in (True, False, True, True, False):
            data = await call(transport, effect(fake.base_url, stream=stream))
            assert data["json"]["content"][0]["text"] == "pooled"
        assert len(fake.requests) == 5
        assert fake.accepted == 1
        assert transport.pools() == (origin(fake.base_url)[0],)
    finally:
        await transport.aclose()


async def test_concurrent_calls_then_sequential_ones_reuse_the_pool(fake_provider: Any) -> None:
    fake = fake_provider({"steps": [{"text": "x"}], "repeat": True})
    transport = production()
    try:
        await asyncio.gather(*(call(transport, effect(fake.base_url)) for _ in range(3)))
        opened = fake.accepted
        assert 1 <= opened <= 3
        for _ in range(5):
            await call(transport, effect(fake.base_url))
        assert fake.accepted == opened  # the kept-alive connections served the rest
    finally:
        await transport.aclose()


async def test_a_pool_per_provider_base_url(fake_provider: Any) -> None:
    one = fake_provider({"steps": [{"text": "one"}], "repeat": True})
    two = fake_provider({"steps": [{"text": "two"}], "repeat": True})
    transport = production()
    try:
        for _ in range(3):
            await call(transport, effect(one.base_url, "anthropic"))
            await call(transport, effect(two.base_url, "openai"))
        assert (one.accepted, two.accepted) == (1, 1)
        assert len(one.requests) == len(two.requests) == 3
        assert sorted(transport.pools()) == sorted(
            [origin(one.base_url)[0], origin(two.base_url)[0]]
        )
    finally:
        await transport.aclose()


async def test_aclose_closes_every_pool_and_its_connections(fake_provider: Any) -> None:
    one = fake_provider({"steps": [{"text": "one"}], "repeat": True})
    two = fake_provider({"steps": [{"text": "two"}], "repeat": True})
    transport = production()
    await call(transport, effect(one.base_url))
    await call(transport, effect(two.base_url, "openai"))
    assert one.open_connections == two.open_connections == 1
    await transport.aclose()
    assert transport.pools() == ()
    deadline = time.monotonic() + 5
    while one.open_connections or two.open_connections:  # the server sees the close
        assert time.monotonic() < deadline, "the connections stayed open"
        await asyncio.sleep(0.01)
    # a call after aclose (a transport reused by a restarted server) opens a new pool
    await call(transport, effect(one.base_url))
    assert one.accepted == 2
    await transport.aclose()


def test_origins_name_scheme_host_and_port() -> None:
    assert origin("http://127.0.0.1:8000/v1/messages") == ("http://127.0.0.1:8000", True)
    assert origin("https://API.example.com/v1/chat") == ("https://api.example.com:443", False)
    assert origin("http://localhost/v1") == ("http://localhost:80", True)
    # two base URLs of one origin share its pool
    assert origin("https://x.io/a/v1/messages")[0] == origin("https://x.io:443/b/responses")[0]


class _Searches:
    """A meta path finder that finds nothing and records what was searched for: a module
    imported already is never searched for, a missing one at every import."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def find_spec(
        self, name: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        self.names.append(name)
        return None


async def test_a_model_call_searches_for_no_module(fake_provider: Any) -> None:
    """httpcore asks ``import sniffio`` several times a call: without sniffio installed
    each is a failed import, a search of every ``sys.path`` entry (about 50 us each on these
    machines). The package depends on sniffio so that none is; no other per-call import
    may come back either."""
    fake = fake_provider({"steps": [{"text": "no imports"}], "repeat": True})
    transport = production()
    searches = _Searches()
    try:
        for provider in ("anthropic", "openai"):  # first uses may import: not counted
            await call(transport, effect(fake.base_url, provider))
        sys.meta_path.insert(0, searches)
        try:
            for provider in ("anthropic", "openai", "anthropic"):
                await call(transport, effect(fake.base_url, provider))
        finally:
            sys.meta_path.remove(searches)
        assert searches.names == [], f"a model call searched for {sorted(set(searches.names))}"
    finally:
        await transport.aclose()
