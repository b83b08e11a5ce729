"""Recall latency at scale against a bare full-text query, and tokens injected per run.

    python bench/bench_recall.py [--facts 10000] [--turns 100000] [--queries 300] [--pg URL]

Builds a store of ``--facts`` memories and ``--turns`` turns (plus a chunk summary per 10
turns) with bulk inserts through the store's own doc writer (not 100,000 ``append_turn``
calls), texts cut from real technical prose (Python's pydoc topics, the standard
library's docstrings, this repo's docs): a realistic, Zipf-shaped vocabulary. Then, for
``--queries`` messages cut from held-out text of the same kind (the last 15% of it, which
the store was not built from: related material, not the stored sentences again):

- ``store.recall(message)`` (k=5, all kinds): p50 / p99 in ms, and its CPU time (the
  thread's: less sensitive to other load on the machine);
- the floor: a bare full-text query with the same terms and LIMIT on the same table
  (SQLite: FTS5 MATCH of the quoted terms joined by OR, ORDER BY bm25; PostgreSQL: ``tsv @@``
  the same terms, ORDER BY ts_rank), p50 / p99, and recall / floor; also the same query
  unranked (the first 50 matches: what the index costs before any ranking);
- ``append_turn`` of a chat turn on the loaded store (its doc written in its transaction);
- tokens injected per run: ``core.recall.pack_hits`` (threshold 0.3, budget 800) over the
  hits of each message, counted by ``core.recall.render_hits`` when that module is present
  (section C), else a greedy pack of the hits' texts by the same counter.

SQLite always; PostgreSQL with ``--pg URL`` (an admin URL: a database is created and
dropped) or ``--pg cluster`` (a throwaway cluster, fsync on), then how many messages got
the same hits (ids, order, scores) on both. Goal: recall <= 2x the floor
and p99 < 20 ms on SQLite. Machines are noisy: compare ratios within one run.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import random
import re
import statistics
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import create_engine, text

from jupyter_agent.core.history.chunks import StoredChunk
from jupyter_agent.core.memory.records import RecallHit
from jupyter_agent.core.memory.terms import query_terms
from jupyter_agent.core.tokens import count_tokens
from jupyter_agent.core.turns import Reply, TurnLLM, TurnRecord
from jupyter_agent.store import Store
from jupyter_agent.store.memory import recall_index
from jupyter_agent.store.rows import turn_values
from jupyter_agent.store.tables import CHUNKS, MEMORIES, TURNS
from tests.store.factories import iso

ROOT = Path(__file__).resolve().parents[1]
THRESHOLD, BUDGET, K = 0.3, 800, 5


def corpus_words(limit: int = 3_000_000) -> list[str]:
    """Words of real technical prose, in order: what people and an agent write about code
    (Python's pydoc topics, the standard library's docstrings, this repo's docs)."""
    import pydoc_data.topics

    parts = list(pydoc_data.topics.topics.values())
    for path in sorted(ROOT.glob("*.md")) + sorted((ROOT / "docs").glob("*.md")):
        parts.append(path.read_text(encoding="utf-8", errors="replace"))
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(stdlib.glob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)):
                doc = ast.get_docstring(node)
                if doc:
                    parts.append(doc)
    words = re.findall(r"\S+", "\n".join(parts))
    return words[:limit]


class Texts:
    """Random windows of the corpus: a fact, a message, a reply, a summary."""

    def __init__(self, words: Sequence[str], seed: int) -> None:
        self.words = words
        self.rng = random.Random(seed)

    def window(self, low: int, high: int) -> str:
        n = self.rng.randint(low, high)
        start = self.rng.randrange(0, len(self.words) - n)
        return " ".join(self.words[start : start + n])


