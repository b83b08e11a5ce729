"""Effect log costs: one intent+result pair with and without fsync, and read_log of 10k lines.

Run: ``python bench/bench_log.py``. Prints medians (and p99) in microseconds; compare the
ratios measured side by side, not absolute figures (shared machines are noisy).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from jupyter_agent.effects import Effect
from jupyter_agent.trace.log import PROGRAM, EffectLog, read_log

HEADER = {"run_id": "run_bench", "chat_id": "chat_bench", "program": PROGRAM, "created": "x"}
INSIDE = Effect(name="config.get", data={"key": "llm.tier.codegen"})
OUTSIDE = Effect(name="cell.run", data={"cell_id": "c1", "code": "x = 1\n" * 10, "timeout_s": 60})
RESULT = {"prints": [{"text": "1" * 200, "chars": 200}], "last": None, "duration_s": 0.003}


def pair_costs(folder: Path, effect: Effect, n: int) -> list[float]:
    out: list[float] = []
    with EffectLog.create(folder / f"{effect.name}.jsonl", HEADER) as log:
        for _ in range(n):
            t0 = time.perf_counter()
            seq = log.intent(effect)
            log.result(seq, effect.name, RESULT)
            out.append((time.perf_counter() - t0) * 1e6)
    return out


def show(label: str, samples: list[float]) -> float:
    med = statistics.median(samples)
    p99 = sorted(samples)[int(len(samples) * 0.99) - 1]
    print(f"{label:<44} median {med:9.1f} us   p99 {p99:9.1f} us")
    return med


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        no_sync = show("intent+result, in-process (no fsync)", pair_costs(folder, INSIDE, 5000))
        synced = show("intent+result, outside effect (fsync)", pair_costs(folder, OUTSIDE, 500))
        print(f"fsync pair / plain pair: {synced / no_sync:.1f}x")

        big = folder / "big.jsonl"
        with EffectLog.create(big, HEADER) as log:
            for _ in range(5000):
                seq = log.intent(INSIDE)
                log.result(seq, INSIDE.name, RESULT)
        reads = []
        for _ in range(7):
            t0 = time.perf_counter()
            trace = read_log(big)
            reads.append((time.perf_counter() - t0) * 1e3)
        assert len(trace.lines) == 10000
        size = big.stat().st_size / 1e6
        print(f"read_log 10k lines ({size:.1f} MB): median {statistics.median(reads):.1f} ms")


if __name__ == "__main__":
    main()
