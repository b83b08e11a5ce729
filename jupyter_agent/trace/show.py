"""A run's log as the JSON of ``GET agent/runs/{run_id}`` and of ``jupyter agent trace show``.

:func:`show_run` (pure) returns::

    {"run_id", "chat_id", "program", "header", "truncated", "turn", "steps", "effects"}

- ``turn``: the turn record JSON given by the caller (the database's), else the log's
  ``turn.append`` intent, else None.
- ``steps``: what a person saw, in order (from :func:`~jupyter_agent.trace.cells_view.build_view`),
  each a dict with a ``type``: ``user`` / ``steering`` (text, at, view, attachments),
  ``break`` (hard), ``bubble`` / ``reply`` (text, status), ``cell`` (cell_id, code, status,
  digest: the text the model read, outputs: a summary per output, execution_count,
  duration_s, app_calls, seqs), ``bash`` (cell_id, command, status, returncode, stdout,
  stderr, digest) and ``model_call`` (status, http_status, attempts). A cell or command
  a hard break cut has status ``cancelled``, what it printed until then (outputs, or
  stdout and stderr) and no digest (the model read none); one that ran past its timeout
  has status ``timed_out``.
- ``effects``: every effect of the log in seq order:
  ``{seq, name, parent, intent, result, error, t_intent, t_result}`` (``result`` and
  ``t_result`` None for an effect without a result line).
- Bounded unless ``full``: every string over :data:`MAX_STRING` characters is cut and
  ends with a ``…[cut: N more chars]`` marker, every list over :data:`MAX_ITEMS` items keeps
  its first ones and ends with a ``…[cut: N more items]`` string, and nesting below
  :data:`MAX_DEPTH` becomes a ``…[cut: deeper data]`` string. A model request (the whole
  message history) is the usual large field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from jupyter_agent.core.digest import Digest, DigestOptions, digest_bash, digest_cell
from jupyter_agent.core.effects import HTTP_POST
from jupyter_agent.trace.cells_view import (
    BashStep,
    BreakStep,
    CellStep,
    MessageStep,
    ModelCallStep,
    PostStep,
    Step,
    build_view,
)
from jupyter_agent.trace.log import TraceFile, pair_effects
from jupyter_agent.trace.stats import call_attempts

__all__ = ["CUT_MARK", "MAX_DEPTH", "MAX_ITEMS", "MAX_STRING", "bound", "show_run"]

MAX_STRING: Final = 2000
MAX_ITEMS: Final = 50
MAX_DEPTH: Final = 12
CUT_MARK: Final = "…[cut: "


def bound(value: Any, *, max_string: int = MAX_STRING, max_items: int = MAX_ITEMS) -> Any:
    """``value`` (JSON data) with long strings, long lists and deep nesting cut, marked."""
    return _bound(value, max_string, max_items, 0)


def _bound(value: Any, max_string: int, max_items: int, depth: int) -> Any:
    if isinstance(value, str):
        if len(value) <= max_string:
            return value
        cut = len(value) - max_string
        return f"{value[:max_string]}{CUT_MARK}{cut} more char{'' if cut == 1 else 's'}]"
    if isinstance(value, (dict, list)) and depth >= MAX_DEPTH:
        return f"{CUT_MARK}deeper data]"
    if isinstance(value, dict):
        return {str(k): _bound(v, max_string, max_items, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        kept = [_bound(v, max_string, max_items, depth + 1) for v in value[:max_items]]
        if len(value) > max_items:
            cut = len(value) - max_items
            kept.append(f"{CUT_MARK}{cut} more item{'' if cut == 1 else 's'}]")
        return kept
    return value


def _digest(render: Callable[[], Digest]) -> str | None:
    try:
        return render().text
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return None


def _output_summary(raw: Any) -> dict[str, Any]:
    """One recorded nbformat output in brief: its type, and text or mime types."""
    if not isinstance(raw, dict):
        return {"type": "unrecognised"}
    kind = raw.get("output_type")
    if kind == "stream":
        return {"type": "stream", "name": raw.get("name"), "text": raw.get("text")}
    if kind == "error":
        return {"type": "error", "ename": raw.get("ename"), "evalue": raw.get("evalue")}
    data = raw.get("data")
    summary: dict[str, Any] = {
        "type": kind,
        "mimes": sorted(data) if isinstance(data, dict) else [],
    }
    if isinstance(data, dict) and isinstance(data.get("text/plain"), str):
        summary["text"] = data["text/plain"]
    return summary


def _step(step: Step, options: DigestOptions, attempts: dict[int, int | None]) -> dict[str, Any]:
    if isinstance(step, MessageStep):
        return {
            "type": step.kind,
            "seq": step.seq,
            "text": step.text,
            "at": step.at,
            "view": step.view,
            "attachments": list(step.attachments),
        }
    if isinstance(step, BreakStep):
        return {"type": "break", "seq": step.seq, "hard": step.hard, "at": step.at}
    if isinstance(step, PostStep):
        return {
            "type": step.kind,
            "seq": step.seq,
            "text": step.text,
            "t": step.t,
            "status": step.status,
        }
    if isinstance(step, CellStep):
        cell = step.result
        read = cell if step.status != "cancelled" else None  # what the model read, if any
        return {
            "type": "cell",
            "seq": step.seq,
            "seqs": list(step.seqs),
            "cell_id": step.cell_id,
            "code": step.code,
            "status": step.status,
            "t": step.t,
            "execution_count": cell.execution_count if cell is not None else None,
            "duration_s": cell.duration_s if cell is not None else None,
            "failed": cell.error is not None if cell is not None else None,
            "app_calls": step.app_calls,
            "digest": _digest(lambda: digest_cell(read, options)) if read is not None else None,
            "outputs": [_output_summary(o) for o in cell.outputs] if cell is not None else [],
            "error": step.error,
        }
    if isinstance(step, BashStep):
        sh = step.result
        sh_read = sh if step.status != "cancelled" else None
        return {
            "type": "bash",
            "seq": step.seq,
            "cell_id": step.cell_id,
            "command": step.command,
            "status": step.status,
            "t": step.t,
            "returncode": sh.returncode if sh is not None else None,
            "stdout": sh.stdout.text if sh is not None else None,
            "stderr": sh.stderr.text if sh is not None else None,
            "digest": _digest(lambda: digest_bash(sh_read, options)) if sh_read else None,
            "error": step.error,
        }
    assert isinstance(step, ModelCallStep)
    return {
        "type": "model_call",
        "seq": step.seq,
        "status": step.status,
        "t": step.t,
        "http_status": step.http_status,
        "attempts": attempts.get(step.seq, step.attempts),
    }


def show_run(
    trace: TraceFile, turn_json: dict[str, Any] | None = None, *, full: bool = False
) -> dict[str, Any]:
    """The JSON of one run: header, turn, steps and effects (see the module docstring)."""
    view = build_view(trace)
    turn = turn_json if turn_json is not None else (view.turn.to_json() if view.turn else None)
    options = view.digest_options()
    paired = pair_effects(trace)
    attempts = {
        e.seq: call_attempts(e.result.data, e.result.error)
        for e in paired
        if e.name == HTTP_POST and e.result is not None
    }
    steps = [_step(step, options, attempts) for step in view.steps]
    effects = [
        {
            "seq": e.seq,
            "name": e.name,
            "parent": e.parent,
            "intent": e.data,
            "result": e.result.data if e.result is not None else None,
            "error": e.result.error if e.result is not None else None,
            "t_intent": e.intent.t,
            "t_result": e.result.t if e.result is not None else None,
        }
        for e in paired
    ]
    body: dict[str, Any] = {
        "run_id": view.run_id,
        "chat_id": view.chat_id,
        "program": trace.header.get("program"),
        "model": view.model,
        "header": trace.header,
        "truncated": trace.truncated,
        "turn": turn,
        "steps": steps,
        "effects": effects,
    }
    return body if full else {k: bound(v) for k, v in body.items()}
