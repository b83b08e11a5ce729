"""Embeddings in OpenAI's wire format (llm/embeddings.py) and the fake's ``/v1/embeddings``."""

from __future__ import annotations

import math
from typing import Any

import httpx
import pytest

from jupyter_agent.core.memory.terms import terms
from jupyter_agent.exceptions import ConfigError, ProviderProtocolError, ProviderStatusError
from jupyter_agent.llm.embeddings import (
    MAX_BATCH,
    build_embed_request,
    embed_tier,
    embed_tier_problem,
    normalise,
    parse_embed_reply,
)
from jupyter_agent.llm.fake.embed import embed_text, embeddings_reply
from jupyter_agent.llm.fake.server import FakeProvider
from jupyter_agent.llm.transport import Transport

TIER = {"provider": "openai-compatible", "model": "embed-m", "base_url": "http://127.0.0.1:9/v1/"}


def test_the_request_is_openais_embeddings_call_without_a_key() -> None:
    tier = embed_tier({**TIER, "api_key_ref": "env:EMBED_KEY"})
    spec = build_embed_request(tier, ["a fact", "another"], deadline_s=2.0)
    assert spec.url == "http://127.0.0.1:9/v1/embeddings"
    assert spec.json == {"model": "embed-m", "input": ["a fact", "another"]}
    assert (spec.credential_ref, spec.credential_header, spec.credential_prefix) == (
        "env:EMBED_KEY",
        "authorization",
        "Bearer ",
    )
    assert spec.headers == {}
    assert spec.stream is False
    assert spec.deadline_s == 2.0
    keyless = build_embed_request(embed_tier(TIER), ["x"], deadline_s=1.0)
    assert keyless.credential_ref is None
    openai = embed_tier({"provider": "openai", "model": "text-embedding-3-small"})
    assert build_embed_request(openai, ["x"], deadline_s=1).url == (
        "https://api.openai.com/v1/embeddings"
    )


def test_batch_bounds() -> None:
    tier = embed_tier(TIER)
    with pytest.raises(ValueError):
        build_embed_request(tier, [], deadline_s=1)
    build_embed_request(tier, ["t"] * MAX_BATCH, deadline_s=1)
    with pytest.raises(ValueError):
        build_embed_request(tier, ["t"] * (MAX_BATCH + 1), deadline_s=1)


@pytest.mark.parametrize(
    ("tier", "needle"),
    [
        ({"provider": "anthropic", "model": "m"}, "openai or openai-compatible"),
        ({"provider": "fake", "model": "m", "base_url": "http://127.0.0.1:9"}, "not 'fake'"),
        ({**TIER, "api": "responses"}, "takes no 'api'"),
    ],
)
def test_an_embed_tier_speaks_only_openais_embeddings(tier: dict[str, Any], needle: str) -> None:
    problem = embed_tier_problem(tier)
    assert problem is not None
    assert needle in problem
    with pytest.raises(ConfigError, match=r"llm\.tier\.embed"):
        embed_tier(tier)


def test_the_reply_is_put_in_input_order_and_normalised() -> None:
    body = {
        "object": "list",
        "data": [
            {"object": "embedding", "index": 1, "embedding": [0.0, 2.0]},
            {"object": "embedding", "index": 0, "embedding": [3, 4]},
        ],
        "model": "embed-m",
    }
    assert parse_embed_reply(body, 2) == [[0.6, 0.8], [0.0, 1.0]]


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({}, "no 'data'"),
        ({"data": "x"}, "no 'data'"),
        ({"data": [{"index": 0, "embedding": [1.0]}]}, "1 vectors for 2 inputs"),
        ({"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}]}, "each"),
        ({"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1, 0]}]}, "dim"),
        ({"data": [{"index": 0, "embedding": "AAAA"}, {"index": 1, "embedding": [1]}]}, "list"),
        ({"data": [{"index": 0, "embedding": [0, 0]}, {"index": 1, "embedding": [1, 0]}]}, "zero"),
        ({"data": [{"index": 0, "embedding": [1, "a"]}, {"index": 1, "embedding": [1, 0]}]}, "non"),
        ({"data": [{"index": 0, "embedding": [True]}, {"index": 1, "embedding": [1]}]}, "non"),
        ({"data": [{"index": "0", "embedding": [1]}, {"index": 1, "embedding": [1]}]}, "index"),
        ({"data": [[1.0], [1.0]]}, "not an object"),
    ],
)
def test_a_bad_reply_is_a_protocol_error(body: dict[str, Any], needle: str) -> None:
    with pytest.raises(ProviderProtocolError, match=needle):
        parse_embed_reply(body, 2)


def test_normalise_refuses_what_has_no_direction() -> None:
    assert normalise([3.0, 4.0]) == [0.6, 0.8]
    for bad in ([0.0, 0.0], [math.inf, 1.0], [math.nan]):
        with pytest.raises(ValueError):
            normalise(bad)


# --- the fake's vectors -------------------------------------------------------------------


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=False))


