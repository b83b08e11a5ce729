"""The data packages agent kernels can import, with their versions, for the prompt.

Agent kernels run in the server's Python environment (the ``jupyter-agent`` kernelspec
starts them with it), so what is installed here is what a cell can import. The system
prompt's runtime context names the key data packages found (:data:`DATA_PACKAGES`) with
their versions: the model writes code for the pandas that is there, and does not try to
import one that is not. The value travels in the spaces snapshot (``kernel_packages``),
so a run's log records it and a replay renders the same prompt.

Reading package metadata takes tens of milliseconds: :func:`kernel_packages` is cached for
the process, and the server warms it in a worker thread at start
(:func:`warm_kernel_packages`), never on the event loop of a turn.
"""

from __future__ import annotations

import functools
from importlib import metadata
from typing import Final

__all__ = ["DATA_PACKAGES", "kernel_packages", "warm_kernel_packages"]

#: The distributions named when installed, in the order the prompt lists them.
DATA_PACKAGES: Final = (
    "numpy",
    "pandas",
    "polars",
    "pyarrow",
    "duckdb",
    "scipy",
    "statsmodels",
    "scikit-learn",
    "matplotlib",
    "seaborn",
    "plotly",
    "altair",
    "sympy",
    "requests",
)


@functools.cache
def kernel_packages() -> tuple[tuple[str, str], ...]:
    """``((name, version), ...)`` of the :data:`DATA_PACKAGES` installed here."""
    found = []
    for name in DATA_PACKAGES:
        try:
            version = metadata.version(name)
        except Exception:  # not installed, or broken metadata: not named
            continue
        if isinstance(version, str) and version:
            found.append((name, version))
    return tuple(found)


def warm_kernel_packages() -> None:
    """Read the versions once (blocking: call it in a worker thread at start)."""
    kernel_packages()
