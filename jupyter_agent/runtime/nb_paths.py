"""Which notebook paths the agent may read or propose edits to.

:func:`notebook_path` is the one check (``notebook.read`` / ``notebook.propose``, and the
proposals' apply): a contents path is ``/``-separated and relative to the server's root
(a leading ``/`` is the root; empty and ``.`` components are dropped). It is refused with
:class:`~jupyter_agent.exceptions.PathRefused` (``path_refused``), naming the path and why,
when it:

- is not a non-empty string, or holds a backslash, NUL or a ``..`` component;
- has a hidden component (a name starting with ``.``: ``.secret/a.ipynb``,
  ``.ipynb_checkpoints/...``);
- does not end in ``.ipynb``;
- is too long for the file system (a name over 255 bytes or a path over 4096);
- resolves (every symlink followed: ``os.path.realpath``) outside the resolved root, or
  to a hidden name inside it; a file that does not exist yet is judged by its folder.

No other user's file: the root is the server's (one Jupyter user's) contents root. The
answer is the clean relative path the contents manager is given.
"""

from __future__ import annotations

import os
from typing import Any, Final

from jupyter_agent.exceptions import BadRequest, PathRefused
from jupyter_agent.runtime.contents import check_relative_path, shown

__all__ = ["SUFFIX", "notebook_path"]

#: The suffix of the files the notebook app reads and edits.
SUFFIX: Final = ".ipynb"


def _refused(raw: Any, why: str) -> PathRefused:
    what = shown(raw) if isinstance(raw, str) else type(raw).__name__
    return PathRefused(f"notebook path {what} is refused: {why}")


def _inside(root: str, target: str) -> bool:
    return target == root or target.startswith(root.rstrip(os.sep) + os.sep)


def notebook_path(raw: Any, root_dir: str) -> str:
    """The clean contents path of the notebook ``raw`` names, or ``PathRefused`` (see the
    module docstring). Reads the file system (symlinks); cheap, but not on a hot loop."""
    if not isinstance(raw, str) or not raw.strip():
        raise _refused(raw, "a notebook path is a non-empty string like 'analysis/sales.ipynb'")
    try:
        clean = check_relative_path(raw, "notebook path")
    except BadRequest as err:
        if ".." in raw.replace("\\", "/").split("/"):
            raise _refused(raw, "it points outside the server's root ('..')") from None
        if "too long" in str(err):
            raise _refused(raw, "it is too long for the server's file system") from None
        raise _refused(raw, "it is not a clean contents path (no backslash, NUL or '//')") from None
    parts = clean.split("/")
    if any(p.startswith(".") for p in parts):
        raise _refused(raw, "it is hidden (a name starting with '.')")
    if not clean.endswith(SUFFIX) or clean == SUFFIX:
        raise _refused(raw, f"it is not a notebook (a {SUFFIX} file)")
    root = os.path.realpath(root_dir or ".")
    target = os.path.realpath(os.path.join(root, *parts))
    if not _inside(root, target):
        raise _refused(raw, "it leads outside the server's root (a symlink)")
    inner = os.path.relpath(target, root).split(os.sep)
    if any(p.startswith(".") and p != "." for p in inner):
        raise _refused(raw, "it leads to a hidden file (a symlink)")
    if not target.endswith(SUFFIX):
        raise _refused(raw, f"it leads to a file that is not a notebook ({SUFFIX})")
    return clean
