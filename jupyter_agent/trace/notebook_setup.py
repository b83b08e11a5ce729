"""The setup cell of an exported notebook: what lets it re-run with no server and no model.

An exported notebook (:mod:`jupyter_agent.trace.notebook`) starts with one hidden code
cell, id :data:`SETUP_ID` (metadata ``jupyter_agent.kind`` ``"setup"``,
``jupyter.source_hidden``), always, even when the runs made no app call (one shape for
every export; only a chat with no run at all has none)::

    from jupyter_agent.kernel.recorded import play_recorded

    play_recorded({"calls": [...], "cells": [...]})

In the agent kernel it installs the record (:mod:`jupyter_agent.kernel.recorded`):

- ``calls``: every app call the exported runs' cells made (``app.call`` effects nested
  under a ``cell.run``), in log order, as ``{app, method, args, reply}``; ``reply`` is what
  the kernel got: the logged result ``{ok, value, error}`` plus ``seq`` and ``mutation``
  (the method catalogue's; False for a method it does not know, an MCP tool's say). A
  ``notebook.fetch`` reply carries the copied bytes (``payload``, base64) read from the
  blob its value names (``blobs/<sha256>.pickle`` in ``blobs_dir``, the folder of the
  runs' logs) when that file is readable and at most :data:`MAX_PAYLOAD_BYTES`; else the
  reply is an error saying the copy is not carried in the export. A call the log has no
  result for (the run stopped first) is answered with an error saying so.
- ``cells``: each exported agent cell's ``{code, name}`` (the run's cell name, ``c3``), in
  order: the kernel runs a cell with exactly that code as that named agent cell, so
  ``values.get("c3", 2)`` in a later cell works.

The record is written as a Python literal (``pprint``: one item a line), the values being
JSON. In another kernel the cell raises a clear error; it is tagged ``raises-exception``
so nbclient still runs the cells that need no host there.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from pathlib import Path
from pprint import pformat
from typing import Any, Final

from nbformat import NotebookNode

from jupyter_agent.core.loop.apps import find_method
from jupyter_agent.effects import APP_CALL, CELL_RUN
from jupyter_agent.trace.log import TraceFile, pair_effects
from jupyter_agent.trace.notebook_nodes import from_dict, new_code_cell

__all__ = ["MAX_PAYLOAD_BYTES", "SETUP_ID", "recorded_calls", "rerun_tag", "setup_cell"]

SETUP_ID: Final = "replay-setup"
#: The largest ``notebook.fetch`` copy an export carries (bytes of the pickle).
MAX_PAYLOAD_BYTES: Final = 5_000_000
_BLOB: Final = re.compile(r"^blobs/[0-9a-f]{64}\.pickle$")


def rerun_tag(status: str, *, raised: bool = False) -> str | None:
    """The nbclient tag of an exported cell or command whose recorded run ended with
    ``status``: ``raises-exception`` for one that raised (``raised``: its error was
    recorded; nbclient shows it and runs on), ``skip-execution`` for one that did not run
    to its end (cut by a hard stop, timed out, unfinished, could not run, unreadable: it
    would not end as recorded), None for one that finished."""
    if status == "failed":
        return "raises-exception" if raised else "skip-execution"
    return (
        "skip-execution"
        if status in ("cancelled", "timed_out", "unfinished", "unreadable")
        else None
    )


def recorded_calls(trace: TraceFile, blobs_dir: Path | None) -> list[dict[str, Any]]:
    """The app calls of one run's cells, in log order, as the setup cell holds them."""
    effects = pair_effects(trace)
    cell_seqs = {e.seq for e in effects if e.name == CELL_RUN}
    calls: list[dict[str, Any]] = []
    for effect in effects:
        if effect.name != APP_CALL or effect.parent not in cell_seqs:
            continue  # a cell's calls only (autorecall's search is no cell's)
        data = effect.data if isinstance(effect.data, dict) else {}
        app, method = str(data.get("app")), str(data.get("method"))
        spec = find_method(app, method)
        reply: dict[str, Any] = {"ok": False, "value": None}
        answer = effect.result.data if effect.result is not None else None
        if isinstance(answer, dict):
            reply.update(ok=bool(answer.get("ok")), value=answer.get("value"))
            reply["error"] = answer.get("error")
        else:
            reply["error"] = f"{app}.{method}: the recorded run has no answer to this call"
        reply.update(seq=effect.seq, mutation=bool(spec is not None and spec.mutation))
        if reply["ok"] and (app, method) == ("notebook", "fetch"):
            _carry_copy(reply, blobs_dir)
        args = data.get("args")
        calls.append({"app": app, "method": method, "args": args or {}, "reply": reply})
    return calls


def _carry_copy(reply: dict[str, Any], blobs_dir: Path | None) -> None:
    """Add the fetched copy's bytes to ``reply``, or make it an error saying why not."""
    raw = reply.get("value")
    value: dict[str, Any] = raw if isinstance(raw, dict) else {}
    blob = str(value.get("blob") or "")
    why = "its file was not found beside the run's log"
    if blobs_dir is not None and _BLOB.match(blob):
        path = blobs_dir / blob
        try:
            size = path.stat().st_size
            if size <= MAX_PAYLOAD_BYTES:
                reply["payload"] = base64.b64encode(path.read_bytes()).decode("ascii")
                return
            why = f"it is {size:,} bytes, over the export's {MAX_PAYLOAD_BYTES:,}"
        except OSError:
            pass
    reply.update(
        ok=False,
        error=(
            f"notebook.fetch: the copy of {value.get('name')} ({blob or 'no blob'}) is not "
            f"carried in this export: {why}"
        ),
    )


def setup_cell(calls: Sequence[dict[str, Any]], cells: Sequence[tuple[str, str]]) -> NotebookNode:
    """The hidden first code cell (module docstring); ``cells`` are ``(code, name)``."""
    record = {
        "calls": list(calls),
        "cells": [{"code": code, "name": name} for code, name in cells],
    }
    source = (
        "# Replays what the agent's cells got from jupyter-agent (app calls, cell names):\n"
        "# this notebook re-runs top to bottom in the agent kernel, with no server or model.\n"
        "from jupyter_agent.kernel.recorded import play_recorded\n\n"
        f"play_recorded(\n{pformat(record, width=100, sort_dicts=False)}\n)"
    )
    metadata = {
        "jupyter_agent": {"kind": "setup"},
        "jupyter": {"source_hidden": True},
        "tags": ["raises-exception"],  # another kernel says why and runs on
    }
    return new_code_cell(source, id=SETUP_ID, metadata=from_dict(metadata))
