"""``notebook.variables()`` on the person's kernel vs a bare ``%who`` over jupyter_client.

Not a test: ``python bench/bench_person_kernel.py [N]``. One real ipykernel (the
person's) holds 200 variables, 20 of them DataFrames (1,000 x 8), 20 ndarrays, lists,
dicts and scalars. In one run and interleaved (floor, look, floor, look, ...):

- **floor**: a bare ``execute("%who")`` on a jupyter_client AsyncKernelClient kept open,
  waiting for the reply (what the cheapest "which names exist" costs);
- **look**: :meth:`~jupyter_agent.runtime.notebook.person_kernels.PersonKernels.look`
  ``variables``: the production path (a client of its own per look, the silent execute with
  the summariser, its JSON parsed), names, types and shapes within the budget.

Prints medians and p99 (ms), the ratio, and the tokens of each answer (the look's text as
the model reads it, and ``%who``'s output).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from typing import Any

from jupyter_client.manager import AsyncKernelManager

from jupyter_agent.core.tokens import count_tokens
from jupyter_agent.kernel.person_values import KernelVariables
from jupyter_agent.runtime.notebook.person_kernels import PersonKernel, PersonKernels

SETUP = """
import numpy as np, pandas as pd
for i in range(20):
    globals()[f"frame_{i}"] = pd.DataFrame(np.random.rand(1000, 8), columns=list("abcdefgh"))
    globals()[f"array_{i}"] = np.zeros((64, 64), dtype="float32")
for i in range(60):
    globals()[f"items_{i}"] = list(range(i))
    globals()[f"table_{i}"] = {"k": i}
for i in range(40):
    globals()[f"value_{i}"] = i * 1.5
"""


class _One:
    """A kernel manager lending its one kernel the way the server's mapping one does."""

    def __init__(self, km: AsyncKernelManager) -> None:
        self.km = km

    def get_kernel(self, kernel_id: str) -> AsyncKernelManager:
        return self.km


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


async def _who(client: Any) -> tuple[float, str]:
    started = time.perf_counter()
    msg_id = client.execute("%who", store_history=False)
    text = ""
    while True:
        msg = await client.get_iopub_msg(timeout=30)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            text += msg["content"]["text"]
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    return (time.perf_counter() - started) * 1000, text


async def main(n: int) -> None:
    km = AsyncKernelManager(kernel_name="python3")
    await km.start_kernel()
    client = km.client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=60)
        await client.execute(SETUP, reply=True, timeout=120)
        kernels = PersonKernels(
            kernel_manager=_One(km), session_manager=None, kernel_specs=None, owners=None
        )
        person = PersonKernel(
            path="bench.ipynb", kernel_id="k", session_id="s", name="python3",
            language="python", execution_state="idle", idle_s=0.0,
        )  # fmt: skip
        floor: list[float] = []
        look: list[float] = []
        who_text, value = "", None
        await _who(client)  # warm both paths once
        await kernels.look(person, "variables", {"budget": 6000})
        for _ in range(n):
            took, who_text = await _who(client)
            floor.append(took)
            started = time.perf_counter()
            value = await kernels.look(person, "variables", {"budget": 6000})
            look.append((time.perf_counter() - started) * 1000)
        text = repr(KernelVariables({"path": "bench.ipynb", "kernel": "python3", **value}))
        floor_ms, look_ms = statistics.median(floor), statistics.median(look)
        print(f"notebook.variables() on 200 variables (20 DataFrames), N={n}")
        print(
            f"  floor %who         median {floor_ms:7.2f} ms  p99 {_p99(floor):7.2f} ms"
            f"  tokens {count_tokens(who_text)}"
        )
        print(
            f"  notebook.variables median {look_ms:7.2f} ms  p99 {_p99(look):7.2f} ms"
            f"  tokens {count_tokens(text)}"
        )
        print(f"  ratio (medians)    {look_ms / floor_ms:.2f}x the floor")
        print(f"  listed {len(value['variables'])} of {value['total']} (cut {value['cut']})")
    finally:
        client.stop_channels()
        await km.shutdown_kernel(now=True)


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20))
