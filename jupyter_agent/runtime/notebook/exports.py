"""Notebooks the app writes into the contents root: trace notebooks and chat exports.

Contracts:

- Everything the app writes on its own (``POST agent/runs/{id}/notebook`` and ``POST
  agent/chats/{id}/notebook`` without a ``path``) goes under one folder, the trace folder
  (``JupyterAgent.trace_dir``: a contents path, default ``agent-traces``; ``""`` is the
  root). :func:`check_folder` is what the trait accepts (the path's text); at each write
  the folder, and each name tried in it, is resolved in the contents root
  (:mod:`.safe_paths`): a folder that leads out of the root (a symlink) is ``BadRequest``
  (``bad_path``), a name that does is passed over like a taken one.
- File names come from the chat's title through :func:`safe_stem`: no path separators, no
  leading dot or dash, no control or bidi-control characters, no characters Windows
  refuses, at most :data:`MAX_STEM_CHARS` characters and :data:`MAX_STEM_BYTES` UTF-8
  bytes; never empty (the fallback is the run's or the chat's id).
- A notebook ``path`` a person gives (:meth:`NotebookWriter.write_at`) is resolved the same
  way: ``bad_path`` when it leads out of the root, is hidden or not ``.ipynb``.
- A name is never written over: the first free one of ``name.ipynb``, ``name-2.ipynb``,
  ``name-3.ipynb``, ... is taken. One exception keeps "open the trace" idempotent: a file
  whose notebook is exactly the one about to be written is answered as is (``created``
  false), so nothing a person changed is ever lost and no copy is made for nothing.
- One :class:`NotebookWriter` per server serialises its writes (an asyncio lock), so two
  exports at the same moment never pick the same name. (The contents API has no exclusive
  create: a file another process makes between the check and the write is the one race
  left.)
- Saved through the contents manager (:class:`~jupyter_agent.runtime.notebook.contents.Contents`),
  so the file is byte for byte what JupyterLab would save: a load/save round trip changes
  nothing. Its usual signing rule applies: a notebook with rich outputs (HTML, JavaScript,
  images) is not signed, so those outputs of model-written code are untrusted on open.
"""

from __future__ import annotations

import asyncio
import posixpath
import re
import unicodedata
from collections.abc import Callable
from typing import Any, Final

import nbformat

from jupyter_agent.exceptions import BadRequest, Conflict
from jupyter_agent.runtime.notebook.contents import Contents, shown
from jupyter_agent.runtime.notebook.safe_paths import SafePath, clean_path

__all__ = [
    "DEFAULT_FOLDER",
    "MAX_STEM_BYTES",
    "MAX_STEM_CHARS",
    "NotebookWriter",
    "check_folder",
    "safe_stem",
    "trace_stem",
]

#: The default trace folder: visible, at the contents root.
DEFAULT_FOLDER: Final = "agent-traces"
MAX_STEM_CHARS: Final = 80
#: Leaves room for ``-NNNN.ipynb`` within the 255 bytes most file systems allow a name.
MAX_STEM_BYTES: Final = 200
_MAX_TRIES: Final = 1000

_writes: Callable[..., str] = nbformat.writes
_from_dict: Callable[[Any], Any] = nbformat.from_dict

# Path separators become a dash; what Windows refuses in a name an underscore.
_SEPARATORS: Final = re.compile(r"[/\\]+")
_REFUSED: Final = re.compile(r'[<>:"|?*]')
_BIDI: Final = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_WINDOWS_RESERVED: Final = frozenset(
    {"CON", "PRN", "AUX", "NUL"} | {f"{p}{n}" for p in ("COM", "LPT") for n in range(1, 10)}
)
# What must not end a name: a space or a dot (Windows drops them), a joiner or a variation
# selector left dangling by the length cut.
_TRAILING: Final = " .\u200d\ufe0e\ufe0f"


def check_folder(value: str) -> str:
    """The trace folder as a clean contents path (``""``: the root), or ValueError.

    Relative to the contents root, ``/``-separated, no ``..``, no hidden component (its
    text only: where it leads is judged at each write).
    """
    try:
        return clean_path(value, what="the trace folder", allow_root=True)
    except BadRequest as exc:
        raise ValueError(exc.message) from None


def safe_stem(title: str, fallback: str, *, suffix: str = "") -> str:
    """A file name stem (no extension) made from ``title`` + ``suffix``; ``fallback`` alone
    when nothing is left of the title.

    See the module docstring for the rules. The title is cut first, so the suffix (a turn
    number, say) survives a long title. ``fallback`` (an id) goes through the rules too.
    """
    stem = _clean(title, room=len(suffix), room_bytes=len(suffix.encode("utf-8")))
    if stem:
        return stem + suffix
    return _clean(fallback) or "notebook"


