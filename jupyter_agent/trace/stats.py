"""Per model call usage and cost of a run, read from its effect log (pure).

:func:`run_stats` is the body of ``GET agent/runs/{run_id}/stats`` (DESIGN section 3)::

    {"run_id": ..., "calls": [call, ...], "totals": {...}}

One ``call`` per ``http.post`` that has a result line, top-level (the loop's own calls) and
nested (an in-cell ``llm.chat`` app call: its effects carry ``parent``), in seq order::

    {"seq", "tier", "model", "in", "out", "cacheRead", "cacheWrite", "reasoning",
     "cost", "status", "attempts", "nested", "http_status", "error"}

Contracts:

- ``tier`` is the name of the closest preceding ``config.get llm.tier.<name>`` result in
  the same parent scope (the top level, or the same ``app.call``); the model's profile
  overrides come from the ``llm.profile.<model>`` result of that scope (``toolcaller@v7``:
  both from its ``config.get start`` answer's ``tier_name``, ``tier`` and ``profile``).
  Nothing is read from today's config: only the log.
- Usage is parsed from the recorded reply body by the adapter that spoke the call's wire
  (the tier's provider, else the intent's ``wire``), so cached tokens are normalised the
  same way the loop saw them: ``in`` excludes cached input, ``out`` includes reasoning.
- ``model`` is the model the reply names, else the tier's, else the request body's.
- ``status``: ``cancelled`` (a hard break: ``{"cancelled": "break_hard"}``), ``failed``
  (the result has ``error``, an HTTP status >= 400, or a body no adapter can read), else
  ``ok``. A call without a readable reply counts zero tokens and has ``cost`` None.
- ``cost`` is USD at the profile's prices, None when a price is unknown.
- ``totals``: ``calls`` (every call), ``failed``, ``cancelled``, the token sums, and
  ``cost``: the sum over the calls that have usage, None if one of those has cost None.
- Never raises on a log :func:`~jupyter_agent.trace.log.read_log` accepted.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jupyter_agent.core.loop.start import START_KEY, StartAnswer
from jupyter_agent.effects import CONFIG_GET, HTTP_POST
from jupyter_agent.llm import anthropic, openai
from jupyter_agent.llm.chat import ADAPTERS, Adapter
from jupyter_agent.llm.profiles import Profile, cost_usd, get_profile
from jupyter_agent.llm.tiers import Tier, tier_from_config
from jupyter_agent.messages import LLMReply, Usage, usage_to_json
from jupyter_agent.trace.effect_steps import effect_status
from jupyter_agent.trace.log import LoggedEffect, TraceFile, pair_effects

__all__ = ["USAGE_KEYS", "call_attempts", "run_stats"]

#: The token keys of a call and of the totals (the seed's JSON names).
USAGE_KEYS = ("in", "out", "cacheRead", "cacheWrite", "reasoning")

_TIER_PREFIX = "llm.tier."
_PROFILE_PREFIX = "llm.profile."
_BY_WIRE: dict[str, Adapter] = {
    "anthropic": anthropic,
    "openai-chat": openai,
    "openai-responses": openai,
}


@dataclass
class _Scope:
    """What the config told one parent scope so far: its tier and profile overrides."""

    tier_name: str | None = None
    tier_data: Any = None
    profiles: dict[str, Any] = field(default_factory=dict)


def call_attempts(data: Any, error: Mapping[str, Any] | None) -> int | None:
    """How many tries an ``http.post`` took: the length of the recorded ``attempts`` list (or
    its int) of the result data, else of the error; None when neither records it."""
    for source in (data, error):
        if isinstance(source, Mapping):
            value = source.get("attempts")
            if isinstance(value, list):
                return len(value)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


def _tier(scope: _Scope) -> Tier | None:
    if scope.tier_name is None or not isinstance(scope.tier_data, Mapping):
        return None
    model = scope.tier_data.get("model")
    overrides = scope.profiles.get(model) if isinstance(model, str) else None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an unknown model's warning is the run's, not ours
            return tier_from_config(scope.tier_name, scope.tier_data, overrides)
    except Exception:  # a config the run itself could not use: no tier, stats go on
        return None


def _profile(model: str | None, scope: _Scope) -> Profile | None:
    if not model:
        return None
    overrides = scope.profiles.get(model)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return get_profile(model, overrides if isinstance(overrides, Mapping) else None)
    except Exception:
        return None


def _adapter(tier: Tier | None, intent: Any, body: Any) -> Adapter:
    if tier is not None:
        return ADAPTERS[tier.provider]
    wire = intent.get("wire") if isinstance(intent, Mapping) else None
    if isinstance(wire, str) and wire in _BY_WIRE:
        return _BY_WIRE[wire]
    # No tier and no wire: tell the two wire families apart by the body's own tag.
    if isinstance(body, Mapping) and body.get("object") in ("chat.completion", "response"):
        return openai
    return anthropic


def _parse(adapter: Adapter, body: Any) -> LLMReply | None:
    if not isinstance(body, dict):
        return None
    try:
        return adapter.parse_reply(body)
    except Exception:  # a malformed body is a failed call, never a failed stats page
        return None


def _call(effect: LoggedEffect, scope: _Scope) -> dict[str, Any]:
    assert effect.result is not None
    result = effect.result
    data = result.data
    tier = _tier(scope)
    intent = effect.data
    request = intent.get("json") if isinstance(intent, Mapping) else None
    asked = request.get("model") if isinstance(request, Mapping) else None
    status = effect_status(effect)
    http_status = data.get("status") if isinstance(data, Mapping) else None
    http_status = http_status if isinstance(http_status, int) else None
    reply: LLMReply | None = None
    error: str | None = None
    if status == "failed":
        err = result.error or {}
        error = str(err.get("message") or err.get("type") or err.get("error") or "failed")
    elif status == "ok":
        if http_status is not None and http_status >= 400:
            status, error = "failed", f"HTTP {http_status}"
        else:
            body = data.get("json") if isinstance(data, Mapping) else None
            reply = _parse(_adapter(tier, intent, body), body)
            if reply is None:
                status, error = "failed", "the recorded reply could not be read"
    tier_model = tier.model if tier is not None else None
    if tier_model is None and isinstance(scope.tier_data, Mapping):
        raw = scope.tier_data.get("model")
        tier_model = raw if isinstance(raw, str) else None
    model = (reply.model if reply is not None else None) or tier_model or asked
    usage = reply.usage if reply is not None else Usage()
    cost: float | None = None
    if reply is not None:
        profile = tier.profile if tier is not None else _profile(tier_model or asked, scope)
        cost = cost_usd(profile, usage) if profile is not None else None
    return {
        "seq": effect.seq,
        "tier": scope.tier_name,
        "model": model if isinstance(model, str) else None,
        **usage_to_json(usage),
        "cost": cost,
        "status": status,
        "attempts": call_attempts(data, result.error),
        "nested": effect.parent is not None,
        "http_status": http_status,
        "error": error,
        "_usage": reply is not None,
    }


def _totals(calls: list[dict[str, Any]]) -> dict[str, Any]:
    totals: dict[str, Any] = {key: sum(c[key] for c in calls) for key in USAGE_KEYS}
    priced = [c["cost"] for c in calls if c["_usage"]]
    totals["cost"] = None if any(c is None for c in priced) else float(sum(priced))
    totals["calls"] = len(calls)
    totals["failed"] = sum(1 for c in calls if c["status"] == "failed")
    totals["cancelled"] = sum(1 for c in calls if c["status"] == "cancelled")
    return totals


def run_stats(trace: TraceFile) -> dict[str, Any]:
    """``{run_id, calls, totals}`` of a run's model calls (see the module docstring)."""
    scopes: dict[int | None, _Scope] = {}
    calls: list[dict[str, Any]] = []
    for effect in pair_effects(trace):
        if effect.result is None:
            continue
        scope = scopes.setdefault(effect.parent, _Scope())
        if effect.name == CONFIG_GET and isinstance(effect.data, Mapping):
            key = str(effect.data.get("key") or "")
            if key == START_KEY and effect.result.error is None:  # v7: one read
                answer = StartAnswer.from_json(effect.result.data)
                scope.tier_name, scope.tier_data = answer.tier_name, answer.tier
                model = (answer.tier or {}).get("model")
                if isinstance(model, str):
                    scope.profiles[model] = answer.profile
            elif key.startswith(_TIER_PREFIX) and effect.result.error is None:
                scope.tier_name = key[len(_TIER_PREFIX) :]
                scope.tier_data = effect.result.data
            elif key.startswith(_PROFILE_PREFIX) and effect.result.error is None:
                scope.profiles[key[len(_PROFILE_PREFIX) :]] = effect.result.data
        elif effect.name == HTTP_POST:
            calls.append(_call(effect, scope))
    totals = _totals(calls)
    for call in calls:
        del call["_usage"]
    return {"run_id": trace.run_id, "calls": calls, "totals": totals}
