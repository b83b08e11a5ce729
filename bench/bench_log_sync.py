"""Effect log sync policies side by side: what writing a run's lines costs the run.

Run: ``python bench/bench_log_sync.py``. For ``effect`` (fdatasync before every outside
effect) and ``group`` (the background syncer, default 200 ms), prints the median and p99
cost of one outside effect's intent + result on the writer's path in microseconds, and the
wall time of a whole fake run's lines (its effects take no time of their own), with the
fdatasyncs each policy did. Compare the ratios, not absolute figures (shared machines).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from jupyter_agent.effects import Effect
from jupyter_agent.trace.log import PROGRAM, EffectLog, GroupSyncer

HEADER = {"run_id": "run_bench", "chat_id": "chat_bench", "program": PROGRAM, "created": "x"}
CELL = Effect(name="cell.run", data={"cell_id": "c1", "code": "x = 1\n" * 10, "timeout_s": 60})
RESULT = {"prints": [{"text": "1" * 200, "chars": 200}], "last": None, "duration_s": 0.003}
# One fake run: per step config + clock, a model call, a cell, a bubble; then the end.
STEP = [
    Effect(name="config.get", data={"key": "llm.tier.codegen"}),
    Effect(name="clock.now", data={}),
    Effect(name="http.post", data={"url": "http://127.0.0.1:1/v1/messages", "json": {}}),
    CELL,
    Effect(name="chat.post", data={"text": "step", "done": False}),
]
END = [
    Effect(name="chat.post", data={"text": "done", "done": True}),
    Effect(name="turn.append", data={"id": "t"}),
]
STEPS = 20
INTERVAL_MS = 200


def pair_costs(folder: Path, syncer: GroupSyncer | None, n: int) -> list[float]:
    out: list[float] = []
    with EffectLog.create(
        folder / f"pairs-{time.monotonic_ns()}.jsonl", HEADER, syncer=syncer
    ) as log:
        for _ in range(n):
            t0 = time.perf_counter()
            seq = log.intent(CELL)
            log.result(seq, CELL.name, RESULT)
            out.append((time.perf_counter() - t0) * 1e6)
    return out


def fake_run(folder: Path, syncer: GroupSyncer | None) -> float:
    """Wall ms of one run's lines, from the log's creation to its close (both synced)."""
    t0 = time.perf_counter()
    log = EffectLog.create(folder / f"run-{time.monotonic_ns()}.jsonl", HEADER, syncer=syncer)
    for effect in [*STEP * STEPS, *END]:
        seq = log.intent(effect)
        log.result(seq, effect.name, RESULT)
    log.close()
    return (time.perf_counter() - t0) * 1e3


def main() -> None:
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        folder = Path(tmp)
        print(f"{'policy':<8} {'pair median':>12} {'pair p99':>10} {'fake run':>10} {'rounds':>7}")
        medians: dict[str, float] = {}
        runs: dict[str, float] = {}
        for policy in ("effect", "group"):
            syncer = GroupSyncer(INTERVAL_MS) if policy == "group" else None
            pairs = pair_costs(folder, syncer, 300 if policy == "effect" else 3000)
            walls = [fake_run(folder, syncer) for _ in range(7)]
            rounds = syncer.rounds if syncer else 0
            if syncer is not None:
                syncer.close()
            medians[policy] = statistics.median(pairs)
            runs[policy] = statistics.median(walls)
            p99 = sorted(pairs)[int(len(pairs) * 0.99) - 1]
            print(
                f"{policy:<8} {medians[policy]:9.1f} us {p99:7.1f} us"
                f" {runs[policy]:7.1f} ms {rounds:7d}"
            )
        n = STEPS * len(STEP) + len(END)
        print(
            f"per outside effect: effect/group {medians['effect'] / medians['group']:.0f}x;"
            f" a {n}-effect run's lines: {runs['effect']:.1f} ms vs {runs['group']:.1f} ms"
        )


if __name__ == "__main__":
    main()
