"""Live notebooks: the shared (real-time collaboration) document of an open notebook.

With jupyter-collaboration installed and its server extension (``jupyter_server_ydoc``)
enabled, a notebook open in JupyterLab has a *room* holding its shared model (a
``jupyter_ydoc.YNotebook`` over a ``pycrdt.Doc``); every open view and every RTC user sees
that model, and the room itself saves it to the file (after its ``document_save_delay``).
Editing the file behind its back would be an out-of-band change the room answers by
reloading: edits to an open notebook go through its shared model.

Contracts:

- :meth:`LiveDocs.get` answers the live document of a contents path when a room is open
  (``YDocExtension.get_document(..., copy=False)``, never creating a room), else None: no
  extension, RTC disabled, no room, anything failing in the extension (logged).
- :meth:`LiveNotebook.cells` reads the cells with their ids (also in a pre-4.5 notebook,
  whose ids the shared model keeps) as plain nbformat dicts; :meth:`LiveNotebook.notebook`
  the whole notebook (nbformat 4.5 or later, since its cells carry ids).
- :meth:`LiveNotebook.write` turns the cells into ``new_cells`` in ONE transaction of the
  shared document (one update every client receives): cells not in ``new_cells`` are
  deleted, new ones inserted, a changed cell is updated in place (its source as a text
  change, its outputs cleared) or rebuilt with the same id, a moved one deleted and
  re-created (as jupyter_ydoc moves cells, for yjs 13 clients). Synchronous: nothing else
  runs on the event loop between the caller's read and this write.
- :meth:`LiveNotebook.state` is the document's state vector: equal before and after a
  pause means nobody changed the document meanwhile.

Nothing here imports jupyter_server or the extension: :class:`LiveDocs` is given a
callable that answers the running extension app (``server/app.py`` finds it in the
server's extension manager).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Sequence
from typing import Any, Final

__all__ = ["ORIGIN", "LiveDocs", "LiveNotebook"]

log = logging.getLogger(__name__)

#: The origin of the transactions the agent makes (what an observer of the doc sees).
ORIGIN: Final = "jupyter-agent"
_GRANULAR: Final = frozenset({"source", "outputs", "execution_count"})


def _as_int(value: Any) -> Any:
    """Yjs numbers are floats: ``3.0`` -> ``3``, recursively."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _as_int(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_int(v) for v in value]
    return value


def _cell_py(ycell: Any) -> dict[str, Any]:
    cell = _as_int(ycell.to_py())
    assert isinstance(cell, dict)
    cell.pop("execution_state", None)
    if cell.get("cell_type") in ("raw", "markdown") and not cell.get("attachments", True):
        del cell["attachments"]
    if isinstance(cell.get("source"), list):
        cell["source"] = "".join(cell["source"])
    return cell


class LiveNotebook:
    """The shared model of one open notebook (a ``jupyter_ydoc.YNotebook``)."""

    def __init__(self, doc: Any, path: str) -> None:
        self.doc = doc
        self.path = path

    def cells(self) -> list[dict[str, Any]]:
        """The cells, in order, with their ids."""
        return [_cell_py(ycell) for ycell in self.doc.ycells]

    def notebook(self) -> dict[str, Any]:
        """The notebook as an nbformat dict (cells with ids: minor version 5 at least)."""
        nb = dict(self.doc.get())
        nb["cells"] = self.cells()
        if int(nb.get("nbformat", 4)) == 4:
            nb["nbformat_minor"] = max(int(nb.get("nbformat_minor", 5)), 5)
        return nb

    def state(self) -> bytes:
        """The document's state vector (changes whenever anything changes it)."""
        return bytes(self.doc.ydoc.get_state())

    def write(self, new_cells: Sequence[dict[str, Any]]) -> None:
        """Make the cells ``new_cells`` in one transaction (see the module docstring)."""
        ycells = self.doc.ycells
        keep = {c["id"] for c in new_cells}
        with self.doc.ydoc.transaction(origin=ORIGIN):
            for i in reversed(range(len(ycells))):
                if ycells[i].get("id") not in keep:
                    del ycells[i]
            for i, cell in enumerate(new_cells):
                if i < len(ycells) and ycells[i].get("id") == cell["id"]:
                    self._update(i, cell)
                    continue
                for j in range(i + 1, len(ycells)):
                    if ycells[j].get("id") == cell["id"]:
                        del ycells[j]
                        break
                ycells.insert(i, self.doc.create_ycell(copy.deepcopy(cell)))
            if len(ycells) > len(new_cells):  # never, as every kept id is placed once
                del ycells[len(new_cells) :]

    def _update(self, index: int, cell: dict[str, Any]) -> None:
        ycell = self.doc.ycells[index]
        old = _cell_py(ycell)
        if old == cell:
            return
        differ = {k for k in set(old) | set(cell) if old.get(k) != cell.get(k)}
        granular = (
            set(old) == set(cell)
            and differ <= _GRANULAR
            and ("outputs" not in differ or cell.get("outputs") == [])
        )
        if not granular:
            self.doc.set_cell(index, value=copy.deepcopy(cell))
            return
        if "source" in differ:
            self.doc.set_cell(index, source=cell["source"])
        if "outputs" in differ:
            ycell["outputs"].clear()
        if "execution_count" in differ:
            ycell["execution_count"] = cell["execution_count"]


class LiveDocs:
    """The live documents of the running collaboration extension (see the module
    docstring); ``extension`` answers the ``YDocExtension`` app or None."""

    def __init__(self, extension: Callable[[], Any] | None = None) -> None:
        self._extension = extension

    @property
    def enabled(self) -> bool:
        """True when the collaboration extension runs in this server."""
        return self._extension is not None and self._extension() is not None

    async def get(self, path: str) -> LiveNotebook | None:
        """The live notebook of contents path ``path`` if its room is open, else None."""
        app = self._extension() if self._extension is not None else None
        if app is None or getattr(app, "disable_rtc", False):
            return None
        try:
            doc = await app.get_document(
                path=path, content_type="notebook", file_format="json", copy=False
            )
        except Exception:  # the extension's trouble (no file id manager, ...): no live doc
            log.warning("jupyter-agent: no live document for %r", path, exc_info=True)
            return None
        if doc is None or not hasattr(doc, "ycells"):
            return None
        return LiveNotebook(doc, path)

    async def read_notebook(self, path: str) -> dict[str, Any] | None:
        """The nbformat dict of the live notebook at ``path`` (:meth:`LiveNotebook.notebook`),
        or None when no room is open (read the file then)."""
        live = await self.get(path)
        return live.notebook() if live is not None else None
