"""The window at decreasing resolution (issue 14): prompt build time and prompt tokens as a
chat grows, and the prompt-cache read ratio through real runs, side by side in one run.

1. Prompt build per turn at 10, 100, 1,000 and 10,000 turns in one chat (real SQLite
   store; level-1 summaries for every closed chunk and level-2 for every closed run of
   them, inserted through ``Store.add_chunk``): ``read_anchored`` (the driver's history
   read), ``boot_window`` (the loop's window) and the Anthropic adapter's request body,
   median ms; and the prompt's tokens (the request JSON / 4, what the fake reports as
   input), for the default budget (50,000 tokens) and a small one. Goal: flat once the
   window is full, 10,000 / 100 <= 1.5x.
2. Cache reads over a 50-turn chat through real runs (run manager, driver, SQLite, a real
   kernel, the fake model with ``prefix_cache``), ``chunk_turns`` 5, a small budget so the
   window rolls over; a chunk's level-1 summary is stored as soon as it closes (what
   ``history@v1`` does in the background). cache_read / input tokens on turns that do
   not roll a chunk (goal >= 80%) and on those that do (the anchor moved).
3. Time from a turn's end to its chunk's summary: the real scheduler and a ``history@v1``
   run against a loopback fake, median/p90/max over 20 chunks.

    python bench/bench_history.py [--turns 50]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

COUNTS = (10, 100, 1_000, 10_000)
BUDGETS = (50_000, 4_000)
LAYOUT = {"chunk_turns": 10, "l2_chunks": 5}
REPLY = (
    "Here is what the data shows: the mean is 4.2, the spread is small, and the outliers "
    "are in March. Shall I plot it?"
)
SUMMARY = (
    "The person loads sales.csv (columns region, month, units, price); mean units 4.2; "
    "outliers in March in region North; they decided to drop rows with price 0 and asked "
    "for a monthly plot; open question: whether returns count as sales."
)
SYSTEM = "You are the agent of this Jupyter server.\n" + "Rules and context. " * 300


def _created(n: int) -> str:
    return f"2025-01-01T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z"


def fill(store: Any, chat: str, count: int) -> None:
    """``count`` turns, and the summaries of every closed chunk (level 1 and level 2)."""
    from jupyter_agent.core.history.chunks import StoredChunk, closed_spans
    from jupyter_agent.core.turns import Reply, TurnLLM, TurnRecord

    store.create_chat(chat_id=chat, title="bench", now=_created(0))
    for n in range(1, count + 1):
        store.append_turn(
            TurnRecord(
                id=f"turn_{n:06d}",
                chat_id=chat,
                run_id=f"run_{n:06d}",
                user_text=f"Message {n}: what does column {n} tell us?",
                created=_created(n),
                replies=(Reply(text=REPLY, done=True),),
                model="claude-sonnet-4-5",
                llm=TurnLLM(stop_reason="done", end_cause="done", model_calls=1),
            )
        )
    have: set[tuple[int, int]] = set()
    while spans := closed_spans(count, LAYOUT["chunk_turns"], LAYOUT["l2_chunks"], have):
        for span in spans:
            store.add_chunk(
                StoredChunk(
                    chat_id=chat,
                    level=span.level,
                    first_turn=span.first_turn,
                    last_turn=span.last_turn,
                    text=SUMMARY,
                    run_id="run_summary",
                    model="claude-haiku-4-5",
                    created=_created(span.last_turn),
                )
            )
            have.add((span.level, span.first_turn))


def build_prompt(store: Any, chat: str, budget: int, tier: Any) -> tuple[dict[str, Any], Any]:
    """What a turn's first model call costs to build: (request body, window)."""
    from jupyter_agent.core.history.window import boot_window
    from jupyter_agent.llm.chat import build_request
    from jupyter_agent.llm.spec import RequestParams
    from jupyter_agent.messages import Message, Text
    from jupyter_agent.runtime.runs.parts import read_anchored
    from jupyter_agent.tools import BASH, RUN_CELL

    window = read_anchored(store, chat, budget, dict(LAYOUT))
    shown = boot_window(
        list(window.turns),
        budget_tokens=budget,
        older=window.omitted,
        first_position=window.omitted + 1,
        chunks=window.chunks,
        chunk_turns=LAYOUT["chunk_turns"],
        anchor_at=window.anchor,
    )
    ask = Message(role="user", parts=(Text(text="And the mean by region?"),))
    params = RequestParams(
        messages=[*shown.messages, ask],
        system=SYSTEM,
        tier=tier,
        tools=(RUN_CELL, BASH),
        history=len(shown.messages),
    )
    return build_request(params).json, shown