def test_fake_vectors_are_deterministic_unit_vectors_of_the_terms() -> None:
    a = embed_text("The cats are sleeping", terms=terms)
    assert len(a) == 64
    assert math.isclose(sum(v * v for v in a), 1.0, abs_tol=1e-5)
    assert a == embed_text("the CAT sleeps", terms=terms)  # same stems, stopwords out
    assert embed_text("") == embed_text("!!")  # no term: a fixed unit vector, not zero
    assert math.isclose(sum(v * v for v in embed_text("")), 1.0)


def test_fake_synonyms_relate_different_words() -> None:
    synonyms = {"puppy": "dog", "called": "name"}
    fact = embed_text("Our puppy is called Biscuit", terms=terms, synonyms=synonyms)
    query = embed_text("what is the dog's name", terms=terms, synonyms=synonyms)
    plain_fact = embed_text("Our puppy is called Biscuit", terms=terms)
    plain_query = embed_text("what is the dog's name", terms=terms)
    assert cosine(fact, query) > 0.6
    assert cosine(plain_fact, plain_query) < 0.35  # collisions only


def test_fake_reply_shape_and_bad_bodies() -> None:
    status, body = embeddings_reply({"model": "m", "input": ["a b", "c d"]})
    assert status == 200
    assert body["object"] == "list"
    assert body["model"] == "m"
    assert [d["index"] for d in body["data"]] == [0, 1]
    assert parse_embed_reply(body, 2)[0] == pytest.approx(embed_text("a b"), abs=1e-5)
    assert embeddings_reply({"model": "m", "input": "one"})[0] == 200
    for bad in ({"input": ["x"]}, {"model": "m"}, {"model": "m", "input": [1]}):
        status, body = embeddings_reply(bad)
        assert status == 400
        assert body["error"]["type"] == "invalid_request_error"


# --- over loopback, through the transport ------------------------------------------------


async def test_the_transport_gets_vectors_from_the_fake_with_the_key() -> None:
    key = "sk-embed-canary-4471"
    fake = FakeProvider([{"text": "unused"}], expect_key=key, embed_terms=terms).start()
    transport = Transport(env={"EMBED_KEY": key}, backoff_base_s=0.01)
    try:
        tier = embed_tier(
            {**TIER, "base_url": fake.base_url + "/v1", "api_key_ref": "env:EMBED_KEY"}
        )
        spec = build_embed_request(tier, ["cats sleep", "dogs bark"], deadline_s=5)
        assert key not in repr(spec.to_intent())
        reply = await transport.post(spec)
        vectors = parse_embed_reply(reply.json, 2)
        assert vectors[0] == pytest.approx(embed_text("cats sleep", terms=terms), abs=1e-5)
        (seen,) = fake.embed_requests
        assert seen.path == "/v1/embeddings"
        assert seen.headers["authorization"] == f"Bearer {key}"
        assert seen.json == {"model": "embed-m", "input": ["cats sleep", "dogs bark"]}
        assert fake.requests == []
        assert fake.remaining == 1

        wrong = Transport(env={"EMBED_KEY": "sk-wrong-key-0000"})
        with pytest.raises(ProviderStatusError) as info:
            await wrong.post(spec)
        assert info.value.status == 401
        assert "sk-wrong-key-0000" not in repr(info.value.to_json())
        await wrong.aclose()

        fake.embed_error = 500
        with pytest.raises(ProviderStatusError) as info:
            await Transport(env={"EMBED_KEY": key}, max_attempts=2, backoff_base_s=0.01).post(spec)
        assert info.value.status == 500
    finally:
        await transport.aclose()
        fake.stop()


def test_fake_embeddings_route_answers_plain_http() -> None:
    with FakeProvider([{"text": "x"}]) as fake:
        with httpx.Client(trust_env=False) as client:
            ok = client.post(fake.base_url + "/v1/embeddings", json={"model": "m", "input": "hi"})
            bad = client.post(fake.base_url + "/v1/embeddings", content=b"[")
        assert ok.status_code == 200
        assert len(ok.json()["data"][0]["embedding"]) == 64
        assert bad.status_code == 400
        assert "error" in bad.json()