def load(url: str, facts: int, turns: int, texts: Texts) -> None:
    """Bulk-load chats, turns, chunks and facts with their docs (batches of 2,000 rows)."""
    Store(url).close()  # migrated
    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    chats = [f"chat_{n:05d}" for n in range(max(1, turns // 50))]
    with engine.begin() as conn:
        conn.execute(
            text("INSERT INTO chats (id, title, created, updated) VALUES (:id, :t, :n, :n)"),
            [{"id": c, "t": texts.window(2, 6), "n": iso(0)} for c in chats],
        )
    batch = 2000
    for start in range(0, turns, batch):
        rows, docs, chunks = [], [], []
        for n in range(start, min(turns, start + batch)):
            turn = TurnRecord(
                id=f"turn_{n:07d}",
                chat_id=chats[n % len(chats)],
                run_id=f"run_{n:07d}",
                user_text=texts.window(5, 40),
                created=iso(10 + n),
                llm=TurnLLM(stop_reason="done", end_cause="done"),
                replies=(Reply(text=texts.window(20, 200), done=True),),
            )
            rows.append(turn_values(turn))
            docs.append(recall_index.turn_doc(turn))
            if n % 10 == 9:
                chunk = StoredChunk(
                    chat_id=turn.chat_id,
                    level=1,
                    first_turn=(n // len(chats)) + 1,  # one per (chat, position)
                    last_turn=(n // len(chats)) + 10,
                    text=texts.window(40, 120),
                    run_id=f"run_h{n:07d}",
                    model=None,
                    created=turn.created,
                )
                chunks.append(chunk_row(chunk))
                docs.append(recall_index.chunk_doc(chunk))
        with engine.begin() as conn:
            conn.execute(TURNS.insert(), rows)
            conn.execute(CHUNKS.insert(), chunks)
            recall_index.put_docs(conn, docs)
    for start in range(0, facts, batch):
        rows, docs = [], []
        for n in range(start, min(facts, start + batch)):
            body = texts.window(6, 30)
            row = {
                "id": f"mem_{n:07d}",
                "owner": "",
                "category": texts.rng.choice(("data", "preferences", "project", "people")),
                "text": body,
                "chat_id": None,
                "run_id": None,
                "author": "agent",
                "created": iso(n),
                "updated": iso(n),
            }
            rows.append(row)
            docs.append(
                recall_index.Doc.of(
                    owner="",
                    kind="memory",
                    ref_id=row["id"],
                    chat_id=None,
                    created=row["updated"],
                    body=body,
                )
            )
        with engine.begin() as conn:
            conn.execute(MEMORIES.insert(), rows)
            recall_index.put_docs(conn, docs)
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("ANALYZE"))
    engine.dispose()


def chunk_row(chunk: StoredChunk) -> dict[str, Any]:
    return {
        "id": f"chunk_{chunk.run_id}",
        "chat_id": chunk.chat_id,
        "level": chunk.level,
        "first_turn": chunk.first_turn,
        "last_turn": chunk.last_turn,
        "text": chunk.text,
        "run_id": chunk.run_id,
        "model": chunk.model,
        "created": chunk.created,
    }


def _ms(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered) * 1e3, p99 * 1e3


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def floor_query(engine: Any, pg: bool, *, ranked: bool = True) -> Callable[[list[str]], list[Any]]:
    """A bare full-text query: the same terms OR'ed, LIMIT 50; ``ranked``: by the backend's
    rank (bm25, ts_rank), else the first 50 matches (no search ranks that way)."""
    conn = engine.connect()
    if pg:
        order = " ORDER BY ts_rank(tsv, CAST(:q AS tsquery)) DESC" if ranked else ""
        sql = text(
            f"SELECT doc_id FROM agent_recall_docs WHERE tsv @@ CAST(:q AS tsquery){order} LIMIT 50"
        )
    else:
        order = " ORDER BY rank" if ranked else ""
        sql = text(
            f"SELECT rowid FROM agent_recall_fts WHERE agent_recall_fts MATCH :q{order} LIMIT 50"
        )

    def run(terms: list[str]) -> list[Any]:
        q = " | ".join(f"'{t}'" for t in terms) if pg else " OR ".join(f'"{t}"' for t in terms)
        return conn.execute(sql, {"q": q}).all()

    return run


def packer() -> tuple[str, Callable[[list[RecallHit]], int]]:
    """Tokens a run would inject for its hits: section C's pack_hits + render_hits."""
    try:
        recall = importlib.import_module("jupyter_agent.core.memory.recall")
        pack, render = recall.pack_hits, getattr(recall, "render_hits", None)
    except (ImportError, AttributeError):
        pack = render = None
    if pack is not None:

        def packed_tokens(hits: list[RecallHit]) -> int:
            kept = pack(hits, THRESHOLD, BUDGET)
            if not kept:
                return 0
            if render is not None:
                return count_tokens(str(render(kept)))
            return sum(count_tokens(h.text) for h in kept)

        return "core.recall.pack_hits", packed_tokens

    def greedy(hits: list[RecallHit]) -> int:
        used = 0
        for hit in hits:
            if hit.score < THRESHOLD:
                continue
            cost = count_tokens(hit.text) + 12  # its numbered line's head
            if used + cost > BUDGET:
                break
            used += cost
        return used

    return "greedy estimate (core.recall not on this branch)", greedy


def bench(url: str, args: argparse.Namespace, words: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    # Messages come from text the store was not built from (its last 15%): related
    # material, not the stored sentences again.
    cut = len(words) * 85 // 100
    if not getattr(args, "reuse", False):
        load(url, args.facts, args.turns, Texts(words[:cut], seed=15))
    out["load_s"] = time.perf_counter() - t0
    store = Store(url)
    engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    pg = store.dialect == "postgresql"
    try:
        messages = Texts(words[cut:], seed=99)
        queries = [messages.window(4, 25) for _ in range(args.queries)]
        queries = [q for q in queries if query_terms(q)]
        floor = floor_query(engine, pg)
        unranked = floor_query(engine, pg, ranked=False)
        for q in queries[:20]:  # warm the caches alike
            store.recall(q, k=K)
            floor(query_terms(q))
        recall_s, recall_cpu, floor_s, unranked_s, hits_per = [], [], [], [], []
        for q in queries:
            cpu = time.thread_time()
            spent, hits = _timed(lambda q=q: store.recall(q, k=K))
            recall_cpu.append(time.thread_time() - cpu)
            recall_s.append(spent)
            hits_per.append(hits)
            floor_s.append(_timed(lambda q=q: floor(query_terms(q)))[0])
            unranked_s.append(_timed(lambda q=q: unranked(query_terms(q)))[0])
        out["recall"] = _ms(recall_s)
        out["recall_cpu"] = _ms(recall_cpu)
        out["floor"] = _ms(floor_s)
        out["unranked"] = _ms(unranked_s)
        name, tokens_of = packer()
        tokens = [tokens_of(hits) for hits in hits_per]
        out["packer"] = name
        out["tokens"] = tokens
        out["top_scores"] = [hits[0].score if hits else 0.0 for hits in hits_per]
        out["hits"] = [[(h.kind, h.id, h.score) for h in hits] for hits in hits_per]
        chat = f"chat_bench{time.time_ns()}"  # a reused file keeps earlier runs' chats
        store.create_chat(chat_id=chat, title="bench", now=iso(0))
        appends = []
        for n in range(200):
            turn = TurnRecord(
                id=f"turn_{chat}_{n:05d}",
                chat_id=chat,
                run_id=f"run_{chat}_{n:05d}",
                user_text=messages.window(8, 30),
                created=iso(10_000_000 + n),
                llm=TurnLLM(stop_reason="done", end_cause="done"),
                replies=(Reply(text=messages.window(60, 160), done=True),),
            )
            appends.append(_timed(lambda turn=turn: store.append_turn(turn))[0])
        out["append_turn"] = _ms(appends)
    finally:
        store.close()
        engine.dispose()
    return out


def report(name: str, out: dict[str, Any], args: argparse.Namespace) -> None:
    (r50, r99), (f50, f99) = out["recall"], out["floor"]
    tokens = out["tokens"]
    injected = [t for t in tokens if t]
    print(f"\n{name}: {args.facts} facts + {args.turns} turns (+ {args.turns // 10} chunks)")
    print(f"  bulk load                     {out['load_s']:8.1f} s")
    c50, c99 = out["recall_cpu"]
    u50, u99 = out["unranked"]
    print(f"  recall (k={K})                  p50 {r50:7.2f} ms   p99 {r99:7.2f} ms")
    print(f"    its CPU (thread time)       p50 {c50:7.2f} ms   p99 {c99:7.2f} ms")
    print(f"  floor: bare FTS, ranked, 50   p50 {f50:7.2f} ms   p99 {f99:7.2f} ms")
    print(f"  recall / floor                p50 {r50 / f50:7.2f} x    p99 {r99 / f99:7.2f} x")
    print(f"  bare FTS, unranked, LIMIT 50  p50 {u50:7.2f} ms   p99 {u99:7.2f} ms")
    a50, a99 = out["append_turn"]
    print(f"  append_turn (loaded store)    p50 {a50:7.2f} ms   p99 {a99:7.2f} ms")
    print(f"  tokens injected per run ({out['packer']}; threshold {THRESHOLD}, budget {BUDGET}):")
    print(
        f"    runs with recall {len(injected)}/{len(tokens)};"
        f" tokens mean {statistics.mean(tokens):.0f}, p50 {statistics.median(tokens):.0f},"
        f" max {max(tokens)} (budget {BUDGET})"
    )
    top = out["top_scores"]
    print(f"    top hit score p50 {statistics.median(top):.3f}, max {max(top):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--pg", default=None, help="admin URL, or 'cluster' for a throwaway")
    parser.add_argument("--sqlite", default=None, help="keep the SQLite file here (reused)")
    args = parser.parse_args()
    words = corpus_words()
    print(f"corpus: {len(words)} words")
    if args.sqlite:
        args.reuse = Path(args.sqlite).exists()
        lite = bench(f"sqlite:///{Path(args.sqlite).resolve()}", args, words)
        report("sqlite", lite, args)
        args.reuse = False
    else:
        with tempfile.TemporaryDirectory() as tmp:
            lite = bench(f"sqlite:///{tmp}/agent.sqlite", args, words)
            report("sqlite", lite, args)
    if args.pg:
        from tests.plugins.postgres import create_database, drop_database, start_cluster

        cluster = start_cluster(durable=True) if args.pg == "cluster" else None
        admin = cluster.url if cluster is not None else args.pg
        db = create_database(admin)
        try:
            pg = bench(db, args, words)
            report("postgresql", pg, args)
            same = sum(a == b for a, b in zip(lite["hits"], pg["hits"], strict=True))
            print(
                f"\nthe same hits (ids, order, scores) on both backends: {same}/{len(pg['hits'])}"
            )
        finally:
            drop_database(admin, db)
            if cluster is not None:
                cluster.stop()


if __name__ == "__main__":
    main()
