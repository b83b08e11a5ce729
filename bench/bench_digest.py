"""Digest cost per cell (microseconds): a small cell, a 1 MB value, a 1000-print cell,
an error with a real IPython traceback, and a 1 MB bash output.

    python bench/bench_digest.py

Prints the median and p90 of repeated runs. Machines are noisy: compare the rows of one
run with each other (ratios), never absolutes across machines.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from jupyter_agent.core.digest.cells import (
    AppCallRecord,
    BashResult,
    CellResult,
    LastValue,
    Value,
)
from jupyter_agent.core.digest.render import DigestOptions, digest_bash, digest_cell

CELLS = Path(__file__).resolve().parent.parent / "tests" / "core" / "cells"
OPTIONS = DigestOptions(env_prefix="/ENV", home="/HOME")


def _measure(fn: Callable[[], object], repeat: int = 2000) -> tuple[float, float]:
    for _ in range(50):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        fn()
        times.append((time.perf_counter_ns() - start) / 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.9)]


def main() -> None:
    megabyte = "x" * 1_000_000
    small = CellResult(
        cell_id="c1",
        prints=(Value(text="hello"), Value(text="(4, 3)")),
        last=LastValue(repr=Value(text="42"), type_name="int"),
        app_calls=(AppCallRecord(seq=5, app="chat", method="post", mutation=True),),
    )
    # The kernel sends a bounded prefix and the full length; the digest also copes with
    # the whole megabyte sent as text.
    big_prefix = CellResult(
        cell_id="c2", last=LastValue(repr=Value(text=megabyte[:8192], chars=10**6))
    )
    big_whole = CellResult(cell_id="c2", last=LastValue(repr=Value(text=megabyte)))
    loop = CellResult(
        cell_id="c3",
        prints=tuple(Value(text=f"step {i}: loss={1 / (i + 1):.5f}") for i in range(1000)),
    )
    error = CellResult.from_json(
        json.loads((CELLS / "nested_error.json").read_text(encoding="utf-8"))
    )
    bash = BashResult(
        command="cat big", stdout=Value(text=megabyte), stderr=Value(text=""), returncode=0
    )
    cases: list[tuple[str, Callable[[], object]]] = [
        ("small cell (2 prints, last, 1 app call)", lambda: digest_cell(small, OPTIONS)),
        ("1 MB last value (8 KB prefix sent)", lambda: digest_cell(big_prefix, OPTIONS)),
        ("1 MB last value (sent whole)", lambda: digest_cell(big_whole, OPTIONS)),
        ("1000-print cell", lambda: digest_cell(loop, OPTIONS)),
        ("error, real IPython traceback (7 frames)", lambda: digest_cell(error, OPTIONS)),
        ("bash, 1 MB stdout", lambda: digest_bash(bash, OPTIONS)),
    ]
    print(f"{'case':45} {'median us':>10} {'p90 us':>10}")
    for name, fn in cases:
        median, p90 = _measure(fn, 300 if "1000" in name else 2000)
        print(f"{name:45} {median:10.1f} {p90:10.1f}")


if __name__ == "__main__":
    main()
