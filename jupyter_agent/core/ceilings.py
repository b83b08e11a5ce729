"""A run's limits and budgets: :class:`Ceilings`, the value of ``config.get {"key":
"ceilings"}``, read by the loop (its ceilings, approvals and history budget), the digest
(its budgets) and the host (which builds it from the admin's config). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jupyter_agent.codec import load

__all__ = ["Ceilings"]


@dataclass(frozen=True, kw_only=True)
class Ceilings:
    """The per-run limits and budgets, from ``config.get {"key": "ceilings"}``."""

    max_model_calls: int = 40
    max_cells: int = 60
    max_wall_s: float = 900.0
    max_cost_usd: float = 2.0
    cell_timeout_s: float = 120.0
    bash_enabled: bool = True
    history_budget_tokens: int = 50_000
    value_budget_tokens: int = 600
    total_budget_tokens: int = 3_000
    #: Which cells wait for the person (``toolcaller@v5``, :mod:`jupyter_agent.core.loop.approval`):
    #: ``none``, ``writes`` or ``every_cell``; absent from older recorded configs (none).
    approval: str = "none"

    @classmethod
    def from_json(cls, data: Any) -> Ceilings:
        """Build from the config value (by field name); unknown keys are ignored, missing ones
        default, a value of the wrong type raises ValueError; a non-mapping gives the
        defaults (a recorded dict, or the run's read-only ceilings mapping alike)."""
        if not isinstance(data, Mapping):
            return cls()
        return load(cls, dict(data), by_name=True)
