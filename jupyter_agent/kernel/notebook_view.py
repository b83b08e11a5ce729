"""The object ``notebook.read()`` returns in a cell: a notebook as the host read it.

The host answers ``notebook.read`` with a JSON value (see
:mod:`jupyter_agent.runtime.notebook.app`): ``{path, revision, via, last_modified, digest,
tokens, cut, cells}``; :class:`NotebookView` wraps it:

- ``repr(nb)`` (and ``str``) is the budgeted digest
  (:mod:`jupyter_agent.core.notebook.digest`); as a cell's last value its mime bundle
  carries :data:`~jupyter_agent.core.notebook.digest.DIGEST_MIME`, which tells the cell
  digest to show it whole (it is budgeted already) instead of stubbing it.
- ``nb.cells``: one dict per cell, in order, ``{id, cell_type, source, outputs,
  execution_count}``; ``outputs`` are texts (images as ``<image/png ... KB>``).
- ``nb.output(cell_id, n=1)``: the whole text of the cell's ``n``-th output (from 1, as
  in the digest); :class:`OutputNotFound` (a ``LookupError``) says what exists.
- ``nb.cell(cell_id)``: the cell's dict; ``nb.path``, ``nb.revision`` (a short hash of the
  cells' ids, types and sources at the read), ``nb.via`` (``live`` or ``contents``),
  ``nb.cut`` (the host cut some text to its bounds: the texts end with a marker).
"""

from __future__ import annotations

from typing import Any

from jupyter_agent.core.notebook.digest import DIGEST_MIME

__all__ = ["NotebookView", "OutputNotFound"]


class OutputNotFound(LookupError):
    """``nb.output`` / ``nb.cell`` was asked for a cell or an output that does not exist."""


class NotebookView:
    """A notebook as ``notebook.read()`` read it (see the module docstring)."""

    def __init__(self, value: dict[str, Any]) -> None:
        self._value = value
        cells = value.get("cells")
        self.cells: list[dict[str, Any]] = list(cells) if isinstance(cells, list) else []
        self.path = str(value.get("path") or "")
        self.revision = str(value.get("revision") or "")
        self.via = str(value.get("via") or "")
        self.cut = bool(value.get("cut"))
        self.digest = str(value.get("digest") or "")

    def cell(self, cell_id: str) -> dict[str, Any]:
        """The cell whose id is ``cell_id``."""
        for cell in self.cells:
            if cell.get("id") == cell_id:
                return cell
        known = ", ".join(str(c.get("id")) for c in self.cells[:30]) or "none"
        more = f" (and {len(self.cells) - 30} more)" if len(self.cells) > 30 else ""
        raise OutputNotFound(f"no cell {cell_id!r} in {self.path} (cells: {known}{more})")

    def output(self, cell_id: str, n: int = 1) -> str:
        """The whole text of output ``n`` (from 1) of cell ``cell_id``."""
        outputs = self.cell(cell_id).get("outputs") or []
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= len(outputs):
            raise OutputNotFound(
                f"cell {cell_id!r} has {len(outputs)} output(s); n={n!r} is out of range "
                "(numbered from 1)"
            )
        return str(outputs[n - 1])

    def to_json(self) -> dict[str, Any]:
        """The value the host sent, as it sent it."""
        return dict(self._value)

    def __len__(self) -> int:
        return len(self.cells)

    def __repr__(self) -> str:
        return self.digest or f"<notebook {self.path}: {len(self.cells)} cells>"

    __str__ = __repr__

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        marker = {"path": self.path, "revision": self.revision, "cells": len(self.cells)}
        return {"text/plain": repr(self), DIGEST_MIME: marker}
