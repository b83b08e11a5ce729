"""Store cost on SQLite and on PostgreSQL, side by side.

    python bench/bench_store.py [--turns 500] [--runs 10000]

Measures, per backend: the cost of persisting one turn (``append_turn`` + ``upsert_run``,
as the driver does at a run's end; median and p99 in microseconds), and ``list_runs``
newest 50 of N runs (unfiltered, by program, and the next page by cursor). PostgreSQL is a
throwaway cluster with fsync ON (``tests.plugins.postgres.start_cluster``), or
``JUPYTER_AGENT_TEST_PG_URL`` when set; its table is ANALYZEd after the bulk load. SQLite
runs WAL + synchronous=NORMAL.
Machines are noisy: compare the ratios within one run, not absolute figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jupyter_agent.store import Store
from tests.plugins.postgres import (
    create_database,
    drop_database,
    start_cluster,
)
from tests.store.factories import iso, make_run, make_turn


def _stats(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered) * 1e6, p99 * 1e6


def _time(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return _stats(samples)


def _analyze(url: str) -> None:
    # What autovacuum does within a minute in real life; without it PostgreSQL plans the
    # freshly bulk-loaded table from empty statistics (a bitmap scan + sort, 2 ms).
    if url.startswith("postgresql"):
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE agent_runs")


def bench(url: str, turns: int, runs: int) -> dict[str, tuple[float, float]]:
    out: dict[str, tuple[float, float]] = {}
    t0 = time.perf_counter()
    store = Store(url)
    out["open (migrate fresh db)"] = ((time.perf_counter() - t0) * 1e6, float("nan"))
    try:
        store.create_chat(chat_id="chat_01A", title="bench", now=iso(0))
        both, append, upsert = [], [], []
        for n in range(turns):
            turn, run = make_turn(n), make_run(n)
            t0 = time.perf_counter()
            store.append_turn(turn)
            t1 = time.perf_counter()
            store.upsert_run(run)
            t2 = time.perf_counter()
            append.append(t1 - t0)
            upsert.append(t2 - t1)
            both.append(t2 - t0)
        out["turn persisted (append+upsert)"] = _stats(both)
        out["  append_turn"] = _stats(append)
        out["  upsert_run"] = _stats(upsert)
        for n in range(turns, runs):
            store.upsert_run(make_run(n, program="toolcaller" if n % 4 else "classifier"))
        _analyze(url)
        out[f"list_runs newest 50 of {runs}"] = _time(lambda: store.list_runs(limit=50), 300)
        out["list_runs program, 50"] = _time(
            lambda: store.list_runs(program="classifier", limit=50), 300
        )
        cursor = store.list_runs(limit=50)[1]
        out["list_runs next page (cursor)"] = _time(
            lambda: store.list_runs(limit=50, before=cursor), 300
        )
        out["list_turns (chat of N turns)"] = _time(lambda: store.list_turns("chat_01A"), 20)
        out["get_run"] = _time(lambda: store.get_run("run_000007"), 300)
    finally:
        store.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--runs", type=int, default=10_000)
    args = parser.parse_args()

    results: dict[str, dict[str, tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        results["sqlite"] = bench(f"sqlite:///{tmp}/agent.sqlite", args.turns, args.runs)

    cluster = None
    admin = os.environ.get("JUPYTER_AGENT_TEST_PG_URL")
    if not admin:
        try:
            cluster = start_cluster(durable=True)
        except (FileNotFoundError, RuntimeError) as exc:
            print(f"PostgreSQL skipped: {exc}")
        else:
            admin = cluster.url
    if admin:
        db = create_database(admin)
        try:
            results["postgresql"] = bench(db, args.turns, args.runs)
        finally:
            drop_database(admin, db)
            if cluster is not None:
                cluster.stop()

    names = list(results)
    print(f"{'µs: median (p99)':34}" + "".join(f"{n:>24}" for n in names))
    for key in results["sqlite"]:
        cells = []
        for name in names:
            median, p99 = results[name][key]
            cells.append(f"{median:>10.0f}" + (f" ({p99:>8.0f})" if p99 == p99 else " " * 11))
        print(f"{key:34}" + "".join(f"{c:>24}" for c in cells))
    if len(names) == 2:
        a, b = results["sqlite"], results["postgresql"]
        for key in ("turn persisted (append+upsert)", f"list_runs newest 50 of {args.runs}"):
            print(f"postgresql / sqlite, {key}: {b[key][0] / a[key][0]:.1f}x")


if __name__ == "__main__":
    main()
