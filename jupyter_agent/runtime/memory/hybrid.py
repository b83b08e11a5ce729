"""Recall with the hybrid ranking: the store's lexical hits, re-ranked with the
embedder's cosines when a query vector comes in time.

:func:`recall_hits` is recall with the hybrid ranking when a query vector is had
(:mod:`jupyter_agent.core.memory.hybrid`), else exactly the store's lexical recall;
:func:`hybrid_rank` is it as the ``rank`` hook of ``recall.search``
(:func:`jupyter_agent.runtime.memory.search.begin_search`). The vectors and the query
embedding are :class:`~jupyter_agent.runtime.memory.embedder.Embedder`'s.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from jupyter_agent.core.memory.hybrid import (
    hybrid_score,
    memory_hit,
    merge_hybrid,
    top_neighbours,
)
from jupyter_agent.core.memory.records import HIT_KINDS, RecallHit
from jupyter_agent.store.memory.recall_queries import DEFAULT_CANDIDATES

if TYPE_CHECKING:
    from jupyter_agent.runtime.memory.embedder import Embedder

__all__ = ["hybrid_rank", "recall_hits"]


async def recall_hits(
    store: Any,
    embedder: Embedder | None,
    query: str,
    *,
    owner: str,
    kinds: Sequence[str] = HIT_KINDS,
    k: int = 5,
    category: str | None = None,
    exclude_chat: str | None = None,
    exclude_since: str | None = None,
    exclude_chunks: Sequence[tuple[int, int]] = (),
    candidates: int = DEFAULT_CANDIDATES,
    vector_deadline_s: float | None = None,
) -> list[RecallHit]:
    """Recall for ``query``: the store's lexical hits, ranked hybrid when the embed tier
    gives a query vector (see the module docstring); the store's answer otherwise.
    ``candidates`` (the store's ``DEFAULT_CANDIDATES``, as on every recall path) bounds
    the lexical candidates per kind and the nearest vectors read; ``vector_deadline_s``
    shortens the query vector's deadline (past it the answer is lexical).

    The store's own errors propagate (the caller's to handle, as without embeddings);
    an embedding failure only makes the answer lexical.
    """
    lexical_args: dict[str, Any] = {
        "owner": owner,
        "kinds": tuple(kinds),
        "category": category,
        "exclude_chat": exclude_chat,
        "exclude_since": exclude_since,
        "exclude_chunks": tuple(exclude_chunks),
        "candidates": candidates,
    }
    tier = embedder.tier(owner) if embedder is not None else None
    if (
        embedder is None
        or tier is None
        or "memory" not in kinds
        or not embedder.vectors_ready(owner, tier.model)
    ):
        hits: list[RecallHit] = await asyncio.to_thread(store.recall, query, k=k, **lexical_args)
        return hits
    # the lexical candidates meanwhile; the vector is used only if it comes in time.
    # (The store's order is total: its first k of more candidates are its k hits.)
    reading = asyncio.ensure_future(
        asyncio.to_thread(store.recall, query, k=max(k, candidates), **lexical_args)
    )
    try:
        vector = await embedder.query_vector(query, owner=owner, deadline_s=vector_deadline_s)
    except BaseException:
        reading.cancel()
        raise
    lexical: list[RecallHit] = await reading
    if vector is None:
        return lexical[:k]
    known = {h.id for h in lexical if h.kind == "memory"}
    cosines = await embedder.cosines(
        vector, owner=owner, model=tier.model, limit=candidates, ids=sorted(known)
    )
    if cosines is None:  # the index is still loading: lexical this time
        return lexical[:k]
    merged = merge_hybrid(lexical, cosines, k=len(lexical))
    floor = merged[k - 1].score if len(merged) >= k else 0.0
    wanted = [(i, c) for i, c in top_neighbours(cosines, candidates) if i not in known]

    def fetch() -> list[RecallHit]:
        found: list[RecallHit] = []
        for memory_id, cosine in wanted:
            if len(found) >= k or hybrid_score(0.0, cosine) < floor:
                break  # sorted by cosine: no later one can enter the top k
            memory = store.get_memory(memory_id, owner=owner)
            if memory is None or (category is not None and memory.category != category):
                continue
            chat = store.get_chat(memory.chat_id) if memory.chat_id else None
            found.append(memory_hit(memory, chat_title=chat.title if chat else None))
        return found

    vector_hits = await asyncio.to_thread(fetch) if wanted else []
    return merge_hybrid(lexical, cosines, vector_hits, k=k)


def hybrid_rank(
    embedder: Embedder | None, owner: str
) -> Callable[..., Coroutine[Any, Any, list[RecallHit]]] | None:
    """The ``rank`` hook of ``recall.search`` (:mod:`jupyter_agent.runtime.memory.search`)
    for ``owner``'s searches: :func:`recall_hits` through ``embedder``; None (the store's
    ranking) without an embedder or without an embed tier of ``owner``'s."""
    if embedder is None or not embedder.enabled(owner):
        return None
    ranker = embedder

    async def rank(store: Any, query: str, **args: Any) -> list[RecallHit]:
        return await recall_hits(store, ranker, query, **args)

    return rank
