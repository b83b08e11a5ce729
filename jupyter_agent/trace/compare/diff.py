"""Diff two runs' effect logs (pure): where they first part, and the rest side by side.

:func:`diff_runs` is the body of ``GET agent/runs/{a}/diff/{b}`` and of ``jupyter agent
trace diff A B --json``::

    {"identical": bool, "tiers_differ": bool, "a": side, "b": side,
     "divergence": null or divergence, "summary": {"a": totals, "b": totals}}

**What is compared.** The two logs' top-level effects (the loop's own; an in-cell app's
calls are part of their cell's result), index by index: the effect's name, then its intent,
then its result, each after :func:`normalised`, which removes what differs between any two
live runs of the same turn: ids (``run_``, ``chat_``, ``msg_``, ``turn_``, a provider's
``toolu_``/``call_``/``chatcmpl-``... ids, as whole values or inside text), ISO-8601 times
(the ``[sent ...]`` header of a message), timings (``duration_s``, any ``..._ms`` or
``...Ms`` key such as a turn's ``durationMs``, ``(In[1], 0.03s)`` in a cell's digest), a
model call's ``attempts`` (its waits). Two replays of one log,
or two live runs of one scripted turn, are therefore identical; a run and its rerun on
another model part at their first ``http.post`` (its intent names another model).

**Runs on other tiers** (their headers' ``tiers`` differ: a rerun on another model) are
never identical (``tiers_differ``); the tier and profile their ``config.get`` answers name
are left out of the comparison, so the first divergence is where the other model first
shows: its first ``http.post``.

**The divergence** names the index, both seqs and effect names, the ``part`` that differs
(``effect``: another effect or one log ended; ``intent``; ``result``) and what differs, as
fits the effect:

- ``http.post``: ``model`` (``{a, b}``), ``system_diff`` and ``conversation_diff`` (unified
  diffs of the request's system text and of its conversation as role-prefixed lines), and
  for a result ``reply_diff`` (the reply's text and tool calls);
- ``cell.run``: ``code_diff`` (intent) or ``output_diff`` (result: what the model read);
- any other: ``data_diff``, a unified diff of the normalised JSON.

**The summary** of each run: effects, model calls, cells, tokens in and out, cost (None
when a price is unknown), the turn's stop reason and end cause (from its ``turn.append``
intent), the time from the header's ``created`` to the last line's ``t``.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from jupyter_agent.trace.reader import LoggedEffect, TraceFile, pair_effects
from jupyter_agent.trace.stats import run_stats

__all__ = ["diff_runs", "normalised"]

_ID: Final = re.compile(
    r"\b(?:run|chat|msg|turn|toolu|call|mem|prop|apr|approval|id|req|resp|chatcmpl|fc)"
    r"[_-][0-9A-Za-z]{8,}\b"
)
_TIME: Final = re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?")
_CELL_TIME: Final = re.compile(r"(\(In\[\d+\], )\d+(?:\.\d+)?s\)")
_DROPPED: Final = frozenset({"attempts", "duration_s", "t", "elapsed_s", "wait_s", "created"})
_DIFF_LINES: Final = 400


def _text(value: str) -> str:
    value = _ID.sub("<id>", value)
    value = _TIME.sub("<time>", value)
    return _CELL_TIME.sub(r"\1<s>)", value)


def normalised(value: Any) -> Any:
    """``value`` without what differs between two live runs of one turn (module doc)."""
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, Mapping):
        return {
            str(k): normalised(v)
            for k, v in value.items()
            if k not in _DROPPED and not str(k).endswith(("_ms", "Ms", "_at"))
        }
    if isinstance(value, (list, tuple)):
        return [normalised(v) for v in value]
    return value


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _unified(a: str, b: str, label: str) -> str:
    lines = list(
        difflib.unified_diff(
            a.splitlines(), b.splitlines(), f"a/{label}", f"b/{label}", lineterm="", n=2
        )
    )
    if len(lines) > _DIFF_LINES:
        lines = [*lines[:_DIFF_LINES], f"... ({len(lines) - _DIFF_LINES} more lines)"]
    return "\n".join(lines)


def _parts_text(content: Any) -> str:
    """A message's or reply's content as text lines (text, tool calls, tool results)."""
    if isinstance(content, str):
        return content
    out: list[str] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind == "text" or ("text" in part and isinstance(part.get("text"), str)):
            out.append(str(part.get("text")))
        elif kind in ("tool_use", "function_call") or "input" in part:
            out.append(f"[tool {part.get('name')}] {_canonical(part.get('input'))}")
        elif kind == "tool_result":
            out.append(f"[tool result] {_parts_text(part.get('content'))}")
        elif kind == "image" or kind == "image_url":
            out.append("[image]")
        else:
            out.append(_canonical(part))
    return "\n".join(out)


def _request(intent: Any) -> tuple[str | None, str, str]:
    """(model, system text, conversation text) of an ``http.post`` intent, any wire."""
    body = intent.get("json") if isinstance(intent, Mapping) else None
    body = body if isinstance(body, Mapping) else {}
    model = body.get("model")
    system = _parts_text(body.get("system") or body.get("instructions") or "")
    lines: list[str] = []
    messages = body.get("messages") or body.get("input") or []
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, Mapping):
            continue
        role = str(message.get("role") or message.get("type") or "?")
        text = _parts_text(message.get("content"))
        if role == "system" and not system:
            system = text
            continue
        lines.extend(f"{role}: {line}" for line in text.splitlines() or [""])
    return (str(model) if model is not None else None), _text(system), _text("\n".join(lines))


def _reply(result: Any) -> str:
    body = result.get("json") if isinstance(result, Mapping) else None
    if not isinstance(body, Mapping):
        return _canonical(normalised(result))
    if "content" in body:  # Anthropic messages
        return _text(_parts_text(body.get("content")))
    choices = body.get("choices")
    if isinstance(choices, list) and choices:  # OpenAI chat
        message = (choices[0] or {}).get("message") or {}
        calls = [
            f"[tool {c.get('function', {}).get('name')}] {c.get('function', {}).get('arguments')}"
            for c in message.get("tool_calls") or []
            if isinstance(c, Mapping)
        ]
        return _text("\n".join([str(message.get("content") or ""), *calls]))
    return _text(_parts_text(body.get("output")))


def _cell_output(result: Any) -> str:
    if isinstance(result, Mapping):
        digest = result.get("digest")
        if isinstance(digest, Mapping) and isinstance(digest.get("text"), str):
            return _text(digest["text"])
    return _canonical(normalised(result))


def _what(a: LoggedEffect, b: LoggedEffect, part: str) -> dict[str, Any]:
    """What differs between two effects of one name, in ``part``."""
    out: dict[str, Any] = {}
    if a.name == "http.post" and part == "intent":
        model_a, system_a, talk_a = _request(a.data)
        model_b, system_b, talk_b = _request(b.data)
        out["model"] = {"a": model_a, "b": model_b}
        out["system_diff"] = _unified(system_a, system_b, "system")
        out["conversation_diff"] = _unified(talk_a, talk_b, "conversation")
        said = [w for w, d in (("model", model_a != model_b),) if d]
        said += [
            w
            for w, d in (("system", system_a != system_b), ("conversation", talk_a != talk_b))
            if d
        ]
        out["what"] = "the request differs: " + (", ".join(said) or "its parameters")
        if not said:
            out["data_diff"] = _json_diff(a.data, b.data, "request")
        return out
    if a.name == "http.post":
        ra, rb = _reply(_result(a)), _reply(_result(b))
        out["reply_diff"] = _unified(ra, rb, "reply")
        out["what"] = "the model answered differently" if ra != rb else "the call's result differs"
        if ra == rb:
            out["data_diff"] = _json_diff(_data(a, part), _data(b, part), "result")
        return out
    if a.name in ("cell.run", "bash.run") and part == "intent":
        key = "code" if a.name == "cell.run" else "command"
        code_a = str((a.data or {}).get(key) or "")
        code_b = str((b.data or {}).get(key) or "")
        out["code_diff"] = _unified(code_a, code_b, key)
        out["what"] = f"the {key} differs" if code_a != code_b else f"the {a.name} request differs"
        return out
    if a.name in ("cell.run", "bash.run"):
        out["output_diff"] = _unified(_cell_output(_result(a)), _cell_output(_result(b)), "output")
        out["what"] = "the output differs"
        return out
    out["data_diff"] = _json_diff(_data(a, part), _data(b, part), part)
    out["what"] = f"the {part} of {a.name} differs"
    return out


def _data(effect: LoggedEffect, part: str) -> Any:
    if part == "intent":
        return effect.data
    if effect.result is None:
        return None
    return {"data": effect.result.data, "error": effect.result.error}


def _dumped(value: Any) -> str:
    return json.dumps(normalised(value), sort_keys=True, indent=1, ensure_ascii=False, default=str)


def _result(effect: LoggedEffect) -> Any:
    return None if effect.result is None else effect.result.data


def _json_diff(a: Any, b: Any, label: str) -> str:
    return _unified(_dumped(a), _dumped(b), label)


def _without_tier(effect: LoggedEffect, data: Any) -> Any:
    """A ``config.get`` answer without the tier it names (the runs' tiers differ on purpose:
    their headers say so; the calls show what it changed)."""
    if effect.name != "config.get" or not isinstance(effect.data, Mapping):
        return data
    key = str(effect.data.get("key") or "")
    if key.startswith(("llm.tier.", "llm.profile.")):
        return {"tier": "<the run's>"}
    if isinstance(data, Mapping) and isinstance(data.get("data"), Mapping):
        inner = {k: v for k, v in data["data"].items() if k not in ("tier", "profile", "tier_name")}
        return {**data, "data": inner}
    return data


def _divergence(
    effects_a: Sequence[LoggedEffect],
    effects_b: Sequence[LoggedEffect],
    *,
    tiers_differ: bool = False,
) -> dict[str, Any] | None:
    for index in range(max(len(effects_a), len(effects_b))):
        a = effects_a[index] if index < len(effects_a) else None
        b = effects_b[index] if index < len(effects_b) else None
        base: dict[str, Any] = {
            "index": index,
            "seq_a": a.seq if a else None,
            "seq_b": b.seq if b else None,
            "effect_a": a.name if a else None,
            "effect_b": b.name if b else None,
        }
        if a is None or b is None:
            ended = "a" if a is None else "b"
            return {**base, "part": "effect", "what": f"run {ended} ended here; the other went on"}
        if a.name != b.name:
            return {**base, "part": "effect", "what": f"{a.name} against {b.name}"}
        for part in ("intent", "result"):
            da, db = _data(a, part), _data(b, part)
            if tiers_differ and part == "result":
                da, db = _without_tier(a, da), _without_tier(b, db)
            if da != db and _canonical(normalised(da)) != _canonical(normalised(db)):
                return {**base, "part": part, **_what(a, b, part)}
    return None


def _seconds(trace: TraceFile) -> float | None:
    try:
        start = datetime.fromisoformat(str(trace.header.get("created")).replace("Z", "+00:00"))
        end = datetime.fromisoformat(trace.lines[-1].t.replace("Z", "+00:00"))
    except (ValueError, IndexError):
        return None
    return round((end - start).total_seconds(), 3)


def _totals(trace: TraceFile, top: Sequence[LoggedEffect]) -> dict[str, Any]:
    totals = run_stats(trace)["totals"]
    turn = next((e.data for e in reversed(top) if e.name == "turn.append"), None)
    llm = (turn or {}).get("llm") if isinstance(turn, Mapping) else None
    llm = llm if isinstance(llm, Mapping) else {}
    return {
        "effects": len(top),
        "model_calls": totals.get("calls", 0),
        "cells": sum(1 for e in top if e.name == "cell.run"),
        "tokens_in": totals.get("in", 0),
        "tokens_out": totals.get("out", 0),
        "cost": totals.get("cost"),
        "stop_reason": llm.get("stopReason"),
        "end_cause": llm.get("endCause"),
        "seconds": _seconds(trace),
    }


def _side(trace: TraceFile) -> dict[str, Any]:
    header = trace.header
    tiers = header.get("tiers") if isinstance(header.get("tiers"), Mapping) else {}
    codegen = tiers.get("codegen") if isinstance(tiers, Mapping) else None
    return {
        "run_id": header.get("run_id"),
        "chat_id": header.get("chat_id"),
        "program": header.get("program"),
        "model": (codegen or {}).get("model") if isinstance(codegen, Mapping) else None,
        "rerun_of": header.get("rerun_of"),
    }


def diff_runs(a: TraceFile, b: TraceFile) -> dict[str, Any]:
    """The diff of runs ``a`` and ``b`` (see the module docstring). Never raises on logs
    :func:`~jupyter_agent.trace.reader.read_log` accepted."""
    top_a = [e for e in pair_effects(a) if e.parent is None]
    top_b = [e for e in pair_effects(b) if e.parent is None]
    tiers_a, tiers_b = a.header.get("tiers"), b.header.get("tiers")
    tiers_differ = _canonical(normalised(tiers_a)) != _canonical(normalised(tiers_b))
    divergence = _divergence(top_a, top_b, tiers_differ=tiers_differ)
    return {
        "identical": divergence is None and not tiers_differ,
        "tiers_differ": tiers_differ,
        "a": _side(a),
        "b": _side(b),
        "divergence": divergence,
        "summary": {"a": _totals(a, top_a), "b": _totals(b, top_b)},
    }
