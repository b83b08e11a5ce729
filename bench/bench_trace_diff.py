"""``trace diff`` of two 1,000-effect logs (issue 31, item 2): the time to read both logs and
diff them, side by side with reading them alone, for identical logs (the whole of both is
compared) and for logs that part at the last effect.

Not a test: ``python bench/bench_trace_diff.py [EFFECTS]`` (default 1,000). The logs are
written as a run writes them: a message, then model calls (a realistic Anthropic request
with a growing conversation) and cells in turn, then ``turn.append``; the second log has
its own ids and times. Prints medians of 20 in ms and the ratio to reading alone.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from jupyter_agent.trace.compare.diff import diff_runs
from jupyter_agent.trace.reader import read_log

SYSTEM = "You are a data analysis agent working in a Jupyter kernel.\n" * 40


def _write(path: Path, effects: int, *, ids: str, last: str) -> None:
    t = f"2026-01-01T00:00:0{ids[-1]}.000Z"
    lines: list[dict[str, Any]] = [{"kind": "header", "run_id": f"run_{ids}", "created": t}]
    talk: list[dict[str, Any]] = [{"role": "user", "content": f"[sent {t}]\nplot the sales"}]
    for seq in range(1, effects + 1):
        if seq == 1:
            name, intent, result = "mailbox.drain", {}, [{"kind": "message", "id": f"msg_{ids}"}]
        elif seq == effects:
            name, intent, result = (
                "turn.append",
                {"id": f"turn_{ids}", "durationMs": seq},
                {"ok": last},
            )
        elif seq % 2 == 0:
            body = {"model": "claude-sonnet-4-5", "system": SYSTEM, "messages": talk[-20:]}
            name, intent = "http.post", {"url": "http://x/v1/messages", "json": body}
            result = {"status": 200, "json": {"id": f"msg_{ids}{seq}", "content": [
                {"type": "text", "text": f"step {seq}"}]}, "attempts": [{"wait_s": 0}]}  # fmt: skip
            talk.append({"role": "assistant", "content": f"step {seq}"})
        else:
            name, intent = "cell.run", {"code": f"df.groupby('k').sum()  # {seq}"}
            result = {"digest": {"text": f"Cell c{seq} (In[{seq}], 0.0{seq % 9}s)\n{seq}"}}
            talk.append({"role": "user", "content": f"Cell c{seq}: {seq}"})
        lines.append({"seq": seq, "phase": "intent", "name": name, "data": intent, "t": t})
        lines.append({"seq": seq, "phase": "result", "name": name, "data": result, "t": t})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _median_ms(fn: Any, repeat: int = 20) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main(effects: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        a, b, c = Path(tmp, "a.jsonl"), Path(tmp, "b.jsonl"), Path(tmp, "c.jsonl")
        _write(a, effects, ids="0123456781", last="same")
        _write(b, effects, ids="ABCDEFGHJ2", last="same")
        _write(c, effects, ids="ABCDEFGHJ3", last="other")
        size = a.stat().st_size / 1e6
        read = _median_ms(lambda: (read_log(a), read_log(b)))
        same = _median_ms(lambda: diff_runs(read_log(a), read_log(b)))
        apart = _median_ms(lambda: diff_runs(read_log(a), read_log(c)))
        assert diff_runs(read_log(a), read_log(b))["identical"]
        assert diff_runs(read_log(a), read_log(c))["divergence"]["index"] == effects - 1
    print(f"two logs of {effects:,} effects ({size:.1f} MB each), medians of 20:")
    print(f"  read both alone           {read:8.1f} ms")
    print(f"  read + diff, identical    {same:8.1f} ms  ({same / read:.2f}x reading)")
    print(f"  read + diff, part at last {apart:8.1f} ms  ({apart / read:.2f}x reading)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
