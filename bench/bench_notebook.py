"""Notebook export cost: a 500-cell run exported vs a bare ``nbformat.writes`` of the result.

Run: ``python bench/bench_notebook.py``. The log (500 python cells with a stream, an
execute_result and every 10th a PNG display, a model call and a drain before each, a bubble
every 5th, bash every 25th, app calls every 20th) is written once in a temp dir. "export" is
what ``GET agent/runs/{id}/notebook`` does: ``read_log`` + ``run_notebook`` + ``writes``;
the bare figure is ``nbformat.writes`` of the notebook built once. Medians of 10 each;
compare the ratio, not absolute times (shared machines are noisy).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat

from jupyter_agent.core.digest.cells import AppCallRecord, BashResult, CellResult, LastValue, Value
from jupyter_agent.effects import Effect
from jupyter_agent.trace.log import PROGRAM, EffectLog, read_log
from jupyter_agent.trace.notebook import run_notebook

CELLS = 500
RUNS = 10
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwAD"
    "hgGAWjR9awAAAABJRU5ErkJggg=="
)
writes: Callable[[Any], str] = nbformat.writes  # nbformat is untyped
HEADER = {"run_id": "run_bench", "chat_id": "chat_bench", "program": PROGRAM, "created": "x"}


def _pair(log: EffectLog, name: str, data: dict[str, Any], result: Any, **kw: Any) -> int:
    seq = log.intent(Effect(name=name, data=data, **kw))
    log.result(seq, name, result)
    return seq


def _cell(n: int, app_seq: int | None) -> CellResult:
    text = "".join(f"row {n}.{i}: value {i * n}\n" for i in range(8))
    outputs: list[dict[str, Any]] = [
        {"output_type": "stream", "name": "stdout", "text": text},
        {"output_type": "execute_result", "execution_count": n, "metadata": {},
         "data": {"text/plain": f"{{'n': {n}, 'total': {n * 36}}}"}},
    ]  # fmt: skip
    if n % 10 == 0:
        outputs.append(
            {"output_type": "display_data", "metadata": {},
             "data": {"image/png": PNG, "text/plain": "<Figure size 640x480 with 1 Axes>"}}
        )  # fmt: skip
    calls = (AppCallRecord(seq=app_seq, app="memory", method="search"),) if app_seq else ()
    return CellResult(
        cell_id=f"c{n}",
        prints=(Value(text=text),),
        last=LastValue(repr=Value(text=f"{{'n': {n}, 'total': {n * 36}}}"), type_name="dict"),
        outputs=tuple(outputs),
        execution_count=n,
        app_calls=calls,
        duration_s=0.004,
    )


def write_log(path: Path) -> None:
    with EffectLog.create(path, HEADER) as log:
        _pair(log, "clock.now", {}, "2025-03-01T10:00:00.000Z")
        _pair(log, "config.get", {"key": "ceilings"}, {"max_cells": 10_000})
        _pair(log, "config.get", {"key": "spaces"}, {"home": "/home/u", "env_prefix": "/opt/e"})
        _pair(log, "config.get", {"key": "llm.tier.codegen"}, {"model": "claude-sonnet-4-5"})
        msg = {"kind": "message", "text": "go", "at": "2025-03-01T10:00:00.000Z"}
        _pair(log, "mailbox.drain", {}, [msg])
        runs = 0
        for n in range(1, CELLS + 1):
            _pair(log, "mailbox.drain", {}, [])
            _pair(log, "http.post", {"url": "u", "headers": {}, "json": {}}, {"status": 200})
            if n % 5 == 0:
                _pair(
                    log, "chat.post", {"text": f"Step {n}: looking at the rows.", "done": False}, n
                )
            runs += 1
            if n % 25 == 0:
                a_b = Value(text="a\nb\n")
                out = BashResult(command="ls -l", stdout=a_b, stderr=Value(text=""), returncode=0)
                _pair(log, "bash.run", {"command": "ls -l", "timeout_s": 60}, out.to_json())
                runs += 1
            code = f"rows = load({n})\nfor r in rows:\n    print(r)\n{{'n': {n}}}"
            seq = log.intent(
                Effect(name="cell.run", data={"cell_id": f"c{runs}", "code": code, "timeout_s": 60})
            )
            app = None
            if n % 20 == 0:
                args = {"app": "memory", "method": "search", "args": {"q": "x"}}
                app = _pair(log, "app.call", args, {"hits": []}, parent=seq)
            log.result(seq, "cell.run", _cell(runs, app).to_json())
        _pair(log, "chat.post", {"text": "All done.", "done": True}, "m")


def medians_ms(*fns: Callable[[], object]) -> list[float]:
    """Median wall time of each function over RUNS rounds, interleaved so noise hits all."""
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(RUNS):
        for fn, out in zip(fns, samples, strict=True):
            t0 = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t0) * 1e3)
    return [statistics.median(s) for s in samples]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run_bench.jsonl"
        write_log(path)
        nb = run_notebook(read_log(path))
        text = writes(nb)
        code = sum(1 for c in nb.cells if c.cell_type == "code")
        outputs = sum(len(c.outputs) for c in nb.cells if c.cell_type == "code")
        print(
            f"log {path.stat().st_size / 1e6:.2f} MB -> notebook {len(text) / 1e6:.2f} MB: "
            f"{len(nb.cells)} cells ({code} code, {outputs} outputs); medians of {RUNS}"
        )
        trace = read_log(path)
        read, build, export, bare = medians_ms(
            lambda: read_log(path),
            lambda: run_notebook(trace),
            lambda: writes(run_notebook(read_log(path))),
            lambda: writes(nb),
        )
        print(f"  read_log                          {read:8.1f} ms")
        print(f"  run_notebook (build only)         {build:8.1f} ms")
        print(f"  export: read + build + writes     {export:8.1f} ms")
        print(f"  bare nbformat.writes              {bare:8.1f} ms")
        print(f"  export / bare writes: {export / bare:.2f}x")


if __name__ == "__main__":
    main()
