"""Programs as deployable units: references, the built-in base layer, the
deployed versions' files, loading, the deploy checks and the registry runs resolve through.

A program is a named, versioned unit with an entry point of the loop's shape: a pure
generator function ``(run_id, chat_id) -> EffectGen`` that reaches the world only through
the effect catalogue. See ``docs/programs.md``.

Imports core/ (the built-in programs), store/ (program rows), trace/ (the deploy checks'
replays) and runtime/kernels (the check process's sandbox). Used by the assembly (which
builds the deploys' service at its first use, through :func:`service_builder`),
runtime/programs, cli/, and (references, the built-ins) by store/ and trace/.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jupyter_agent.programs.registry import ProgramRegistry
    from jupyter_agent.programs.service import ProgramService

__all__ = ["service_builder"]


def service_builder(
    store: Any,
    registry: ProgramRegistry,
    pool: Any,
    *,
    timeout_s: float,
    clean: Callable[[Any], Any],
) -> Callable[[], ProgramService]:
    """What builds the deploys' service (``agent/programs``) when called, its checks
    started as ``pool``'s kernels are: the service, the deploy checks and the check
    process are imported then, not with this package (runs resolve through the registry
    alone)."""

    def build() -> ProgramService:
        from jupyter_agent.programs.check_process import CheckProcess
        from jupyter_agent.programs.service import ProgramService

        checks = CheckProcess.for_pool(pool, timeout_s=timeout_s, clean=clean)
        return ProgramService(store, registry, checks=checks)

    return build
