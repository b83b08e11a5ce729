"""The admin's per-model profile overrides (``c.JupyterAgent.profiles``), checked and turned
into the ``RunConfig.profiles`` a run reads as ``config.get {"key": "llm.profile.<model>"}``.

Per model name, only ``context_window`` and ``max_output`` (positive ints), ``tool_mode``
(``native``, ``fenced`` or ``xml``) and ``prices`` (USD per million tokens:
``{in, out, cache_read, cache_write}``, each a number >= 0 or null) may be set: enough to
describe a local model, or to force a small window in a test.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from jupyter_agent.llm.profiles import TOOL_MODES

__all__ = ["PROFILE_KEYS", "PRICE_KEYS", "admin_profiles"]

PROFILE_KEYS: Final = frozenset({"context_window", "max_output", "tool_mode", "prices"})
PRICE_KEYS: Final = {
    "in": "price_in",
    "out": "price_out",
    "cache_read": "price_cache_read",
    "cache_write": "price_cache_write",
}


def admin_profiles(value: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The overrides as profile fields, per model; ValueError naming the bad key or value."""
    out: dict[str, dict[str, Any]] = {}
    for model, spec in value.items():
        where = f"profiles[{model!r}]"
        if not isinstance(model, str) or not model or not isinstance(spec, Mapping):
            raise ValueError(f"{where} must map a model name to a dict")
        unknown = sorted(set(spec) - PROFILE_KEYS)
        if unknown:
            raise ValueError(
                f"{where} has unknown key(s) {', '.join(map(str, unknown))}; "
                f"known: {', '.join(sorted(PROFILE_KEYS))}"
            )
        fields: dict[str, Any] = {}
        for key in ("context_window", "max_output"):
            if key in spec:
                number = spec[key]
                if isinstance(number, bool) or not isinstance(number, int) or number <= 0:
                    raise ValueError(f"{where}[{key!r}] must be a positive int, not {number!r}")
                fields[key] = number
        if "tool_mode" in spec:
            if spec["tool_mode"] not in TOOL_MODES:
                raise ValueError(
                    f"{where}['tool_mode'] must be one of {', '.join(sorted(TOOL_MODES))}, "
                    f"not {spec['tool_mode']!r}"
                )
            fields["tool_mode"] = spec["tool_mode"]
        if "prices" in spec:
            fields.update(_prices(where, spec["prices"]))
        out[model] = fields
    return out


def _prices(where: str, prices: Any) -> dict[str, float | None]:
    if not isinstance(prices, Mapping):
        raise ValueError(f"{where}['prices'] must be a dict")
    unknown = sorted(set(prices) - set(PRICE_KEYS))
    if unknown:
        raise ValueError(
            f"{where}['prices'] has unknown key(s) {', '.join(map(str, unknown))}; "
            f"known: {', '.join(PRICE_KEYS)}"
        )
    fields: dict[str, float | None] = {}
    for key, price in prices.items():
        ok = price is None or (not isinstance(price, bool) and isinstance(price, (int, float)))
        if not ok or (price is not None and price < 0):
            raise ValueError(f"{where}['prices'][{key!r}] must be a number >= 0, not {price!r}")
        fields[PRICE_KEYS[key]] = None if price is None else float(price)
    return fields
