"""Regenerate the CellResult fixtures in this folder from a REAL IPython run (by hand).

    python tests/core/cells/make_fixtures.py

Each cell runs in an in-process ``InteractiveShell`` (matplotlib's inline backend for the
figure); what the agent kernel captures is rebuilt from it: one value per ``print()`` call,
stderr, the last value's repr and mime bundle, display bundles, the error with IPython's
own (ANSI) traceback, nbformat outputs. The environment prefix and the home folder are
replaced by ``/ENV`` and ``/HOME`` so the committed JSON (and the golden digests made from
it) do not depend on this machine. ``side_effects.json`` is synthetic (app calls need a
host): it is built here too, so every fixture has one source. Not run by the tests.
"""

from __future__ import annotations

import builtins
import io
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent

CELLS = {
    "dataframe": (
        "c1",
        "import pandas as pd\n"
        "df = pd.DataFrame({'city': ['Oslo', 'Lima', 'Pune', 'Kyiv'],\n"
        "                   'temp_c': [3.5, 19.0, 31.2, 7.8],\n"
        "                   'rain_mm': [61, 2, 0, 44]})\n"
        "print(df.shape)\n"
        "print(df.dtypes)\n"
        "df",
    ),
    "figure": (
        "c2",
        "import matplotlib.pyplot as plt\n"
        "fig, ax = plt.subplots(figsize=(4, 3), dpi=40)\n"
        "ax.plot([3.5, 19.0, 31.2, 7.8], marker='o')\n"
        "print('plotted 4 points')\n"
        "ax.set_title('Temperatures')",
    ),
    "long_loop": (
        "c3",
        "import sys\n"
        "for i in range(1000):\n"
        "    print(f'step {i}: loss={1 / (i + 1):.5f}')\n"
        "print('finished', file=sys.stderr)",
    ),
    "nested_error": (
        "c4",
        "import json\n"
        "def parse(text):\n"
        "    return json.loads(text)\n"
        "def load_config(text):\n"
        "    cfg = parse(text)\n"
        "    return cfg['name']\n"
        "print('loading config')\n"
        "load_config(\"{'name': 'demo'}\")",
    ),
}


def _run(shell: Any, cell_id: str, code: str) -> dict[str, Any]:
    from IPython.utils.capture import capture_output

    prints: list[str] = []
    errors: list[tuple[str, str, list[str]]] = []
    real_print = builtins.print

    def agent_print(*args: Any, **kwargs: Any) -> None:
        # What the agent kernel does: one value per print() call to stdout.
        if kwargs.get("file") not in (None, sys.stdout):
            real_print(*args, **kwargs)
            return
        buf = io.StringIO()
        real_print(*args, **{**kwargs, "file": buf})
        text = buf.getvalue()
        prints.append(text[:-1] if text.endswith("\n") else text)
        real_print(*args, **kwargs)

    def show_traceback(etype: type, evalue: BaseException, stb: list[str]) -> None:
        errors.append((etype.__name__, str(evalue), list(stb)))

    shell.user_ns["print"] = agent_print
    shell._showtraceback = show_traceback
    start = time.perf_counter()
    with capture_output(display=True) as captured:
        result = shell.run_cell(code, store_history=True)
    duration = round(time.perf_counter() - start, 3)
    outputs: list[dict[str, Any]] = []
    if captured.stdout:
        outputs.append({"output_type": "stream", "name": "stdout", "text": captured.stdout})
    if captured.stderr:
        outputs.append({"output_type": "stream", "name": "stderr", "text": captured.stderr})
    displays = [dict(o.data) for o in captured.outputs]
    outputs.extend({"output_type": "display_data", "data": d, "metadata": {}} for d in displays)
    last = None
    if result.result is not None:
        data, _ = shell.display_formatter.format(result.result)
        text = data.pop("text/plain")
        last = {
            "repr": {"text": text, "chars": len(text)},
            "mime": data,
            "type_name": type(result.result).__name__,
        }
        outputs.append(
            {
                "output_type": "execute_result",
                "data": {"text/plain": text, **data},
                "metadata": {},
                "execution_count": shell.execution_count - 1,
            }
        )
    error = None
    if errors:
        ename, evalue, tb = errors[0]
        error = {"ename": ename, "evalue": evalue, "traceback": tb}
        outputs.append({"output_type": "error", **error})
    return {
        "cell_id": cell_id,
        "prints": [{"text": p, "chars": len(p)} for p in prints],
        "stderr": {"text": captured.stderr, "chars": len(captured.stderr)}
        if captured.stderr
        else None,
        "last": last,
        "displays": displays,
        "error": error,
        "outputs": outputs,
        "outputs_truncated": False,
        "execution_count": shell.execution_count - 1,
        "app_calls": [],
        "duration_s": duration,
    }


def _side_effects() -> dict[str, Any]:
    big = "".join(f"row {i}: " + "x" * 40 + "\n" for i in range(100))
    calls: list[dict[str, Any]] = [
        {"seq": 12, "app": "chat", "method": "post", "args": {"text": "Reading the files"}},
    ]
    calls += [
        {"seq": 13 + i, "app": "llm", "method": "chat", "args": {"messages": f"q{i}"}}
        for i in range(5)
    ]
    calls[3] |= {"ok": False, "error": "HTTP 529 overloaded after 3 attempts"}
    calls += [
        {"seq": 18 + i, "app": "llm", "method": "chat", "args": {"messages": f"b{i}"}, "batch": 1}
        for i in range(3)
    ]
    calls.append({"seq": 21, "app": "chat", "method": "post", "args": {"text": "Done"}})
    for c in calls:
        c.setdefault("ok", True)
        c.setdefault("error", None)
        c.setdefault("batch", None)
        c["mutation"] = c["app"] == "chat"
    return {
        "cell_id": "c5",
        "prints": [
            {"text": "summaries: 8", "chars": 12},
            {"text": big[:4000], "chars": 1_000_000},
        ],
        "stderr": None,
        "last": {
            "repr": {"text": "['ok', 'ok', 'ok']", "chars": 18},
            "mime": {},
            "type_name": "list",
        },
        "displays": [],
        "error": None,
        "outputs": [],
        "outputs_truncated": True,
        "execution_count": 5,
        "app_calls": calls,
        "duration_s": 4.21,
    }


def main() -> None:
    import matplotlib

    matplotlib.use("module://matplotlib_inline.backend_inline")
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    # What %matplotlib inline does in a kernel (enable_gui only exists in a kernel shell).
    from matplotlib_inline.backend_inline import configure_inline_support

    configure_inline_support(shell, "module://matplotlib_inline.backend_inline")
    home = os.path.expanduser("~")
    swaps: list[tuple[str, str]] = []
    for prefix in {sys.prefix, sys.base_prefix}:
        swaps.append((prefix, "/ENV"))
        if prefix.startswith(home + os.sep):
            swaps.append(("~" + prefix[len(home) :], "/ENV"))
    swaps.append((home, "/HOME"))
    swaps.sort(key=lambda s: len(s[0]), reverse=True)
    fixtures = {name: _run(shell, cid, code) for name, (cid, code) in CELLS.items()}
    fixtures["side_effects"] = _side_effects()
    for name, data in fixtures.items():
        text = json.dumps(data, indent=1, ensure_ascii=False)
        for real, placeholder in swaps:
            text = text.replace(real, placeholder)
        (HERE / f"{name}.json").write_text(text + "\n", encoding="utf-8")
        print(f"wrote {name}.json ({len(text):,} chars)")


if __name__ == "__main__":
    main()
