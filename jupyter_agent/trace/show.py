"""A run's log as the JSON of ``GET agent/runs/{run_id}`` and of ``jupyter agent trace show``.

:func:`show_run` (pure) returns::

    {"run_id", "chat_id", "program", "header", "truncated", "turn", "steps", "effects",
     "program_error"?}

- ``program_error``: only for a run whose program failed (the log's last line).

- ``turn``: the turn record JSON given by the caller (the database's), else the log's
  ``turn.append`` intent, else None.
- ``steps``: what a person saw, in order (from :func:`~jupyter_agent.trace.cells_view.build_view`),
  each the codec JSON of one step of :mod:`jupyter_agent.core.events.steps` (a tagged union on
  ``type``: ``user``, ``steering``, ``break``, ``bubble``, ``reply``, ``cell`` (with its
  nbformat ``outputs`` and the ``digest`` the model read), ``bash``, ``model_call``,
  ``recall``, ``approval`` (a wait for the person), ``notice``). A
  cell or command a hard break cut has status ``cancelled``, what it printed until then
  and no digest (the model read none); one that ran past its timeout ``timed_out``.
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

from dataclasses import replace
from typing import Any, Final

from jupyter_agent.codec import dump_dict
from jupyter_agent.core.events.steps import ModelCallStep
from jupyter_agent.effects import HTTP_POST
from jupyter_agent.trace.cells_view import AnyStep, build_view
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


def _step(step: AnyStep, attempts: dict[int, int | None]) -> dict[str, Any]:
    if isinstance(step, ModelCallStep) and step.seq in attempts:
        step = replace(step, attempts=attempts[step.seq])
    return dump_dict(step)


def show_run(
    trace: TraceFile, turn_json: dict[str, Any] | None = None, *, full: bool = False
) -> dict[str, Any]:
    """The JSON of one run: header, turn, steps and effects (see the module docstring)."""
    view = build_view(trace)
    turn = turn_json if turn_json is not None else (view.turn.to_json() if view.turn else None)
    paired = pair_effects(trace)
    attempts = {
        e.seq: call_attempts(e.result.data, e.result.error)
        for e in paired
        if e.name == HTTP_POST and e.result is not None
    }
    steps = [_step(step, attempts) for step in view.steps]
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
    if trace.program_error is not None:  # the program failed: how, and where
        body["program_error"] = trace.program_error
    return body if full else {k: bound(v) for k, v in body.items()}
