"""Eval throughput (issue 31, item 4): cases per minute with the fake, a pool of 4, beside
the same messages sent as ordinary chat turns, in one run.

Not a test: ``python bench/bench_eval.py [REPEATS]`` (default 5). A real ``jupyter server``
with the agent on the fake provider (loopback, answering at once, playing
``examples/eval/fake-script.json``) and a warm pool of 4 kernels; the suite is
``examples/eval`` (4 cases), run ``REPEATS`` times per case at a concurrency of 4
(``POST agent/evals``, polled to its end, checks and report included). The floor: the
same 4 x REPEATS messages as chat turns, 4 chats at once (each turn to its ``run_end``).
Prints both rates and their ratio.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_hot_path import Agent

from jupyter_agent.llm.fake.server import FakeProvider

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "eval"
MESSAGES = [
    "Total revenue: what is the total revenue in suite/sales.csv?",
    "Best region: which region sold the most units in suite/sales.csv?",
    "Monthly revenue: write the revenue per month of suite/sales.csv to monthly.csv.",
    "Mean temperature: what is the mean temperature in suite/weather.csv?",
]


def _eval(agent: Agent, repeats: int) -> tuple[float, int, int]:
    client = agent.client
    assert client is not None
    start = time.perf_counter()
    body = {"suite": "suite", "repeats": repeats, "concurrency": 4}
    state = client.post("agent/evals", json=body).json()
    while state["status"] != "done":
        time.sleep(0.05)
        state = client.get(f"agent/evals/{state['eval_id']}").json()
    return time.perf_counter() - start, state["passed"], state["total"]


def _chats(agent: Agent, repeats: int) -> float:
    chats = [agent.chat() for _ in range(4)]
    start = time.perf_counter()

    def one(chat_id: str, text: str) -> None:
        for _ in range(repeats):
            agent.turn(chat_id, text)

    pairs = zip(chats, MESSAGES, strict=True)
    threads = [threading.Thread(target=one, args=pair) for pair in pairs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - start


def main(repeats: int) -> None:
    with FakeProvider([]) as fake, tempfile.TemporaryDirectory() as tmp:
        agent = Agent(Path(tmp), fake, {"KernelPool": {"size": 4}})
        agent.start()
        shutil.copytree(EXAMPLE, agent.server.base / "root" / "suite")
        fake.load(json.loads((EXAMPLE / "fake-script.json").read_text()))
        try:
            _eval(agent, 1)  # warm: imports, the pool refilled once
            eval_s, passed, total = _eval(agent, repeats)
            chat_s = _chats(agent, repeats)
        finally:
            agent.stop()
    cases = 4 * repeats
    eval_rate, chat_rate = cases / eval_s * 60, cases / chat_s * 60
    print(f"eval:  {total} case runs ({passed} passed) in {eval_s:.2f} s = {eval_rate:.0f}/min")
    print(f"chats: {cases} turns, 4 chats at once, in {chat_s:.2f} s = {chat_rate:.0f}/min")
    print(f"eval throughput / chat-turn throughput: {eval_rate / chat_rate:.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
