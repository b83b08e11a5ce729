"""Embeddings in OpenAI's wire format (``POST {base_url}/embeddings``). Pure.

The ``embed`` tier names an OpenAI-compatible embeddings endpoint: OpenAI itself
(``provider: openai``, ``base_url`` ``https://api.openai.com/v1`` by default) or any
``openai-compatible`` server (vLLM, Ollama, llama.cpp, LM Studio, TEI's OpenAI route...).
It is never used for chat and never falls back to ``codegen``: no ``embed`` tier, no
embeddings (recall is lexical).

Request: ``{"model": M, "input": [text, ...]}`` (``encoding_format`` left at the default,
``float``: every compatible server knows it), credential as ``Authorization: Bearer <key>``
added by the transport from the tier's ``api_key_ref`` (never in the spec).

Reply: ``{"data": [{"index": i, "embedding": [float, ...]}, ...], "model": ...}``. The
vectors are put back in input order by ``index`` (servers may answer out of order); each is
returned L2-normalised, so a dot product is the cosine. A reply with the wrong count,
mixed dimensions, a non-finite or non-numeric value, a zero vector or a missing ``data``
raises :class:`~jupyter_agent.exceptions.ProviderProtocolError`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from jupyter_agent.exceptions import ConfigError, ProviderProtocolError
from jupyter_agent.llm.spec import RequestSpec
from jupyter_agent.llm.tiers import DEFAULT_BASE_URLS, TIER_KEYS, Tier

__all__ = [
    "EMBED_PROVIDERS",
    "EMBED_TIER",
    "MAX_BATCH",
    "build_embed_request",
    "embed_tier",
    "embed_tier_problem",
    "normalise",
    "parse_embed_reply",
]

#: The tier's name in ``JupyterAgent.tiers`` and the user's settings.
EMBED_TIER: Final = "embed"
#: Providers speaking OpenAI's ``/embeddings``.
EMBED_PROVIDERS: Final = frozenset({"openai", "openai-compatible"})
#: Texts per request (OpenAI takes 2048; local servers are happier with fewer).
MAX_BATCH: Final = 64


def embed_tier_problem(tier: Mapping[str, Any]) -> str | None:
    """Why ``tier`` cannot be the ``embed`` tier (a sentence, never a key), or None."""
    provider = tier.get("provider")
    if provider not in EMBED_PROVIDERS:
        return (
            f"the embed tier needs provider openai or openai-compatible (an OpenAI-style "
            f"/embeddings endpoint), not {provider!r}"
        )
    if tier.get("api") not in (None, "chat"):
        return "the embed tier takes no 'api' (it only speaks /embeddings)"
    return None


def embed_tier(data: Mapping[str, Any]) -> Tier:
    """The :class:`Tier` of an ``embed`` tier's config; ConfigError when it cannot be one.

    Checked like every tier (:func:`~jupyter_agent.llm.tiers.tier_from_config`: known keys
    only, a model, an http(s) base URL), but with no model profile: an embedding model
    is never chatted with.
    """
    problem = embed_tier_problem(data)
    if problem is not None:
        raise ConfigError(f"llm.tier.{EMBED_TIER}: {problem}")
    unknown = sorted(set(data) - TIER_KEYS)
    if unknown:
        raise ConfigError(f"llm.tier.{EMBED_TIER}: unknown key(s) {', '.join(unknown)}")
    provider = str(data.get("provider"))
    base_url = data.get("base_url") or DEFAULT_BASE_URLS.get(provider)
    if not isinstance(base_url, str):
        raise ConfigError(f"llm.tier.{EMBED_TIER}: provider {provider!r} needs a 'base_url'")
    return Tier(
        name=EMBED_TIER,
        provider=data.get("provider"),  # type: ignore[arg-type]  # Tier checks it
        model=data.get("model"),  # type: ignore[arg-type]
        base_url=base_url.strip().rstrip("/"),
        api_key_ref=data.get("api_key_ref") or None,
    )


def build_embed_request(tier: Tier, texts: Sequence[str], *, deadline_s: float) -> RequestSpec:
    """The ``POST {base_url}/embeddings`` request for ``texts`` (1..:data:`MAX_BATCH`)."""
    if not texts:
        raise ValueError("nothing to embed")
    if len(texts) > MAX_BATCH:
        raise ValueError(f"at most {MAX_BATCH} texts per request, not {len(texts)}")
    return RequestSpec(
        url=f"{tier.base_url}/embeddings",
        json={"model": tier.model, "input": [str(t) for t in texts]},
        wire="openai-chat",  # not streamed: the wire only names an assembler
        credential_ref=tier.api_key_ref or None,
        credential_header="authorization",
        credential_prefix="Bearer ",
        stream=False,
        deadline_s=deadline_s,
    )


def normalise(vector: Sequence[float]) -> list[float]:
    """``vector`` scaled to length 1; ValueError for a zero or non-finite vector."""
    norm = math.sqrt(math.fsum(v * v for v in vector))
    if not math.isfinite(norm) or norm == 0.0:
        raise ValueError("a zero or non-finite vector has no direction")
    return [v / norm for v in vector]


def _vector(item: Any, position: int) -> tuple[int, list[float]]:
    if not isinstance(item, Mapping):
        raise ProviderProtocolError(f"embeddings reply: data[{position}] is not an object")
    index = item.get("index", position)
    raw = item.get("embedding")
    if not isinstance(index, int) or isinstance(index, bool):
        raise ProviderProtocolError(f"embeddings reply: data[{position}].index is not an int")
    if not isinstance(raw, list) or not raw:
        # a base64 string means the server ignored the (default) float encoding
        raise ProviderProtocolError(
            f"embeddings reply: data[{position}].embedding is not a list of numbers"
        )
    values: list[float] = []
    for value in raw:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ProviderProtocolError(f"embeddings reply: data[{position}] holds a non-number")
        values.append(float(value))
    try:
        return index, normalise(values)
    except ValueError:
        raise ProviderProtocolError(
            f"embeddings reply: data[{position}] is a zero or non-finite vector"
        ) from None


def parse_embed_reply(body: Any, count: int) -> list[list[float]]:
    """The ``count`` unit vectors of an embeddings reply, in input order (see module doc)."""
    data = body.get("data") if isinstance(body, Mapping) else None
    if not isinstance(data, list):
        raise ProviderProtocolError("embeddings reply has no 'data' list")
    if len(data) != count:
        raise ProviderProtocolError(
            f"embeddings reply holds {len(data)} vectors for {count} inputs"
        )
    by_index = dict(_vector(item, i) for i, item in enumerate(data))
    if sorted(by_index) != list(range(count)):
        raise ProviderProtocolError("embeddings reply: indexes are not 0..n-1, each once")
    vectors = [by_index[i] for i in range(count)]
    if len({len(v) for v in vectors}) != 1:
        raise ProviderProtocolError("embeddings reply: vectors of different dimensions")
    return vectors
