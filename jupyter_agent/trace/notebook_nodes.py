"""The nbformat side of the notebook export: typed builders, recorded outputs, one validation.

:mod:`jupyter_agent.trace.notebook` builds the cells of a run; this module holds what turns
them into a valid nbformat v4 notebook: cells in the exact shape of nbformat's
``new_code_cell`` / ``new_markdown_cell`` (without its slow per-cell check), recorded
outputs kept as recorded (:func:`output_node`), the whole notebook validated once
(:func:`notebook_of`: a recorded output that breaks the schema becomes a stderr note), the
agent kernel's ``kernelspec`` and ``language_info`` (:data:`KERNELSPEC`), and the atomic
write (:func:`write_notebook`).
"""

from __future__ import annotations

import copy
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import nbformat
from nbformat import NotebookNode, v4

__all__ = [
    "KERNELSPEC",
    "count_of",
    "from_dict",
    "inline_code",
    "new_code_cell",
    "new_markdown_cell",
    "new_output",
    "notebook_of",
    "output_node",
    "sh_source",
    "write_notebook",
]

KERNELSPEC: Final = {
    "name": "jupyter-agent",
    "display_name": "Python (agent)",
    "language": "python",
}
# What the agent kernel reports in kernel_info (IPython's, for this interpreter: the
# kernelspec runs agent kernels with the server's Python). JupyterLab writes the kernel's
# language_info into a notebook it opens: the same value leaves the notebook unmodified.
_LANGUAGE_INFO: Final = {
    "name": "python",
    "version": sys.version.split()[0],
    "mimetype": "text/x-python",
    "codemirror_mode": {"name": "ipython", "version": sys.version_info[0]},
    "pygments_lexer": "ipython3",
    "nbconvert_exporter": "python",
    "file_extension": ".py",
}
# nbformat is untyped: its builders, typed once here.
_new_notebook: Callable[..., NotebookNode] = v4.new_notebook
new_output: Callable[..., NotebookNode] = v4.new_output
from_dict: Callable[[Any], Any] = nbformat.from_dict
_validate: Callable[[NotebookNode], None] = nbformat.validate
_write: Callable[..., None] = nbformat.write
_check_output: Callable[[NotebookNode, str], None] = v4.nbbase.validate
_node: Callable[..., NotebookNode] = NotebookNode


def new_code_cell(
    source: str, *, id: str, execution_count: int | None = None, metadata: dict[str, Any]
) -> NotebookNode:
    """What ``nbformat.v4.new_code_cell`` builds, without its per-cell validation.

    nbformat checks a single cell through jsonschema (about 0.4 ms a cell, 2.5x the whole
    export); the notebook is checked once instead, through fastjsonschema (:func:`notebook_of`).
    """
    return _node(
        id=id,
        cell_type="code",
        metadata=_node(metadata),
        execution_count=execution_count,
        source=source,
        outputs=[],
    )


def new_markdown_cell(source: str, *, id: str, metadata: dict[str, Any]) -> NotebookNode:
    """What ``nbformat.v4.new_markdown_cell`` builds, without its per-cell validation."""
    return _node(id=id, cell_type="markdown", metadata=_node(metadata), source=source)


_OUTPUT_TYPES: Final = frozenset({"stream", "display_data", "execute_result", "error"})


def sh_source(command: str, timeout_s: float | None = None) -> str:
    """The Python source that re-runs a bash command in the agent kernel (binds ``sh.last``)."""
    if timeout_s is None:
        return f"sh({command!r})"
    timeout = int(timeout_s) if float(timeout_s).is_integer() else timeout_s
    return f"sh({command!r}, timeout={timeout!r})"


def count_of(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def output_node(raw: Any) -> NotebookNode:
    """A recorded output as a NotebookNode (shape checked later, with the whole notebook)."""
    if isinstance(raw, dict) and raw.get("output_type") in _OUTPUT_TYPES:
        node: NotebookNode = from_dict(raw)
        return node
    return _unrecognised(raw)


def _unrecognised(raw: Any) -> NotebookNode:
    kind = raw.get("output_type") if isinstance(raw, dict) else type(raw).__name__
    text = f"[jupyter-agent: unrecognised output {kind!r}]\n"
    return new_output("stream", name="stderr", text=text)


def _repair_outputs(cells: list[NotebookNode]) -> None:
    """Replace each output that fails nbformat's schema with an :func:`_unrecognised` note.

    Only run when the whole notebook failed validation: checking outputs one by one goes
    through the slow jsonschema path, checking the notebook once through fastjsonschema.
    """
    for cell in cells:
        if cell.cell_type != "code":
            continue
        for i, output in enumerate(cell.outputs):
            try:
                _check_output(output, output.output_type)
            except (nbformat.ValidationError, TypeError, ValueError):
                cell.outputs[i] = _unrecognised(output)


def inline_code(text: str) -> str:
    """Inline code that survives backticks in ``text``."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def notebook_of(cells: list[NotebookNode], meta: dict[str, Any]) -> NotebookNode:
    """The notebook of ``cells``, validated once (bad recorded outputs become notes)."""
    nb = _new_notebook(
        metadata=from_dict(
            {
                "kernelspec": dict(KERNELSPEC),
                "language_info": copy.deepcopy(_LANGUAGE_INFO),
                "jupyter_agent": meta,
            }
        ),
    )
    nb.cells = cells  # after the builder, so the notebook is validated once, here
    try:
        _validate(nb)
    except nbformat.ValidationError:
        _repair_outputs(nb.cells)
        _validate(nb)  # still invalid: a bug here, not a bad log; let it raise
    return nb


def write_notebook(nb: NotebookNode, path: str | os.PathLike[str]) -> None:
    """Validate ``nb`` and write it to ``path`` (nbformat v4, UTF-8; never signed).

    Written to a temp file beside ``path`` then renamed, so a reader never sees half a file.
    Raises :class:`nbformat.ValidationError` (nothing written) for an invalid notebook.
    """
    _validate(nb)
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            _write(nb, fh, version=4)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
