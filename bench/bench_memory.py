"""Flat memory (issue 27, item 7): the server's RSS and Python heap after 100 runs and after
1,000 more, and where the heap grew between them.

Not a test: ``python bench/bench_memory.py [RUNS] [--trace | --tb]`` (default 1,000;
untraced: the RSS only; ``--trace``: where the heap grew; ``--tb``: 25 frames per
allocation and the tracebacks of the 8 biggest growths; ``--holders``: what refers to the
live objects whose count grew most). A real ``jupyter
server`` with the agent on the loopback fake provider (chat-only turns, 50 chats, some
deleted and made again as people do), started with the bench's
own extension (:mod:`bench_tracemalloc_ext`), which starts tracing after the warm-up (100
runs) and snapshots the heap then and after RUNS more. Prints the RSS at both (the second
includes tracing's own memory: an upper bound; goal: within 5 MB) and the 25 source lines
whose live allocations grew most between the two snapshots.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_hot_path import CHAT, Agent, _rss_kb

from jupyter_agent.llm.fake.server import FakeProvider


def _db_kb(base: Path) -> int:
    """The SQLite files' size (what the connections' page caches can fill with)."""
    return sum(p.stat().st_size for p in base.rglob("*.sqlite*")) // 1024


def _threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def main(runs: int, tracing: bool) -> None:
    fake = FakeProvider([])
    fake.start()
    base = Path(tempfile.mkdtemp(prefix="bench-memory-"))
    extensions = {"jupyter_agent": True, "bench_tracemalloc_ext": True}
    extra = {"ServerApp": {"jpserver_extensions": extensions}}
    agent = Agent(base, fake, extra)
    here = str(Path(__file__).resolve().parent)
    env = agent.server.env
    env["PYTHONPATH"] = here + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        agent.start()
        assert agent.client is not None
        assert agent.server.proc is not None
        client, pid = agent.client, agent.server.proc.pid
        fake.load({"steps": CHAT, "repeat": True})
        chats = [agent.chat() for _ in range(50)]

        def turns(count: int) -> None:
            for i in range(count):
                agent.turn(chats[i % 50])
                if i % 200 == 199:  # some chats go away, new ones come
                    client.delete(f"agent/chats/{chats[i % 50]}")
                    chats[i % 50] = agent.chat()

        turns(100)
        time.sleep(1.0)
        rss_a = _rss_kb(pid)  # before tracing: its own memory is not the agent's
        db_a, threads_a = _db_kb(base), _threads(pid)
        types_a = client.get("bench/types").json()
        frames = "25" if "--tb" in sys.argv else "1"
        if tracing:
            client.get("bench/tracemalloc", params={"start": frames}).raise_for_status()
            client.get("bench/tracemalloc", params={"take": "a"}).raise_for_status()
        started = time.perf_counter()
        turns(runs)
        took = time.perf_counter() - started
        time.sleep(1.0)
        rss_b = _rss_kb(pid)  # traced: tracing's own memory included (an upper bound)
        db_b, threads_b = _db_kb(base), _threads(pid)
        types_b = client.get("bench/types").json()
        holders = {}
        timers = client.get("bench/timers").json()
        if "--holders" in sys.argv:  # who holds the live objects that grew most
            grew = sorted(types_b, key=lambda t: types_a.get(t, 0) - types_b[t])
            named = [t for t in grew if not t.startswith("builtins.")][:4]
            for name in [*named, *[t for t in sys.argv if t.startswith("--holders=")]]:
                name = name.removeprefix("--holders=")
                holders[name] = client.get("bench/holders", params={"type": name}).json()
        top = []
        if tracing:
            client.get("bench/tracemalloc", params={"take": "b"}).raise_for_status()
            top = client.get("bench/tracemalloc", params={"diff": "a,b"}).json()
        tracebacks = []
        if "--tb" in sys.argv:
            answer = client.get("bench/tracemalloc", params={"diff": "a,b", "tb": "1"})
            tracebacks = answer.json()
    finally:
        agent.stop()
        fake.stop()
    print(
        f"{runs} runs in {took:.1f} s ({runs / took:.1f} runs/s),"
        f" {'traced' if tracing else 'untraced'}"
    )
    print(f"RSS after 100 runs {rss_a / 1024:.1f} MB, after {runs} more {rss_b / 1024:.1f} MB: "
          f"{(rss_b - rss_a) / 1024:+.1f} MB (goal: within 5 MB)")  # fmt: skip
    print(f"database {db_a / 1024:.1f} MB -> {db_b / 1024:.1f} MB;"
          f" threads {threads_a} -> {threads_b}")  # fmt: skip
    growth = sorted(((n - types_a.get(t, 0), t) for t, n in types_b.items()), reverse=True)
    print("live objects that grew most (type: count):")
    print("  " + ", ".join(f"{t} {d:+d}" for d, t in growth[:12] if d > 0))
    print(f"timers: {timers['cancelled']} cancelled still held; live: {timers['live']}")
    for name, held in holders.items():
        print(f"held: {name} ({held['count']} sampled)")
        for chain in held["chains"]:
            print("    <- " + " <- ".join(chain))
    grown = sum(t["size_kb"] for t in top if t["size_kb"] > 0)
    if tracing:
        print(f"where the heap grew (top 25 lines, {grown / 1024:+.2f} MB in all):")
    for line in top:
        print(f"  {line['size_kb']:+9.1f} KB {line['count']:+7d}  {line['where']}")
    for grown_tb in tracebacks:  # --tb: where the biggest growths were allocated from
        print(f"\n{grown_tb['size_kb']:+.1f} KB allocated at:")
        print("\n".join(grown_tb["frames"][-24:]))
    print(json.dumps({"rss_a_kb": rss_a, "rss_b_kb": rss_b}), file=sys.stderr)


if __name__ == "__main__":
    counts = [a for a in sys.argv[1:] if a.isdigit()]
    main(int(counts[0]) if counts else 1000, tracing="--trace" in sys.argv or "--tb" in sys.argv)
