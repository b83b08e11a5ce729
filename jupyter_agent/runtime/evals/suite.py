"""An eval suite: the cases of a notebook, or of every notebook of a folder.

A suite notebook holds cases and notes. A **case** is a markdown cell followed at once by
a code cell: the markdown is the message sent to the agent (as a person would type it),
the code cell the **checks**, run in the case's agent kernel once the turn ended, with
``reply`` bound to the agent's final reply (``assert`` on the variables the agent left, on
``reply``, on the files it wrote). Any other cell is a note and is not sent. A case's
markdown cell may say more in ``metadata.jupyter_agent``: ``name`` (default
``<notebook stem>#<k>``, k from 1) and ``view`` (``{path, cell?, selection?}``, as a
message's). The agent and the checks run in the suite notebook's folder, so the data
files beside it are found by their names.

:func:`read_suite` resolves the suite's path in the contents root (no link out of it,
nothing hidden) and reads it; :func:`cases_of` is the pure part (a notebook's JSON in,
cases out). A suite with no case, an unreadable notebook or an unknown view field is a
``BadRequest`` (``bad_suite``) naming the notebook and the cell.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from jupyter_agent.exceptions import BadRequest
from jupyter_agent.runtime.notebook.safe_paths import SafePath, resolve

__all__ = ["MAX_CASES", "Case", "cases_of", "read_suite"]

#: The most cases one eval runs (times its models and repeats: :data:`MAX_RUNS`).
MAX_CASES: Final = 500
_MAX_NOTEBOOK_BYTES: Final = 20 * 1024 * 1024
_VIEW_KEYS: Final = frozenset({"path", "cell", "selection"})


@dataclass(frozen=True)
class Case:
    """One case: the message, its checks, where it runs."""

    name: str
    message: str
    checks: str
    #: The folder the agent's kernel and the checks run in (a contents path, "" the root).
    folder: str = ""
    view: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """The case as the eval's answer and its report show it."""
        return {
            "name": self.name,
            "message": self.message,
            "checks": self.checks,
            "folder": self.folder,
            "view": self.view,
        }


def _bad(text: str) -> BadRequest:
    return BadRequest(text, reason="bad_suite")


def _source(cell: Mapping[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def cases_of(nb: Mapping[str, Any], *, path: str) -> list[Case]:
    """The cases of the suite notebook ``nb`` (its JSON) found at contents path ``path``."""
    cells = nb.get("cells")
    if not isinstance(cells, list):
        raise _bad(f"{path} is not a notebook (no cells)")
    stem = posixpath.splitext(posixpath.basename(path))[0]
    folder = posixpath.dirname(path)
    found: list[Case] = []
    for index, (cell, after) in enumerate(zip(cells, [*cells[1:], None], strict=True)):
        if not isinstance(cell, Mapping) or cell.get("cell_type") != "markdown":
            continue
        if not isinstance(after, Mapping) or after.get("cell_type") != "code":
            continue
        message = _source(cell).strip()
        if not message:
            continue
        meta = (cell.get("metadata") or {}).get("jupyter_agent") or {}
        if not isinstance(meta, Mapping):
            raise _bad(f"{path}, cell {index + 1}: metadata.jupyter_agent must be an object")
        name = meta.get("name") or f"{stem}#{len(found) + 1}"
        view = meta.get("view")
        if view is not None:
            if not isinstance(view, Mapping) or set(view) - _VIEW_KEYS:
                raise _bad(
                    f"{path}, cell {index + 1}: a case's view is an object of "
                    f"{', '.join(sorted(_VIEW_KEYS))}"
                )
            view = dict(view)
        found.append(
            Case(
                name=str(name)[:200],
                message=message,
                checks=_source(after),
                folder=folder,
                view=view,
            )
        )
    return found


def _notebooks(found: SafePath, root_dir: str) -> list[SafePath]:
    """The suite's notebooks, each resolved in the root: an entry of a suite folder that
    leads out of it (a symlink) is refused as the suite itself would be."""
    where = Path(found.real)
    if not where.is_dir():
        return [found]
    names = sorted(
        p.name for p in where.iterdir() if p.suffix == ".ipynb" and not p.name.startswith(".")
    )
    return [
        resolve(posixpath.join(found.target, name), root_dir, what="suite notebook")
        for name in names
    ]


def _view(view: dict[str, Any] | None, root_dir: str, where: str) -> dict[str, Any] | None:
    """A case's view with its path resolved in the root, as a message's is."""
    if not view or "path" not in view:
        return view
    path = resolve(view["path"], root_dir, what=f"{where}: the case's view.path").path
    return {**view, "path": path}


def read_suite(raw: str, root_dir: str) -> list[Case]:
    """The cases of the suite at contents path ``raw`` (a notebook, or a folder of them:
    its ``*.ipynb``, in name order, not its subfolders). Blocking: run in a thread."""
    found = resolve(raw, root_dir, what="suite", allow_root=True)
    where = Path(found.real)
    if not where.exists():
        raise _bad(f"no suite at {found.path or '(the root)'}")
    if not where.is_dir() and where.suffix != ".ipynb":
        raise _bad(f"a suite is a notebook or a folder of them, not {found.path}")
    cases: list[Case] = []
    for notebook in _notebooks(found, root_dir):
        rel, file = notebook.target, Path(notebook.real)
        if not file.is_file():  # a folder named x.ipynb, a FIFO: nothing to read
            raise _bad(f"{rel} is not a notebook file")
        if file.stat().st_size > _MAX_NOTEBOOK_BYTES:
            raise _bad(f"{rel} is over {_MAX_NOTEBOOK_BYTES // (1024 * 1024)} MB")
        try:
            nb = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise _bad(f"{rel} cannot be read as a notebook: {exc}") from None
        if not isinstance(nb, dict):
            raise _bad(f"{rel} is not a notebook")
        for case in cases_of(nb, path=rel):
            cases.append(replace(case, view=_view(case.view, root_dir, rel)))
    if not cases:
        raise _bad(
            f"no case in {found.path or '(the root)'}: a case is a markdown cell (the "
            "message) followed by a code cell (its checks)"
        )
    if len(cases) > MAX_CASES:
        raise _bad(f"{len(cases)} cases: a suite holds at most {MAX_CASES}")
    names = [c.name for c in cases]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise _bad(f"two cases are named {dup!r}: a case's name is unique in its suite")
    return cases
