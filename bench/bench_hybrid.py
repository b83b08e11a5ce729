"""Hybrid recall (an embed tier set) against lexical recall on the same store.

    python bench/bench_hybrid.py [--facts 10000] [--turns 20000] [--queries 200] [--dim 64]

Loads the store like ``bench/bench_recall.py`` (its corpus and bulk loader), gives every
fact a vector (the fake provider's embedding of its text at ``--dim`` dimensions, bulk
inserted), then for each message cut from the same corpus times, side by side:

- ``store.recall(message, k=5)``: the lexical recall (no embed tier);
- ``recall_hits(store, embedder, message, k=5)``: the hybrid recall, its query embedded by
  the fake provider's ``/v1/embeddings`` over loopback (HTTP included);
- the query's embedding alone (``embedder.query_vector``), the round trip a local
  embeddings server adds at best;
- the 50 nearest facts by cosine (the in-memory index, numpy when installed).

And how often the hybrid top 5 differs from the lexical one. Machines are noisy: compare
within one run. SQLite only (the vector search is the same in-memory index on PostgreSQL
without pgvector).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import create_engine, text

from bench.bench_recall import Texts, corpus_words, load
from jupyter_agent.core.memory.terms import query_terms, terms
from jupyter_agent.llm.fake.embed import embed_text
from jupyter_agent.llm.fake.server import FakeProvider
from jupyter_agent.llm.transport import Transport
from jupyter_agent.runtime.memory.embedder import Embedder
from jupyter_agent.runtime.memory.hybrid import recall_hits
from jupyter_agent.store import Store

MODEL, K = "fake-embed", 5


def put_vectors(url: str, dim: int) -> None:
    """Every fact's vector, bulk inserted (what the backfill would have stored)."""
    engine = create_engine(url)
    with engine.begin() as conn:
        facts = conn.execute(text("SELECT id, text FROM agent_memories")).all()
        rows = [
            {
                "m": mid,
                "model": MODEL,
                "dim": dim,
                "v": json.dumps(embed_text(body, dims=dim, terms=terms), separators=(",", ":")),
            }
            for mid, body in facts
        ]
        conn.execute(text("INSERT INTO agent_memory_vectors VALUES (:m, :model, :dim, :v)"), rows)
    engine.dispose()


def ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"p50 {statistics.median(ordered) * 1000:7.2f} ms   p99 {p99 * 1000:7.2f} ms"


async def measure(store: Store, embedder: Embedder, queries: list[str]) -> None:
    for q in queries[:10]:  # warm: the index load, the connections
        await recall_hits(store, embedder, q, k=K)
    lexical, hybrid, embed, cosine, differ = [], [], [], [], 0
    index = embedder.index("", MODEL)
    for q in queries:
        t0 = time.perf_counter()
        lex = store.recall(q, k=K)
        lexical.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        hyb = await recall_hits(store, embedder, q, k=K)
        hybrid.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        vector = await embedder.query_vector(q)
        embed.append(time.perf_counter() - t0)
        assert vector is not None
        t0 = time.perf_counter()
        await index.nearest(vector, limit=50)
        cosine.append(time.perf_counter() - t0)
        differ += [h.id for h in lex] != [h.id for h in hyb]
    print(f"  lexical recall (k={K})         {ms(lexical)}")
    print(f"  hybrid recall (k={K})          {ms(hybrid)}")
    print(f"    the query's embedding       {ms(embed)}   (fake over loopback)")
    print(f"    nearest 50 of {len(index):>6} facts {ms(cosine)}")
    print(f"  top {K} differs from lexical   {differ}/{len(queries)} messages")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dim", type=int, default=64)
    args = parser.parse_args()
    words = corpus_words()
    with tempfile.TemporaryDirectory() as tmp, FakeProvider([{"text": "-"}]) as fake:
        url = f"sqlite:///{tmp}/agent.sqlite"
        t0 = time.perf_counter()
        load(url, args.facts, args.turns, Texts(words, seed=15))
        put_vectors(url, args.dim)
        print(
            f"{args.facts} facts (dim {args.dim}) + {args.turns} turns loaded in "
            f"{time.perf_counter() - t0:.1f} s"
        )
        fake._embed_terms, fake._embed_dims = terms, args.dim
        store = Store(url)
        tier = {"provider": "openai-compatible", "model": MODEL, "base_url": fake.base_url + "/v1"}
        embedder = Embedder(store=store, transport=Transport(), tier=lambda owner: tier)
        messages = Texts(words, seed=99)
        queries = [
            q for q in (messages.window(4, 25) for _ in range(args.queries)) if query_terms(q)
        ]
        try:
            asyncio.run(measure(store, embedder, queries))
        finally:
            store.close()


if __name__ == "__main__":
    main()
