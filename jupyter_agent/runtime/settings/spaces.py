"""Load the agent's spaces (folders of markdown) into the JSON snapshot the loop reads.

Four layers, later ones overriding earlier ones file by file (by relative name):

1. the package defaults, ``jupyter_agent/spaces/`` (``_soul.md``, ``_core.md``, ``_any.md``);
2. the agent's space (one per agent the server hosts, :mod:`.agents`; none for
   the default agent unless the admin gave it one);
3. the user's space, ``{data_dir}/spaces/``;
4. the project's space, ``{root_dir}/.jupyter-agent/``.

A file ``skills/x.md`` becomes key ``skills/x``; only ``*.md`` files count, hidden files and
folders are skipped. A ``repos.json`` in a layer (a list of ``{name, path | url,
description?}``) adds repos, later layers replacing a repo of the same name. A file that
cannot be read or decoded as UTF-8, or is larger than :data:`MAX_FILE_BYTES`, is skipped
with a logged warning; loading never fails because of one bad file.

The snapshot (the value of ``config.get {"key": "spaces"}``, see core.prompt)::

    {"agent_name", "agent_space", "files": {key: text}, "paths": {key: path},
     "repos": [...], "memory_categories": [...], "env_prefix", "home",
     "kernel_packages": [[name, version], ...]}

``agent_name`` is the agent's name (the prompt's runtime context; turns record it as
``fromAgent``). ``agent_space`` is the folder where the agent's own notes belong: the
project's space when it exists, else the user's (the agent's space is the admin's, not a
place to write notes).

:class:`SpacesCache` keeps one snapshot per (agent, folders) and answers it again while no
layer changed: a change is seen by a walk of ``stat`` calls (names, sizes, mtimes) of the
three folders outside the package, far cheaper than reading every file; the package's
own folder is part of the install and is never walked again.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_agent.runtime.settings.packages import kernel_packages

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable

__all__ = ["MAX_FILE_BYTES", "PROJECT_SPACE", "SpacesCache", "load_spaces"]

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


def _folders(data_dir: Path, root_dir: Path | None, agent_space: Path | None) -> list[Path]:
    """The layer folders outside the package, in override order (present or not)."""
    folders = [] if agent_space is None else [Path(agent_space)]
    folders.append(Path(data_dir) / "spaces")
    if root_dir is not None:
        folders.append(Path(root_dir) / PROJECT_SPACE)
    return folders


def _layers(
    data_dir: Path, root_dir: Path | None, agent_space: Path | None = None
) -> list[tuple[Traversable, str | None]]:
    """The space folders in override order, each with its real path (None inside a zip)."""
    package = resources.files("jupyter_agent") / "spaces"
    layers: list[tuple[Traversable, str | None]] = [
        (package, str(package) if isinstance(package, Path) else None)
    ]
    for folder in _folders(data_dir, root_dir, agent_space):
        if folder.is_dir():
            layers.append((folder, str(folder)))
    return layers


def load_spaces(
    *,
    data_dir: Path,
    root_dir: Path | None,
    agent_name: str = "agent",
    agent_space: Path | None = None,
    memory_categories: Sequence[str] = (),
) -> dict[str, Any]:
    """Read the space layers and return the snapshot (see the module docstring).

    ``data_dir`` is the agent's data folder (``{jupyter_data_dir}/jupyter_agent``);
    ``root_dir`` the Jupyter server's root (None: no project layer); ``agent_name`` the
    agent answering and ``agent_space`` its space folder (None, or a folder that does not
    exist: no agent layer). ``memory_categories`` are the categories the memory store
    holds, passed through sorted.
    """
    files: dict[str, str] = {}
    paths: dict[str, str] = {}
    repos: dict[str, dict[str, Any]] = {}
    for folder, real in _layers(data_dir, root_dir, agent_space):
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
    notes_space = project_space if project_space and project_space.is_dir() else user_space
    return {
        "agent_name": agent_name,
        "agent_space": str(notes_space),
        "files": dict(sorted(files.items())),
        "paths": dict(sorted(paths.items())),
        "repos": [repos[name] for name in sorted(repos)],
        "memory_categories": sorted(set(memory_categories)),
        "env_prefix": sys.prefix,
        "home": str(Path.home()),
        "kernel_packages": [list(p) for p in kernel_packages()],
    }


#: A layer folder's state as :func:`_stamp` sees it: None when it is not a folder.
_Stamp = tuple[tuple[str, int, int], ...] | None


def _stamp(folder: Path) -> _Stamp:
    """Every entry under ``folder`` that :func:`_walk` would visit, with its mtime and size
    (folders included: a file added or removed changes its folder's mtime)."""
    entries: list[tuple[str, int, int]] = []

    def scan(path: str, prefix: str) -> None:
        try:
            with os.scandir(path) as it:
                children = sorted(it, key=lambda e: e.name)
        except OSError:
            entries.append((prefix or ".", -1, -1))
            return
        for child in children:
            if child.name.startswith(".") or child.name == "__pycache__":
                continue
            rel = prefix + child.name
            try:
                stat = child.stat()  # follows a symlinked file, as the read does
                is_dir = child.is_dir(follow_symlinks=False)
            except OSError:
                entries.append((rel, -1, -1))
                continue
            entries.append((rel, stat.st_mtime_ns, stat.st_size))
            if is_dir:
                scan(child.path, rel + "/")

    try:
        top = folder.stat()
    except OSError:
        return None
    if not folder.is_dir():
        return None
    entries.append((".", top.st_mtime_ns, top.st_size))
    scan(str(folder), "")
    return tuple(entries)


class SpacesCache:
    """Space snapshots kept per agent and reloaded only when a layer folder changed.

    :meth:`snapshot` takes the arguments of :func:`load_spaces` and answers what it would
    (a fresh top-level copy each time; the texts inside are shared: do not mutate them).
    It costs a ``stat`` walk of the agent's, the user's and the project's folders; the
    files are read again only when a name, size or mtime there differs from the last
    load, or when the last load saw an mtime too recent to tell a later write in the same
    clock tick apart (git's "racy" rule: such a snapshot is not reused). Thread-safe
    enough for its use: a race loads twice, never answers a mix.
    """

    #: An mtime this close to the load (ns) may hide a second write in the same tick.
    RACY_NS = 2_000_000_000

    def __init__(self) -> None:
        self._kept: dict[tuple[Any, ...], tuple[tuple[_Stamp, ...], dict[str, Any]]] = {}

    def snapshot(
        self,
        *,
        data_dir: Path,
        root_dir: Path | None,
        agent_name: str = "agent",
        agent_space: Path | None = None,
        memory_categories: Sequence[str] = (),
    ) -> dict[str, Any]:
        """The snapshot of :func:`load_spaces` for these arguments (see the class)."""
        key = (
            str(data_dir),
            None if root_dir is None else str(root_dir),
            agent_name,
            None if agent_space is None else str(agent_space),
            tuple(sorted(set(memory_categories))),
        )
        stamps = tuple(_stamp(f) for f in _folders(data_dir, root_dir, agent_space))
        kept = self._kept.get(key)
        if kept is None or kept[0] != stamps:
            loaded_at = time.time_ns()
            value = load_spaces(
                data_dir=data_dir,
                root_dir=root_dir,
                agent_name=agent_name,
                agent_space=agent_space,
                memory_categories=memory_categories,
            )
            newest = max((e[1] for s in stamps if s for e in s), default=0)
            if newest < loaded_at - self.RACY_NS:
                self._kept[key] = (stamps, value)
            else:
                self._kept.pop(key, None)
            kept = (stamps, value)
        snapshot = dict(kept[1])
        for name in ("files", "paths"):
            snapshot[name] = dict(snapshot[name])
        snapshot["repos"] = [dict(repo) for repo in snapshot["repos"]]
        snapshot["memory_categories"] = list(snapshot["memory_categories"])
        return snapshot
