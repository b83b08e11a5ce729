"""The private Jupyter folders of a test's server subprocess, and the environment naming
them (so a test server never reads or writes the machine's own Jupyter config and data)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["jupyter_dirs", "jupyter_env"]

_NAMES = ("config", "data", "runtime", "ipython", "root")


def jupyter_dirs(base: Path) -> dict[str, Path]:
    """``config``, ``data``, ``runtime``, ``ipython`` and ``root`` under ``base``, made."""
    dirs = {name: base / name for name in _NAMES}
    for folder in dirs.values():
        folder.mkdir(parents=True, exist_ok=True)
    return dirs


def jupyter_env(dirs: dict[str, Path]) -> dict[str, str]:
    """This process's environment with Jupyter's folders pointed at ``dirs``."""
    return {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(dirs["config"]),
        "JUPYTER_DATA_DIR": str(dirs["data"]),
        "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]),
        "IPYTHONDIR": str(dirs["ipython"]),
    }
