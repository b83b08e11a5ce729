"""The fake provider's embeddings (``POST /v1/embeddings``): deterministic vectors. Pure.

A text's vector is a signed hashed bag of its terms: each term adds +1 or -1 (one bit of
its SHA-256) at bucket ``sha256(term) mod dims`` (64 dims by default), and the sum is
L2-normalised. Texts sharing terms point the same way; texts sharing none are orthogonal
but for hash collisions (a few per cent of the cosine at 64 dims).

``terms`` splits a text into terms. The default is a plain tokeniser (NFKC, casefold, runs
of letters and digits, 1-char tokens dropped); tests pass the recall's own
``jupyter_agent.core.memory.terms.terms`` (stopwords out, stemmed), which ``llm`` may not
import (.importlinter).

``synonyms`` maps words (casefolded) to a concept word they stand for, applied to the
text's words before ``terms``: ``{"puppy": "dog"}`` makes "my puppy" and "the dog" share a
term. That is how a test phrases a fact in different words from its query and still has
the two related, the way a real embedding model relates them.

A text without any term gets the vector of the empty term (a unit vector), never a zero.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

__all__ = ["DIMS", "embed_text", "embeddings_reply", "plain_terms"]

DIMS: Final = 64
_WORD = re.compile(r"[^\W_]+")

Terms = Callable[[str], Sequence[str]]


def plain_terms(text: str) -> list[str]:
    """NFKC-normalised, casefolded runs of letters and digits of 2 chars or more."""
    words = _WORD.findall(unicodedata.normalize("NFKC", text).casefold())
    return [w for w in words if len(w) > 1]


def _with_synonyms(text: str, synonyms: Mapping[str, str]) -> str:
    if not synonyms:
        return text
    table = {k.casefold(): v for k, v in synonyms.items()}
    normal = unicodedata.normalize("NFKC", text)
    return _WORD.sub(lambda m: table.get(m.group(0).casefold(), m.group(0)), normal)


def embed_text(
    text: str,
    *,
    dims: int = DIMS,
    terms: Terms = plain_terms,
    synonyms: Mapping[str, str] | None = None,
) -> list[float]:
    """The unit vector of ``text`` (see the module docstring)."""
    vector = [0.0] * dims
    found = list(terms(_with_synonyms(text, synonyms or {}))) or [""]
    for term in found:
        digest = hashlib.sha256(term.encode("utf-8")).digest()
        bucket = int.from_bytes(digest[:8], "big") % dims
        vector[bucket] += 1.0 if digest[8] & 1 else -1.0
    norm = math.sqrt(math.fsum(v * v for v in vector))
    if norm == 0.0:  # every term cancelled another out in its bucket
        vector[0], norm = 1.0, 1.0
    return [round(v / norm, 6) for v in vector]


def embeddings_reply(
    body: Mapping[str, Any],
    *,
    dims: int = DIMS,
    terms: Terms = plain_terms,
    synonyms: Mapping[str, str] | None = None,
) -> tuple[int, dict[str, Any]]:
    """The fake's answer to an embeddings request body: ``(status, JSON body)``.

    ``input`` may be a string or a list of strings (OpenAI also takes token arrays; the
    fake does not). A bad body gets 400 in OpenAI's error shape.
    """
    model = body.get("model")
    raw = body.get("input")
    texts = [raw] if isinstance(raw, str) else raw
    if not isinstance(model, str) or not model:
        return 400, _error("'model' is required")
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        return 400, _error("'input' must be a string or a non-empty list of strings")
    data = [
        {
            "object": "embedding",
            "index": i,
            "embedding": embed_text(t, dims=dims, terms=terms, synonyms=synonyms),
        }
        for i, t in enumerate(texts)
    ]
    tokens = sum(len(plain_terms(t)) for t in texts)
    usage = {"prompt_tokens": tokens, "total_tokens": tokens}
    return 200, {"object": "list", "data": data, "model": model, "usage": usage}


def _error(message: str) -> dict[str, Any]:
    error = {"message": message, "type": "invalid_request_error", "param": None, "code": None}
    return {"error": error}
