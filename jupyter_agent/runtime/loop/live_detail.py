"""A running run's detail as it is now, not as its row was written at its start.

``GET agent/runs/{id}`` reads the run's log and its stored summary. While the run goes, the
stored summary is the one its start wrote (``cells: 0``, ``modelCalls: 0``) and a cell in
flight has no result line yet, so its step has no outputs. :func:`overlay_live` fixes both
from what the server holds in memory:

- the summary's ``modelCalls`` and ``cells`` are counted from the log's intents so far (the
  loop's own model calls and its cells and commands: what the turn record will count);
- each unfinished cell or command step gets the outputs its ``cell_output`` events carried
  so far (the event bus keeps every event of a run in progress), coalesced as the panel
  shows them.

Nothing here is written anywhere: the stored records change only when the run ends.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from jupyter_agent.effects import BASH_RUN, CELL_RUN, HTTP_POST
from jupyter_agent.runtime.kernels.live_output import OutputCollector

__all__ = ["overlay_live"]


def overlay_live(body: dict[str, Any], run_id: str, events: Iterable[Mapping[str, Any]]) -> None:
    """Update ``body`` (the ``show_run`` JSON of a running run, with its ``summary``) in
    place from the run's ``effects`` and the chat's kept ``events``."""
    effects = [e for e in body.get("effects") or () if e.get("parent") is None]
    summary = body.get("summary")
    if isinstance(summary, dict):
        calls = sum(1 for e in effects if e.get("name") == HTTP_POST)
        cells = sum(1 for e in effects if e.get("name") in (CELL_RUN, BASH_RUN))
        summary["modelCalls"] = max(int(summary.get("modelCalls") or 0), calls)
        summary["cells"] = max(int(summary.get("cells") or 0), cells)
    pending = {
        str(step.get("cell_id")): step
        for step in body.get("steps") or ()
        if step.get("type") in ("cell", "bash") and step.get("status") == "unfinished"
    }
    if not pending:
        return
    collectors: dict[str, OutputCollector] = {}
    for event in events:
        if event.get("run_id") != run_id:
            continue
        cell_id = str(event.get("cell_id"))
        if cell_id not in pending:
            continue
        if event.get("type") == "cell_start":
            collectors[cell_id] = OutputCollector()
        elif event.get("type") == "cell_output" and isinstance(event.get("output"), dict):
            collectors.setdefault(cell_id, OutputCollector()).add(dict(event["output"]))
    for cell_id, collector in collectors.items():
        step = pending[cell_id]
        if step.get("type") == "cell":
            step["outputs"] = collector.outputs
        else:  # a command's step holds its two streams
            step["stdout"] = collector.stream_text("stdout")
            step["stderr"] = collector.stream_text("stderr")
