"""An eval's report: a notebook (nbformat v4, validated) written into the trace folder.

Cells: a title with the suite, program, models and times; the pass rate per model (a
markdown table); when several models were compared, a bar chart of their pass rates (a
code cell that draws it from the results held in its own source, with the PNG it made,
drawn with matplotlib's Agg backend; no chart when matplotlib is missing); one table row
per case run (status, the failure's message, tokens, cost, time, the run's id for
``jupyter agent trace show``); the eval's whole answer in ``metadata.jupyter_agent``.
"""

from __future__ import annotations

import base64
import io
import json
import posixpath
from typing import Any, Final

from nbformat import NotebookNode

from jupyter_agent.runtime.notebook.exports import safe_stem
from jupyter_agent.trace.notebook_nodes import (
    new_code_cell,
    new_markdown_cell,
    new_output,
    notebook_of,
)

__all__ = ["report_notebook", "report_stem"]

_CHART_CODE: Final = """\
import matplotlib.pyplot as plt

rates = {rates}
fig, ax = plt.subplots(figsize=(6, 0.6 + 0.5 * len(rates)))
ax.barh(list(rates), [r * 100 for r in rates.values()], color="#4c72b0")
ax.set_xlim(0, 100)
ax.set_xlabel("cases passed (%)")
ax.invert_yaxis()
fig.tight_layout()
"""


def report_stem(suite: str | None, eval_id: str) -> str:
    """The report's file stem: ``eval-<suite name>`` (``eval-<id>`` with no suite)."""
    name = posixpath.splitext(posixpath.basename((suite or "").rstrip("/")))[0]
    return safe_stem(f"eval-{name}" if name else "", f"eval-{eval_id}")


def _cell(text: Any) -> str:
    """A value as a markdown table cell's text (no bar, no line break)."""
    return " ".join(str(text).replace("|", "\\|").split())[:300]


def _chart(rates: dict[str, float]) -> NotebookNode:
    """The chart's cell: its code (to draw it again) and the PNG drawn here the same way,
    on a figure of its own (no pyplot state, no backend switched in the server)."""
    code = _CHART_CODE.format(rates=json.dumps(rates, indent=1))
    cell = new_code_cell(code, id="chart", metadata={})
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except Exception:  # no chart without matplotlib; the code stays
        return cell
    fig = Figure(figsize=(6, 0.6 + 0.5 * len(rates)))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    ax.barh(list(rates), [r * 100 for r in rates.values()], color="#4c72b0")
    ax.set_xlim(0, 100)
    ax.set_xlabel("cases passed (%)")
    ax.invert_yaxis()
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80)
    png = base64.b64encode(buffer.getvalue()).decode("ascii")
    cell.outputs = [new_output("display_data", data={"image/png": png, "text/plain": "<Figure>"})]
    return cell


def report_notebook(answer: dict[str, Any]) -> NotebookNode:
    """The report of the eval whose answer (``GET agent/evals/{id}``) is ``answer``."""
    by_model: dict[str, dict[str, Any]] = answer["by_model"]
    models = ", ".join(f"`{m}`" for m in by_model) or "none"
    head = [
        f"# Eval: {answer.get('suite') or 'reruns'}",
        "",
        f"- eval `{answer['eval_id']}`, program `{answer['program']}`, models {models}",
        f"- {answer['passed']} of {answer['total']} case runs passed"
        f" (repeats: {answer['repeats']})",
        f"- started {answer['started']}, ended {answer.get('ended') or 'now'}",
    ]
    if answer.get("error"):
        head.append(f"- the eval stopped early: {_cell(answer['error'])}")
    cells = [new_markdown_cell("\n".join(head), id="title", metadata={})]
    rows = [
        "| model | passed | failed | errors | pass rate | tokens | cost (USD) |",
        "|---" * 7 + "|",
    ]
    for model, row in by_model.items():
        rows.append(
            f"| {_cell(model)} | {row['passed']} | {row['failed']} | {row['errors']} | "
            f"{row['pass_rate']:.0%} | {row['tokens']:,} | {row['cost_usd']:.4f} |"
        )
    cells.append(
        new_markdown_cell("## Pass rate per model\n\n" + "\n".join(rows), id="rates", metadata={})
    )
    if len(by_model) > 1:
        cells.append(_chart({m: r["pass_rate"] for m, r in by_model.items()}))
    lines = [
        "| case | model | # | status | why | tokens | cost (USD) | time (s) | run |",
        "|---" * 9 + "|",
    ]
    for r in answer["results"]:
        tokens = r["tokens"]["input"] + r["tokens"]["output"]
        cost = "unknown" if r["cost_usd"] is None else f"{r['cost_usd']:.4f}"
        lines.append(
            f"| {_cell(r['case'])} | {_cell(r['model'] or 'agent')} | {r['repeat']} | "
            f"**{r['status']}** | {_cell(r['message'])} | {tokens:,} | {cost} | "
            f"{r['duration_s'] if r['duration_s'] is not None else ''} | `{r['run_id']}` |"
        )
    cells.append(new_markdown_cell("## Cases\n\n" + "\n".join(lines), id="cases", metadata={}))
    return notebook_of(cells, {"eval": answer})