def _clean(text: str, *, room: int = 0, room_bytes: int = 0) -> str:
    text = unicodedata.normalize("NFC", text)
    kept = []
    for char in text:
        category = unicodedata.category(char)
        if category in ("Cc", "Zl", "Zp") or char.isspace():
            kept.append(" ")  # a newline or a tab in a title is a word break
        elif category in ("Cs", "Co", "Cn") or char in _BIDI:
            continue  # lone surrogates cannot be encoded; bidi controls spoof the name
        else:
            kept.append(char)
    text = _REFUSED.sub("_", _SEPARATORS.sub("-", "".join(kept)))
    text = " ".join(text.split())
    text = text.lstrip(" .-")  # no hidden file, no name read as a command-line option
    text = text[: MAX_STEM_CHARS - room]
    while len(text.encode("utf-8")) > MAX_STEM_BYTES - room_bytes:
        text = text[:-1]
    text = text.rstrip(_TRAILING)
    if text.split(".")[0].upper() in _WINDOWS_RESERVED:
        text += "_"
    return text


def trace_stem(title: str, run_id: str, turn_number: int | None) -> str:
    """A run's trace notebook stem: ``<chat title> - turn <k>`` (``<title> - <run id>``
    when the turn is not known yet); the run id alone when the chat has no title."""
    suffix = f" - turn {turn_number}" if turn_number else f" - {run_id}"
    return safe_stem(title, run_id, suffix=suffix)


def _file_text(nb: Any) -> str:
    """The notebook as the contents manager writes it (transient fields stripped)."""
    return _writes(_from_dict(nb), version=4)


class NotebookWriter:
    """Writes notebooks through the server's contents manager (sync or async kind, or None).

    Every refusal is a domain error: ``NotSupported`` (``no_contents``) without a contents
    manager, ``Conflict`` (``exists``) for a taken path, ``BadRequest`` (``bad_path``) when
    the contents manager refuses the path.
    """

    def __init__(self, contents_manager: Any, folder: str = DEFAULT_FOLDER) -> None:
        self.contents = (
            contents_manager
            if isinstance(contents_manager, Contents)
            else Contents(contents_manager)
        )
        self.folder = check_folder(folder)
        self._lock = asyncio.Lock()

    @property
    def contents_manager(self) -> Any:
        """The server's contents manager (None when it has none)."""
        return self.contents.manager

    def check(self) -> Any:
        """The contents manager; ``NotSupported`` when the server has none."""
        return self.contents.writer()

    def target(self, raw: str) -> SafePath:
        """A notebook ``path`` a person gave, resolved in the contents root: ``BadRequest``
        (``bad_path``) outside it, hidden or not ``.ipynb`` (see :mod:`.safe_paths`)."""
        return self.contents.resolve(raw, "'path'", notebook=True)

    async def write_new(self, stem: str, nb: dict[str, Any]) -> tuple[str, bool]:
        """Write ``nb`` as ``{folder}/{stem}.ipynb``, or the first free ``{stem}-N.ipynb``.

        ``stem`` must come from :func:`safe_stem`. Answers ``(path, created)``: an existing
        file holding exactly this notebook is answered with ``created`` false, unwritten.
        """
        self.check()
        self.contents.resolve(self.folder, "the trace folder", folder=True)
        wanted = await asyncio.to_thread(_file_text, nb)  # a whole notebook: off the loop
        async with self._lock:
            for n in range(1, _MAX_TRIES + 1):
                name = f"{stem}.ipynb" if n == 1 else f"{stem}-{n}.ipynb"
                path = posixpath.join(self.folder, name) if self.folder else name
                try:
                    safe = self.contents.resolve(path, "'path'", notebook=True)
                except BadRequest:
                    continue  # a link out of the root (or to a hidden file): never ours
                if await self.contents.dir_exists(safe.target):
                    continue
                if not await self.contents.file_exists(safe.target):
                    await self.contents.save_notebook(safe, nb)
                    return path, True
                if await self._holds(safe.target, wanted):
                    return path, False
        raise Conflict(f"no free name for {stem!r} in {self.folder or 'the root'}")

    async def write_at(self, path: str | SafePath, nb: dict[str, Any], *, overwrite: bool) -> str:
        """Write ``nb`` at the contents path ``path`` (resolved by :meth:`target` unless it
        was); ``Conflict`` if it exists and not ``overwrite``. Answers the clean path."""
        self.check()
        safe = path if isinstance(path, SafePath) else self.target(path)
        async with self._lock:
            if not overwrite and await self.contents.file_exists(safe.confirm()):
                raise Conflict(f"{shown(safe.path)} exists; send overwrite: true to replace it")
            await self.contents.save_notebook(safe, nb)
        return safe.path

    async def _holds(self, path: str, wanted: str) -> bool:
        try:
            notebook = await self.contents.read_notebook(path)
            return await asyncio.to_thread(_file_text, notebook) == wanted
        except Exception:  # not a notebook, unreadable: somebody's file, never ours to reuse
            return False
