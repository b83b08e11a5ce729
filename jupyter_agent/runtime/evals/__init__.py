"""Evals: a suite of cases (messages and their checks) run as runs of their own, tallied
and reported as a notebook (``POST agent/evals``, ``jupyter agent eval``). Imports
runtime/loop (the fed runs a rerun is made of), runtime/runs (the run service: programs,
configs, recorded runs), runtime/notebook (safe paths, the trace folder's writer), trace/
(a recorded run's turn, notebook nodes) and core/; used by server/ (the handlers) and
runtime/assembly, which builds the service at its first use through :func:`builder`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from jupyter_agent.runtime.evals.service import EvalService
    from jupyter_agent.runtime.notebook.exports import NotebookWriter
    from jupyter_agent.runtime.runs.run_service import RunService

__all__ = ["builder"]


def builder(
    runs: RunService, notebooks: NotebookWriter, root_dir: str
) -> Callable[[], EvalService]:
    """What builds the evals service when called: its modules are imported then, not
    with this package."""

    def build() -> EvalService:
        from jupyter_agent.runtime.evals.service import EvalService

        return EvalService(runs=runs, notebooks=notebooks, root_dir=root_dir)

    return build
