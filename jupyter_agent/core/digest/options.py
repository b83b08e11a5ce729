"""How a digest is budgeted and what it may show: :class:`DigestOptions`, read by the digest
of a cell (:mod:`.render`), its parts (:mod:`.parts`) and tracebacks (:mod:`.tracebacks`), and
built by the loop and the driver from a run's ceilings, spaces and model profile. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jupyter_agent.core.ceilings import Ceilings
    from jupyter_agent.llm.profiles import Profile

__all__ = ["DigestOptions"]


@dataclass(frozen=True, kw_only=True)
class DigestOptions:
    """How a digest is budgeted and what it may show (see :mod:`.render`'s docstring)."""

    value_budget_tokens: int = 600
    total_budget_tokens: int = 3000
    vision: bool = False
    env_prefix: str = ""
    home: str = ""
    max_images: int = 4

    @classmethod
    def from_config(
        cls, ceilings: Ceilings, spaces: Mapping[str, Any], profile: Profile | None = None
    ) -> DigestOptions:
        """The options of a run: budgets from its ``ceilings``, the ``<env>`` prefix and
        ``~`` from its ``spaces`` (``env_prefix``, ``home``), vision from the model's
        ``profile`` (none given: no vision)."""
        return cls(
            value_budget_tokens=ceilings.value_budget_tokens,
            total_budget_tokens=ceilings.total_budget_tokens,
            vision=profile.vision if profile is not None else False,
            env_prefix=str(spaces.get("env_prefix", "")),
            home=str(spaces.get("home", "")),
        )
