"""Load the agent's spaces (folders of markdown) into the JSON snapshot the loop reads.

Three layers, later ones overriding earlier ones file by file (by relative name):

1. the package defaults, ``jupyter_agent/spaces/`` (``_soul.md``, ``_core.md``, ``_any.md``);
2. the user's space, ``{data_dir}/spaces/``;
3. the project's space, ``{root_dir}/.jupyter-agent/``.

A file ``skills/x.md`` becomes key ``skills/x``; only ``*.md`` files count, hidden files and
folders are skipped. A ``repos.json`` in a layer (a list of ``{name, path | url,
description?}``) adds repos, later layers replacing a repo of the same name. A file that
cannot be read or decoded as UTF-8, or is larger than :data:`MAX_FILE_BYTES`, is skipped
with a logged warning; loading never fails because of one bad file.

The snapshot (the value of ``config.get {"key": "spaces"}``, see core.prompt)::

    {"agent_name", "agent_space", "files": {key: text}, "paths": {key: path},
     "repos": [...], "memory_categories": [...], "env_prefix", "home"}

``agent_space`` is the folder where the agent's own notes belong: the project's space when
it exists, else the user's.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable

__all__ = ["MAX_FILE_BYTES", "PROJECT_SPACE", "load_spaces"]

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 256 * 1024
PROJECT_SPACE = ".jupyter-agent"
_REPOS_FILE = "repos.json"


def _walk(node: Traversable, prefix: str = "") -> Iterator[tuple[str, Traversable]]:
    """Yield (relative name, file) for every non-hidden file under ``node``, sorted."""
    try:
        children = sorted(node.iterdir(), key=lambda c: c.name)
    except OSError as exc:
        log.warning("jupyter-agent: cannot list space folder %s: %s", prefix or node, exc)
        return
    for child in children:
        if child.name.startswith(".") or child.name == "__pycache__":
            continue
        rel = f"{prefix}{child.name}"
        if isinstance(child, Path) and child.is_symlink() and child.is_dir():
            continue  # no symlinked folders: no loops, no escaping the space
        if child.is_dir():
            yield from _walk(child, rel + "/")
        elif child.is_file():
            yield rel, child


def _read_text(file: Traversable, where: str) -> str | None:
    try:
        data = bytes(file.read_bytes())
    except OSError as exc:
        log.warning("jupyter-agent: skipping unreadable space file %s: %s", where, exc)
        return None
    if len(data) > MAX_FILE_BYTES:
        log.warning(
            "jupyter-agent: skipping space file %s: %d bytes (limit %d)",
            where,
            len(data),
            MAX_FILE_BYTES,
        )
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        log.warning("jupyter-agent: skipping space file %s: not UTF-8 (%s)", where, exc)
        return None


def _read_repos(file: Traversable, where: str) -> list[dict[str, Any]]:
    text = _read_text(file, where)
    if text is None:
        return []
    try:
        value = json.loads(text)
    except ValueError as exc:
        log.warning("jupyter-agent: skipping %s: not JSON (%s)", where, exc)
        return []
    if not isinstance(value, list):
        log.warning("jupyter-agent: skipping %s: expected a list of repos", where)
        return []
    repos = []
    for item in value:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            repos.append(
                {k: v for k, v in item.items() if k in ("name", "path", "url", "description")}
            )
        else:
            log.warning("jupyter-agent: skipping a repo without a name in %s", where)
    return repos


def _layers(data_dir: Path, root_dir: Path | None) -> list[tuple[Traversable, str | None]]:
    """The space folders in override order, each with its real path (None inside a zip)."""
    package = resources.files("jupyter_agent") / "spaces"
    layers: list[tuple[Traversable, str | None]] = [
        (package, str(package) if isinstance(package, Path) else None)
    ]
    user = Path(data_dir) / "spaces"
    if user.is_dir():
        layers.append((user, str(user)))
    if root_dir is not None:
        project = Path(root_dir) / PROJECT_SPACE
        if project.is_dir():
            layers.append((project, str(project)))
    return layers


def load_spaces(
    *,
    data_dir: Path,
    root_dir: Path | None,
    agent_name: str = "agent",
    memory_categories: Sequence[str] = (),
) -> dict[str, Any]:
    """Read the three space layers and return the snapshot (see the module docstring).

    ``data_dir`` is the agent's data folder (``{jupyter_data_dir}/jupyter_agent``);
    ``root_dir`` the Jupyter server's root (None: no project layer). ``memory_categories``
    are the categories the memory store holds, passed through sorted.
    """
    files: dict[str, str] = {}
    paths: dict[str, str] = {}
    repos: dict[str, dict[str, Any]] = {}
    for folder, real in _layers(data_dir, root_dir):
        for rel, file in _walk(folder):
            where = os.path.join(real, rel) if real else rel
            if rel == _REPOS_FILE:
                for repo in _read_repos(file, where):
                    repos[repo["name"]] = repo
                continue
            if not rel.endswith(".md"):
                continue
            text = _read_text(file, where)
            if text is None:
                continue
            key = rel[: -len(".md")]
            files[key] = text
            if real:
                paths[key] = where
            else:
                paths.pop(key, None)
    user_space = Path(data_dir) / "spaces"
    project_space = Path(root_dir) / PROJECT_SPACE if root_dir is not None else None
    agent_space = project_space if project_space and project_space.is_dir() else user_space
    return {
        "agent_name": agent_name,
        "agent_space": str(agent_space),
        "files": dict(sorted(files.items())),
        "paths": dict(sorted(paths.items())),
        "repos": [repos[name] for name in sorted(repos)],
        "memory_categories": sorted(set(memory_categories)),
        "env_prefix": sys.prefix,
        "home": str(Path.home()),
    }
