"""Inline completion latency (issue 29, item 1): what ``POST agent/complete`` adds over the
model's own time, measured side by side in one run.

Not a test: ``python bench/bench_complete.py [N]`` (default 200). A real ``jupyter server``
with the agent on the fake provider (loopback, answering at once, streamed as the server
asks); the floor is the same streamed request made by hand to the fake; the server's
request carries a notebook path (its cells read for the prompt). Prints the median and the
p99 of each, and the difference (goal: a median under 10 ms added).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_hot_path import MODEL, Agent

from jupyter_agent.llm.fake.server import FakeProvider

BODY = {"model": MODEL, "max_tokens": 256, "stream": True, "system": "complete",
        "messages": [{"role": "user", "content": "total = <CURSOR>"}]}  # fmt: skip


def _stats(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered) * 1000, ordered[int(len(ordered) * 0.99) - 1] * 1000


def main(n: int) -> None:
    with FakeProvider([]) as fake, tempfile.TemporaryDirectory() as tmp:
        fake.load({"steps": [{"text": "sum(values)"}], "repeat": True})
        agent = Agent(Path(tmp), fake, {})
        path = Path(tmp) / "config" / "jupyter_server_config.json"
        config = json.loads(path.read_text())
        config["JupyterAgent"]["complete_rate"] = 100_000
        path.write_text(json.dumps(config))
        agent.start()
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("values = list(range(10))", id="a"),
                    nbformat.v4.new_code_cell("", id="b")]  # fmt: skip
        nbformat.write(nb, agent.server.base / "root" / "b.ipynb")
        client = agent.client
        assert client is not None
        body = {"path": "b.ipynb", "cell_id": "b", "prefix": "total = ", "suffix": "",
                "language": "python"}  # fmt: skip
        direct, served = [], []
        with httpx.Client(trust_env=False) as http:
            for i in range(n + 20):
                start = time.perf_counter()
                with http.stream("POST", fake.base_url + "/v1/messages", json=BODY) as r:
                    r.read()
                floor = time.perf_counter() - start
                start = time.perf_counter()
                answer = client.post("agent/complete", json=body)
                took = time.perf_counter() - start
                assert answer.status_code == 200, answer.text
                assert answer.text.rstrip().endswith("}"), answer.text
                if i >= 20:  # warm-up
                    direct.append(floor)
                    served.append(took)
        agent.stop()
    (fm, fp), (sm, sp) = _stats(direct), _stats(served)
    print(f"{n} completions, medians and p99 in ms:")
    print(f"  the fake alone (the floor)   median {fm:6.2f}   p99 {fp:6.2f}")
    print(f"  POST agent/complete          median {sm:6.2f}   p99 {sp:6.2f}")
    print(f"  added by the server          median {sm - fm:6.2f}   p99 {sp - fp:6.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
