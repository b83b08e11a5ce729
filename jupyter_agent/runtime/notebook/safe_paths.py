"""Contents paths, resolved once and safely: the one check of every path the agent reads
or writes in the server's contents root.

:func:`resolve` is that check. Exports (a notebook ``path``, the trace folder and the
names made in it), attachments, ``view.path`` (and the kernel's folder it gives),
``notebook.read`` / ``notebook.propose`` and a proposal's apply and undo all go through it
(through :class:`~jupyter_agent.runtime.notebook.contents.Contents` or :func:`notebook_path`).

A contents path is ``/``-separated and relative to the server's root: a leading ``/`` is
the root, empty and ``.`` components are dropped. It is refused (``BadRequest``
``bad_path``, or the ``error`` class a caller names, e.g.
:class:`~jupyter_agent.exceptions.PathRefused` for the notebook app) when it:

- is not a non-empty string (the root itself only where a folder is asked for);
- holds a backslash, a NUL, an empty name (``a//b``) or a ``..`` component;
- has a name over :data:`MAX_NAME_BYTES` or is over :data:`MAX_PATH_BYTES` in all;
- has a hidden component (a name starting with ``.``);
- does not end in the ``suffix`` asked for (``.ipynb``);
- resolves, every symlink followed (``os.path.realpath``: every component, a dangling
  link too, whose target is judged), to a place outside the real root, to a hidden name
  inside it, to the root itself where a file is asked for, to a name without the
  ``suffix``, or through a symlink loop.

The message names the path as the person gave it (cut: :func:`shown`) and why; it never
shows where a link leads outside the root.

The answer, a :class:`SafePath`, holds the clean path as given (what answers and events
show, what live documents are keyed by) and ``target``: the real path relative to the real
root, with no symlink in it. Readers and writers hand the contents manager ``target``,
right after :meth:`SafePath.confirm` resolved the path again and found the same place (a
changed answer is refused, nothing read or written). Reads confirm once more after the
bytes are in: bytes read while a link was swapped in and out are dropped.

The race left: the final :meth:`SafePath.confirm` runs on the event loop just before the
contents manager is called; a sync manager writes within the same call, an async one
(jupyter_server's default) after a hop to its worker thread. A folder of ``target``
swapped for a symlink inside that window (microseconds to a few milliseconds) is still
followed. Closing it needs an ``openat``/``O_NOFOLLOW`` walk the contents manager API does
not offer. It is acceptable: only someone who can already write inside the root can swap a
folder (the person, or the agent's kernel, which without a sandbox can write anywhere the
server can anyway), the window is tiny and not signalled to them, and ``target`` holding no
link makes every other moment safe. Resolving reads the file system (a few ``lstat`` s per
component) on the event loop, on purpose: a thread hop would widen the window.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Final

from jupyter_agent.exceptions import BadRequest, PathRefused

__all__ = [
    "MAX_NAME_BYTES",
    "MAX_PATH_BYTES",
    "NOTEBOOK_SUFFIX",
    "SHOWN_CHARS",
    "SafePath",
    "clean_path",
    "notebook_path",
    "resolve",
    "shown",
]

#: The longest file or folder name (Linux's NAME_MAX, and most file systems'), in bytes.
MAX_NAME_BYTES: Final = 255
#: The longest contents path (Linux's PATH_MAX), in bytes.
MAX_PATH_BYTES: Final = 4096
#: How much of a path a message shows.
SHOWN_CHARS: Final = 120
#: The suffix of the notebooks the app reads, edits and writes.
NOTEBOOK_SUFFIX: Final = ".ipynb"


def shown(path: str) -> str:
    """``path`` as a message shows it: its repr, cut after :data:`SHOWN_CHARS` characters."""
    if len(path) <= SHOWN_CHARS:
        return repr(path)
    return f"{path[:SHOWN_CHARS]!r}... ({len(path)} characters)"


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _refused(raw: Any, what: str, why: str, error: type[BadRequest]) -> BadRequest:
    named = f"{what} {shown(raw)}" if isinstance(raw, str) else f"{what} ({type(raw).__name__})"
    if error is BadRequest:
        return BadRequest(f"{named} is refused: {why}", reason="bad_path")
    return error(f"{named} is refused: {why}")


def clean_path(
    raw: Any,
    *,
    what: str = "path",
    suffix: str = "",
    error: type[BadRequest] = BadRequest,
    allow_root: bool = False,
) -> str:
    """The clean contents path ``raw`` names (``""``: the root, only with ``allow_root``),
    judged by its text alone (no file system): every rule of the module docstring but the
    symlink ones."""
    if not isinstance(raw, str):
        raise _refused(raw, what, "it must be a contents path like 'analysis/sales.ipynb'", error)
    # A leading "/" is the root; a trailing one only names a folder.
    text = raw.strip().strip("/") if allow_root else raw.strip().lstrip("/")
    parts = text.split("/")
    if ".." in parts:
        raise _refused(raw, what, "it points outside the server's root ('..')", error)
    if "\\" in raw or "\0" in raw or (text and "" in parts):
        why = "it is not a clean contents path (no backslash, NUL or '//')"
        raise _refused(raw, what, why, error)
    try:
        raw.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no file system can hold it
        raise _refused(raw, what, "it is not valid Unicode", error) from None
    kept = [p for p in parts if p not in ("", ".")]
    if not kept:
        if allow_root:
            return ""
        raise _refused(raw, what, "it must be a non-empty contents path", error)
    clean = "/".join(kept)
    if _size(clean) > MAX_PATH_BYTES or any(_size(p) > MAX_NAME_BYTES for p in kept):
        why = (
            f"it is too long for the server's file system: at most {MAX_NAME_BYTES} bytes "
            f"per name and {MAX_PATH_BYTES} in all"
        )
        raise _refused(raw, what, why, error)
    if any(p.startswith(".") for p in kept):
        raise _refused(raw, what, "it is hidden (a name starting with '.')", error)
    if suffix and (not clean.endswith(suffix) or kept[-1] == suffix):
        raise _refused(raw, what, f"it is not a notebook (a {suffix} file)", error)
    return clean


@dataclass(frozen=True)
class SafePath:
    """A contents path that :func:`resolve` accepted (see the module docstring)."""

    #: The clean contents path as given (``""``: the root).
    path: str
    #: The real absolute path it leads to.
    real: str
    #: ``real`` relative to the real root, ``/``-separated, no symlink in it (``""``: the
    #: root): the path the contents manager is given.
    target: str
    #: What was asked, to resolve again the same way.
    raw: str
    root_dir: str
    what: str = "path"
    suffix: str = ""
    error: type[BadRequest] = BadRequest
    allow_root: bool = False

    def confirm(self) -> str:
        """Resolve again, now; ``target`` when it leads to the same place, else refused
        (the path changed since it was checked: a symlink came or went)."""
        again = resolve(
            self.raw,
            self.root_dir,
            what=self.what,
            suffix=self.suffix,
            error=self.error,
            allow_root=self.allow_root,
        )
        if again.real != self.real:
            raise _refused(
                self.raw, self.what, "it changed while in use (a symlink came or went)", self.error
            )
        return self.target


def _inside(root: str, target: str) -> bool:
    return target == root or target.startswith(root.rstrip(os.sep) + os.sep)


def resolve(
    raw: Any,
    root_dir: str,
    *,
    what: str = "path",
    suffix: str = "",
    error: type[BadRequest] = BadRequest,
    allow_root: bool = False,
) -> SafePath:
    """``raw`` resolved in the root ``root_dir`` (see the module docstring), or refused
    with ``error`` (``BadRequest`` ``bad_path`` by default). ``what`` names the path in a
    message (``'path'``, ``attachment``, ...); ``suffix`` is the ending the path and its
    real target must have; ``allow_root``: the root itself (``""``) is a valid answer."""
    clean = clean_path(raw, what=what, suffix=suffix, error=error, allow_root=allow_root)
    root = os.path.realpath(os.path.expanduser(root_dir or "."))
    real = os.path.realpath(os.path.join(root, *clean.split("/"))) if clean else root
    if not _inside(root, real):
        raise _refused(raw, what, "it leads outside the server's root (a symlink)", error)
    target = "" if real == root else os.path.relpath(real, root).replace(os.sep, "/")
    names = target.split("/") if target else []
    if any(n.startswith(".") for n in names):
        raise _refused(raw, what, "it leads to a hidden file or folder (a symlink)", error)
    if not target and not allow_root:
        raise _refused(raw, what, "it leads to the server's root folder itself", error)
    if suffix and not target.endswith(suffix):
        raise _refused(raw, what, "it leads to a file that is not a notebook (a symlink)", error)
    step = root
    for name in names:  # realpath leaves a link it could not follow (a loop) in place
        step = os.path.join(step, name)
        if os.path.islink(step):
            raise _refused(raw, what, "it goes through a symlink loop", error)
        if not os.path.lexists(step):
            break  # the rest is yet to be made
    return SafePath(
        path=clean,
        real=real,
        target=target,
        raw=raw,
        root_dir=root_dir,
        what=what,
        suffix=suffix,
        error=error,
        allow_root=allow_root,
    )


def notebook_path(raw: Any, root_dir: str) -> SafePath:
    """The notebook the notebook app (and a proposal) reads or edits: :func:`resolve` with
    the ``.ipynb`` suffix, refused with ``PathRefused`` (``path_refused``)."""
    return resolve(raw, root_dir, what="notebook path", suffix=NOTEBOOK_SUFFIX, error=PathRefused)
