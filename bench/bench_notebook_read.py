"""``notebook.read`` of a 500-cell notebook vs a bare ``nbformat.read`` (issue 17).

Run: ``python bench/bench_notebook_read.py [--runs 10] [--turns 5]``. The notebook (500
cells: 7 of 10 code, 3 markdown; every code cell a stream and an ``execute_result``, every
10th a 20 KB PNG display, every 25th an error with a traceback, every 50th a 40 KB stream)
is written once in a temp dir. Side by side, medians:

- **(a) host**: what the host does for ``notebook.read`` outside the kernel (the contents
  manager's ``get`` through :class:`~jupyter_agent.runtime.notebook.app.NotebookReader`,
  the scrubber over the cells, :func:`~jupyter_agent.core.notebook.digest.read_cells`: the
  bounded cells and the budgeted digest), and the digest alone, vs a bare
  ``nbformat.read`` of the file;
- **(b) kernel**: an in-process v5 run (the run manager, a real agent kernel, the fake
  model on loopback) whose one cell is ``nb = notebook.read('big.ipynb'); nb`` (the app
  call, its logged result, the kernel's view, the cell's digest), vs the same run whose
  cell reads the file with ``nbformat.read`` in the kernel: the cell's time (its
  ``recorded ``duration_s``) and the whole turn;
- **tokens** (:mod:`jupyter_agent.core.tokens`): the digest the model reads (the app's
  ``tokens`` and the cell's whole digest text) vs the raw notebook JSON.

Compare ratios, not absolute times (2 shared cores).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nbformat  # noqa: E402  (after the path: the bench runs from a clone)
from nbformat.v4 import (  # noqa: E402
    new_code_cell,
    new_markdown_cell,
    new_notebook,
    new_output,
)

CELLS = 500
NAME = "big.ipynb"
PNG = base64.b64encode(os.urandom(15_000)).decode()  # ~20 KB of base64, like a small plot
TRACEBACK = [
    "\x1b[0;31m----------------------------------------------------------------\x1b[0m",
    "\x1b[0;31mValueError\x1b[0m                Traceback (most recent call last)",
    *[f"File <ipython-input-{i}>, line {i}, in f{i}\n    return g{i}(x)" for i in range(12)],
    "\x1b[0;31mValueError\x1b[0m: shapes (3,) and (4,) not aligned",
]
# Each cell times its read itself (the bare one after ``import nbformat``: a fresh kernel
# pays seconds for that import, which notebook.read never needs in the kernel).
READ_CELL = (
    f"import time\nt = time.perf_counter()\nnb = notebook.read({NAME!r})\n"
    "print(time.perf_counter() - t)\nnb"
)
BARE_CELL = (
    f"import time, nbformat\nt = time.perf_counter()\nnb = nbformat.read({NAME!r}, as_version=4)\n"
    "print(time.perf_counter() - t)\nlen(nb.cells)"
)


def make_notebook(path: Path) -> None:
    """The 500-cell notebook (module docstring)."""
    nb = new_notebook()
    cells = []
    for i in range(CELLS):
        if i % 10 in (3, 6, 9):
            text = f"## Step {i}\n\nWe look at the {i}th slice of the data, then plot it."
            cells.append(new_markdown_cell(text, id=f"md{i:04d}"))
            continue
        outputs = [
            new_output("stream", name="stdout", text=f"rows: {i * 37}\nmean: {i / 7:.4f}\n"),
            new_output(
                "execute_result",
                data={"text/plain": f"<DataFrame {i} rows x 8 columns>\n" + "  a  b  c\n" * 5},
                execution_count=i,
            ),
        ]
        if i % 10 == 0:
            outputs.append(
                new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"})
            )
        if i % 25 == 1:
            outputs.append(
                new_output("error", ename="ValueError", evalue="not aligned", traceback=TRACEBACK)
            )
        if i % 50 == 2:
            outputs.append(new_output("stream", name="stdout", text="0123456789 " * 3700))
        source = f"df{i} = load(part={i})\nsummary = df{i}.describe()\nprint(len(df{i}))\nsummary"
        cells.append(new_code_cell(source, id=f"c{i:04d}", execution_count=i, outputs=outputs))
    nb.cells = cells
    nbformat.write(nb, path)


def _med_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def _row(what: str, ours: list[float], bare: list[float]) -> None:
    o, b = _med_ms(ours), _med_ms(bare)
    print(f"{what:<44} {o:9.2f} ms vs {b:9.2f} ms   {o / b if b else float('nan'):6.2f}x")


async def _timed(runs: int, step: Callable[[], Awaitable[Any]]) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        await step()
        out.append(time.perf_counter() - t0)
    return out


async def host_side(root: Path, runs: int) -> dict[str, Any]:
    """(a): the host's read + digest vs a bare ``nbformat.read``, interleaved."""
    from jupyter_server.services.contents.filemanager import AsyncFileContentsManager

    from jupyter_agent.core.notebook.digest import read_cells
    from jupyter_agent.runtime.notebook.app import NotebookReader
    from jupyter_agent.runtime.notebook.contents import Contents
    from jupyter_agent.runtime.secrets import Scrubber

    reader = NotebookReader(Contents(AsyncFileContentsManager(root_dir=str(root))))
    scrubber = Scrubber({"sk-bench-" + "k" * 30: "ANTHROPIC_API_KEY"})
    path = root / NAME
    last: dict[str, Any] = {}

    async def host() -> None:
        read = await reader.read(NAME)

        def digest() -> None:
            last["read"] = read_cells(NAME, scrubber.clean_json(read.cells))

        await asyncio.to_thread(digest)

    async def bare() -> None:
        await asyncio.to_thread(nbformat.read, str(path), as_version=4)

    cells = (await reader.read(NAME)).cells

    async def digest_alone() -> None:
        read_cells(NAME, cells)

    times: dict[str, list[float]] = {"host": [], "bare": [], "digest": []}
    for _ in range(runs):
        times["host"] += await _timed(1, host)
        times["bare"] += await _timed(1, bare)
        times["digest"] += await _timed(1, digest_alone)
    return {**times, "read": last["read"]}


