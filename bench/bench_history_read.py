"""The history a run reads, before (``toolcaller@v2``: the whole chat) and after
(``toolcaller@v3``: the window), side by side in one run (issue 13, item 3).

1. One chat of ``--messages`` messages through the real run path (in-process run manager,
   fake model on loopback, SQLite store, chat-only turns), once per program: the run's
   wall time at message 1 and at the last (mean of 5 around each), and the run's effect
   log size at message 1, 10 and the last; for the default budget and a small one.
2. The history read alone (what the driver does for the effect, plus the log line's JSON)
   on a chat of 10, 100 and 1,000 turns: ``list_turns`` (v2) against
   ``read_anchored`` (v3, the driver's read of the window).

    python bench/bench_history_read.py [--messages 100]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PROGRAMS = ("toolcaller@v2", "toolcaller@v3")
DEFAULT_BUDGET = 50_000  # Ceilings.history_budget_tokens
SMALL_BUDGET = 2_000
REPLY = (
    "Here is what the data shows: the mean is 4.2, the spread is small, and the outliers "
    "are in March. Shall I plot it?"
)


async def chat_runs(km: Any, tmp: Path, program: str, budget: int, messages: int) -> dict[str, Any]:
    """Send ``messages`` messages to one chat with ``program``: wall times and log sizes."""
    from jupyter_agent.llm.fake.server import FakeProvider
    from jupyter_agent.runtime.runs import opening as run_opening
    from tests.runtime.harness import close_harness, make_harness

    run_opening.PROGRAM = program  # what the run's header, summary and driver use
    fake = FakeProvider({"steps": [{"text": REPLY}], "repeat": True}).start()
    root = tmp / f"{program.replace('@', '-')}-{budget}"
    root.mkdir()
    harness = await make_harness(root, fake, km)
    harness.ceilings = {"history_budget_tokens": budget}
    try:
        chat = harness.new_chat()
        walls: list[float] = []
        sizes: list[int] = []
        for n in range(1, messages + 1):
            t0 = time.perf_counter()
            turn = await harness.ask(chat, f"Message {n}: what does column {n} tell us?")
            walls.append(time.perf_counter() - t0)
            sizes.append(harness.manager.log_path(turn.run_id).stat().st_size)
    finally:
        await close_harness(harness)
        fake.stop()
    return {"walls": walls, "sizes": sizes}


def read_times(
    tmp: Path, counts: tuple[int, ...]
) -> list[tuple[int, float, float, float, int, int]]:
    """(turns, v2 ms, v3 ms default budget, v3 ms small budget, v2 bytes, v3 bytes)."""
    from jupyter_agent.core.turns import Reply, TurnLLM, TurnRecord
    from jupyter_agent.messages import Usage
    from jupyter_agent.runtime.runs.parts import read_anchored
    from jupyter_agent.store.repo import Store

    rows = []
    for count in counts:
        store = Store(f"sqlite:///{tmp / f'read-{count}.sqlite'}")
        store.create_chat(chat_id="chat_B", title="bench", now="2025-01-01T00:00:00.000Z")
        for n in range(count):
            store.append_turn(
                TurnRecord(
                    id=f"turn_{n:06d}",
                    chat_id="chat_B",
                    run_id=f"run_{n:06d}",
                    user_text=f"Message {n}: what does column {n} tell us?",
                    created=f"2025-01-01T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
                    replies=(Reply(text=REPLY, done=True),),
                    model="claude-sonnet-4-5",
                    llm=TurnLLM(
                        stop_reason="done",
                        end_cause="done",
                        model_calls=1,
                        usage=Usage(input_tokens=900, output_tokens=60),
                        fingerprints={"system": "0" * 16, "identity": "1" * 16},
                    ),
                )
            )

        def v2(store: Store = store) -> str:
            return json.dumps([t.to_json() for t in store.list_turns("chat_B")])

        def v3(budget: int, store: Store = store) -> str:
            window = read_anchored(store, "chat_B", budget, {"chunk_turns": 10, "l2_chunks": 5})
            return json.dumps(window.to_json())

        rows.append(
            (
                count,
                _time(v2),
                _time(lambda: v3(DEFAULT_BUDGET)),
                _time(lambda: v3(SMALL_BUDGET)),
                len(v2()),
                len(v3(DEFAULT_BUDGET)),
            )
        )
        store.close()
    return rows


def _time(fn: Any, repeat: int = 15) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


async def main(messages: int) -> None:
    from jupyter_client.multikernelmanager import AsyncMultiKernelManager

    from jupyter_agent.cli.main import install_kernelspec

    tmp = Path(tempfile.mkdtemp(prefix="bench-history-"))
    os.environ["JUPYTER_DATA_DIR"] = str(tmp / "jdata")
    install_kernelspec(user=True)
    km = AsyncMultiKernelManager()
    results: dict[tuple[str, int], dict[str, Any]] = {}
    try:
        for budget in (DEFAULT_BUDGET, SMALL_BUDGET):
            for program in PROGRAMS:
                results[program, budget] = await chat_runs(km, tmp, program, budget, messages)
    finally:
        await km.shutdown_all(now=True)

    last = messages
    print(f"one chat of {messages} chat-only messages (fake model on loopback, SQLite)")
    print(
        f"{'program':15} {'budget':>7} {'msg 1 ms':>9} {f'msg {last} ms':>10} {'ratio':>6}"
        f" {'log@1 B':>9} {'log@10 B':>9} {f'log@{last} B':>10} {'all logs':>10}"
    )
    for (program, budget), r in results.items():
        walls, sizes = r["walls"], r["sizes"]
        first = statistics.mean(walls[1:6])  # message 1 itself warms the connection up
        tail = statistics.mean(walls[-5:])
        print(
            f"{program:15} {budget:>7} {first * 1000:9.1f} {tail * 1000:10.1f}"
            f" {tail / first:6.2f} {sizes[0]:9d} {sizes[min(9, last - 1)]:9d} {sizes[-1]:10d}"
            f" {sum(sizes):10d}"
        )
    print("(msg 1 / msg N: mean wall time of messages 2-6 / the last 5)")
    print()
    print("history read alone (store query + JSON of the log line), median")
    print(
        f"{'turns':>6} {'v2 list_turns':>14} {'v3 window 50k':>14} {'v3 window 2k':>13}"
        f" {'v2 bytes':>10} {'v3 bytes 50k':>13}"
    )
    for count, t2, t3, t3s, b2, b3 in read_times(tmp, (10, 100, 1000)):
        print(f"{count:6d} {t2:11.2f} ms {t3:11.2f} ms {t3s:10.2f} ms {b2:10d} {b3:13d}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=100)
    args = parser.parse_args()
    asyncio.run(main(args.messages))