def prompt_table(tmp: Path) -> None:
    from jupyter_agent.llm.tiers import tier_from_config
    from jupyter_agent.store.repo import Store

    tier = tier_from_config(
        "codegen", {"provider": "anthropic", "model": "claude-sonnet-4-5", "api_key_ref": "env:K"}
    )
    rows: dict[tuple[int, int], tuple[float, int, Any]] = {}
    for count in COUNTS:
        t0 = time.perf_counter()
        store = Store(f"sqlite:///{tmp / f'chat-{count}.sqlite'}")
        fill(store, "chat_B", count)
        print(f"  (filled {count} turns in {time.perf_counter() - t0:.1f} s)", file=sys.stderr)
        for budget in BUDGETS:
            build_prompt(store, "chat_B", budget, tier)  # warm
            times = []
            for _ in range(9):
                t1 = time.perf_counter()
                body, shown = build_prompt(store, "chat_B", budget, tier)
                json.dumps(body)
                times.append(time.perf_counter() - t1)
            tokens = math.ceil(len(json.dumps(body)) / 4)
            rows[count, budget] = (statistics.median(times) * 1000, tokens, shown)
        store.close()
    print("prompt build per turn: read_anchored + boot_window + Anthropic body (median of 9)")
    print(
        f"{'turns':>6} {'budget':>7} {'build ms':>9} {'prompt tok':>11}"
        f" {'raw':>5} {'L1':>4} {'L2':>4} {'omitted':>8} {'window tok':>11}"
    )
    for (count, budget), (ms, tokens, w) in sorted(rows.items(), key=lambda r: (r[0][1], r[0][0])):
        print(
            f"{count:6d} {budget:7d} {ms:9.2f} {tokens:11d}"
            f" {w.turns_included:5d} {w.l1:4d} {w.l2:4d} {w.omitted:8d} {w.tokens:11d}"
        )
    for budget in BUDGETS:
        (ms1, tok1, _), (ms2, tok2, _) = rows[100, budget], rows[10_000, budget]
        print(
            f"budget {budget}: 10,000 / 100 turns: build time {ms2 / ms1:.2f}x,"
            f" prompt tokens {tok2 / tok1:.2f}x (goal <= 1.5x)"
        )


async def cache_runs(tmp: Path, turns: int) -> None:
    from jupyter_client.multikernelmanager import AsyncMultiKernelManager

    from jupyter_agent.cli.main import install_kernelspec
    from jupyter_agent.core.history.chunks import StoredChunk, closed_spans
    from jupyter_agent.llm.fake.server import FakeProvider
    from tests.runtime.harness import close_harness, make_harness

    os.environ["JUPYTER_DATA_DIR"] = str(tmp / "jdata")
    install_kernelspec(user=True)
    km = AsyncMultiKernelManager()
    fake = FakeProvider({"steps": [{"text": REPLY}], "repeat": True}, prefix_cache=True).start()
    root = tmp / "runs"
    root.mkdir()
    harness = await make_harness(root, fake, km)
    budget, layout = 1_500, {"chunk_turns": 5, "l2_chunks": 5}
    harness.ceilings = {"history_budget_tokens": budget}
    harness.history_layout = layout
    records = []
    try:
        chat = harness.new_chat()
        have: set[tuple[int, int]] = set()
        for n in range(1, turns + 1):
            records.append(await harness.ask(chat, f"Message {n}: what does column {n} say?"))
            for span in closed_spans(n, layout["chunk_turns"], layout["l2_chunks"], have):
                harness.store.add_chunk(
                    StoredChunk(
                        chat_id=chat,
                        level=span.level,
                        first_turn=span.first_turn,
                        last_turn=span.last_turn,
                        text=SUMMARY,
                        run_id="run_summary",
                        model=None,
                        created=records[-1].created,
                    )
                )
                have.add((span.level, span.first_turn))
    finally:
        await close_harness(harness)
        fake.stop()
        await km.shutdown_all(now=True)
    steady = [0, 0]  # cache read, input (read + not read)
    rolled = [0, 0]
    rolls = 0
    for prev, turn in itertools.pairwise(records):
        u, w, p = turn.llm.usage, turn.llm.window, prev.llm.window
        assert w is not None
        assert p is not None
        roll = w.raw <= p.raw  # the anchor moved to a later chunk boundary
        rolls += roll
        into = rolled if roll else steady
        into[0] += u.cache_read_tokens
        into[1] += u.input_tokens + u.cache_read_tokens
    print()
    print(
        f"cache reads over a {turns}-turn chat (real runs, prefix-caching fake,"
        f" chunk_turns {layout['chunk_turns']}, budget {budget}); turns 2..{turns}"
    )
    for name, (read, total), n in (
        ("no roll-over", steady, turns - 1 - rolls),
        ("roll-over", rolled, rolls),
    ):
        share = read / total if total else float("nan")
        print(f"  {name:13} {n:3d} turns: {read:7d} / {total:7d} input tokens read = {share:.1%}")
    last = records[-1].llm.window
    print(f"  last turn's window: {last.to_json() if last else None}")


