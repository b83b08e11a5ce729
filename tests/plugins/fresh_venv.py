"""A fresh clone and a fresh venv, as a new user has them: what the packaging test and
``scripts/newcomer`` both start from."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["REPO", "copy_work_tree", "venv_env"]

REPO = Path(__file__).resolve().parents[2]


def copy_work_tree(dest: Path) -> None:
    """Copy the files git tracks, plus new files it would track (not ignored ones)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        check=True,
        capture_output=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        src = REPO / rel
        if "node_modules" in Path(rel).parts or not src.is_file():
            continue  # deleted from the work tree but still in the index, or not a file
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)


def venv_env(venv: Path, home: Path) -> dict[str, str]:
    """The environment of an activated ``venv``, with Jupyter's folders under ``home``
    and no provider key."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"}
        and not k.startswith(("ANTHROPIC", "OPENAI", "JUPYTER_"))
    }
    env["VIRTUAL_ENV"] = str(venv)
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        env[name] = str(home / name.lower())
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_ROOT_USER_ACTION"] = "ignore"
    return env