async def kernel_side(root: Path, turns: int) -> dict[str, Any]:
    """(b): a v5 run's ``notebook.read`` cell vs a cell doing ``nbformat.read``."""
    from jupyter_client.multikernelmanager import AsyncMultiKernelManager
    from jupyter_server.services.contents.filemanager import AsyncFileContentsManager

    from jupyter_agent.cli.main import install_kernelspec
    from jupyter_agent.llm.fake.server import FakeProvider
    from jupyter_agent.runtime.notebook.app import NotebookReader
    from jupyter_agent.runtime.notebook.contents import Contents
    from tests.runtime.harness import close_harness, make_harness

    os.environ["JUPYTER_DATA_DIR"] = str(root / "jdata")
    install_kernelspec(user=True)
    km = AsyncMultiKernelManager()
    fake = FakeProvider({"steps": []}).start()
    harness = await make_harness(root, fake, km)
    harness.manager.services.notebooks = NotebookReader(
        Contents(AsyncFileContentsManager(root_dir=str(root)))
    )
    cell_s: dict[str, list[float]] = {"read": [], "bare": []}
    call_s: dict[str, list[float]] = {"read": [], "bare": []}
    turn_s: dict[str, list[float]] = {"read": [], "bare": []}
    digest_text = ""
    app_tokens = 0
    try:
        for i in range(turns + 1):  # the first pair warms the kernel and the imports up
            for kind, code in (("read", READ_CELL), ("bare", BARE_CELL))[:: 1 if i % 2 else -1]:
                harness.fake.load([{"cells": [code]}, {"text": "Done."}])
                chat = harness.new_chat()
                t0 = time.perf_counter()
                turn = await harness.ask(chat, f"read it ({kind} {i})")
                took = time.perf_counter() - t0
                lines = harness.trace(turn.run_id).lines
                result = next(ln for ln in lines if ln.name == "cell.run" and ln.phase == "result")
                if result.data.get("error") is not None:
                    raise SystemExit(f"the {kind} cell failed: {result.data}")
                if i == 0:
                    continue
                cell_s[kind].append(float(result.data["duration_s"]))
                call_s[kind].append(float(result.data["prints"][0]["text"]))
                turn_s[kind].append(took)
                if kind == "read":
                    digest_text = str(result.data["digest"]["text"])
                    [call] = [ln for ln in lines if ln.name == "app.call" and ln.phase == "result"]
                    app_tokens = int(call.data["value"]["tokens"])
    finally:
        await close_harness(harness)
        fake.stop()
        await km.shutdown_all(now=True)
    return {
        "call": call_s,
        "cell": cell_s,
        "turn": turn_s,
        "digest": digest_text,
        "app_tokens": app_tokens,
    }


async def main(runs: int, turns: int) -> None:
    from jupyter_agent.core.tokens import count_tokens

    root = Path(tempfile.mkdtemp(prefix="bench-nbread-"))
    make_notebook(root / NAME)
    raw = (root / NAME).read_text(encoding="utf-8")
    host = await host_side(root, runs)
    kernel = await kernel_side(root, turns)
    read = host["read"]

    print(f"notebook: {CELLS} cells, {len(raw) / 1e6:.2f} MB of JSON")
    print(f"{'(medians)':<44} {'notebook.read':>12}    {'bare nbformat.read':>12}")
    _row(f"(a) host: contents get + scrub + digest (n={runs})", host["host"], host["bare"])
    _row("    the digest alone (read_cells)", host["digest"], host["bare"])
    call, cell = kernel["call"], kernel["cell"]
    _row(f"(b) kernel: the read in the cell (n={turns})", call["read"], call["bare"])
    _row("    the whole cell (bare: + import nbformat)", cell["read"], cell["bare"])
    _row("    the whole turn (2 fake model calls)", kernel["turn"]["read"], kernel["turn"]["bare"])
    raw_tokens = count_tokens(raw)
    cell_tokens = count_tokens(kernel["digest"])
    print(
        f"tokens: the digest {read.tokens:,} (the app's {kernel['app_tokens']:,}; the cell's"
        f" whole digest {cell_tokens:,}) vs the raw notebook JSON {raw_tokens:,}:"
        f" {raw_tokens / max(read.tokens, 1):.0f}x fewer; {len(read.stubbed)} outputs stubbed,"
        f" cells cut: {read.cut}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--turns", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.turns))