async def summary_latency(tmp: Path, samples: int = 20) -> None:
    """Time from a turn's end (the turn that closes a chunk is stored and the scheduler
    kicked, as the run manager does) to its chunk's level-1 summary being stored, through
    the real scheduler, a history@v1 run and a loopback fake."""
    from jupyter_agent.core.turns import Reply, TurnLLM, TurnRecord
    from jupyter_agent.llm.fake.server import FakeProvider
    from jupyter_agent.llm.transport import Transport
    from jupyter_agent.runtime.history.jobs import HistoryScheduler
    from jupyter_agent.runtime.runs.parts import RunConfig
    from jupyter_agent.runtime.settings.spaces import load_spaces
    from jupyter_agent.store import Store

    fake = FakeProvider({"steps": [{"text": "- a summary"}], "repeat": True}).start()
    store = Store(f"sqlite:///{tmp / 'latency.sqlite'}")
    spaces = load_spaces(data_dir=tmp / "data", root_dir=tmp)
    tier = {"provider": "fake", "model": "claude-haiku-4-5", "base_url": fake.base_url}
    scheduler = HistoryScheduler(
        store=store,
        transport=Transport(retry_after_cap_s=1),
        run_config=lambda: RunConfig(
            tiers={"codegen": tier, "classify": tier}, ceilings={}, spaces=spaces
        ),
        runs_dir=tmp / "latency-runs",
        chunk_turns=5,
        l2_chunks=1000,  # level 1 only: one summary per closed chunk
    )
    store.create_chat(chat_id="chat_latency", title="t", now=_created(0))
    times = []
    try:
        for n in range(1, samples * 5 + 1):
            store.append_turn(
                TurnRecord(
                    id=f"turn_{n:06d}", chat_id="chat_latency", run_id=f"run_{n:06d}",
                    user_text=f"message {n}", replies=(Reply(text=f"reply {n}", done=True),),
                    created=_created(n), llm=TurnLLM(stop_reason="done", end_cause="done"),
                )
            )  # fmt: skip
            start = time.perf_counter()
            scheduler.kick("chat_latency")
            if n % 5 == 0:
                while len(store.list_chunks("chat_latency")) < n // 5:
                    await asyncio.sleep(0.001)
                times.append(time.perf_counter() - start)
        await scheduler.idle()
    finally:
        await scheduler.stop()
        await scheduler.transport.aclose()
        store.close()
        fake.stop()
    ms = sorted(t * 1e3 for t in times)
    print(
        f"turn end -> its chunk's summary stored ({len(ms)} chunks, loopback fake): median "
        f"{statistics.median(ms):.1f} ms, p90 {ms[int(0.9 * (len(ms) - 1))]:.1f} ms, "
        f"max {ms[-1]:.1f} ms"
    )


def main(turns: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-history14-"))
    prompt_table(tmp)
    asyncio.run(cache_runs(tmp, turns))
    asyncio.run(summary_latency(tmp))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=50)
    args = parser.parse_args()
    main(args.turns)
