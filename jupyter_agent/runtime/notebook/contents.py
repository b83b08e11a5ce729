"""Contents access: the server's contents manager behind one small async API.

Contracts:

- Every contents path is resolved by :func:`~jupyter_agent.runtime.notebook.safe_paths.resolve`
  (:meth:`Contents.resolve`) against the contents root (the manager's ``root_dir``, else
  the server's): ``/``-separated, relative to the root, no ``..``, no hidden name, no
  symlink leading out of the root; refused with ``BadRequest`` (``bad_path``). The
  manager is handed the resolved ``target`` (no symlink in it) right after the path was
  resolved again and found unchanged (:meth:`~.safe_paths.SafePath.confirm`). A message
  naming a path shows at most :data:`SHOWN_CHARS` of its characters.
- :class:`Contents` wraps the server's contents manager, sync or async kind (both exist;
  every call goes through ``jupyter_core.utils.ensure_async``). The server may have none:
  then reading attachments is a ``BadRequest`` and writing a ``NotSupported``.
- :meth:`Contents.read_attachment` reads one file as a File part ``{name, media_type,
  data}`` (base64), at most ``max_bytes``; a folder, a missing or unreadable file is a
  ``BadRequest`` (``bad_attachments``), a larger one ``attachment_too_large``. The path is
  confirmed before and after the bytes are read (bytes read while a link was swapped are
  dropped). The contents manager's own errors (tornado ``HTTPError`` 404/400,
  ``OSError``) never leave this module.
- :meth:`Contents.save_notebook` answers a path too long once joined to the manager's
  ``root_dir`` (checked first, before any folder is made), or one the file system refuses
  as too long (``ENAMETOOLONG``), with ``BadRequest`` (``bad_path``), like any refusal of
  the contents manager, not with its 500. Each folder it makes and the file itself are
  written at the confirmed target.

Names and folders of the notebooks the app writes are :mod:`.exports`' business; it writes
through :class:`Contents`.
"""

from __future__ import annotations

import base64
import errno
import mimetypes
import os
import posixpath
from typing import Any, Final

from jupyter_core.utils import ensure_async

from jupyter_agent.exceptions import BadRequest, NotSupported
from jupyter_agent.runtime.notebook.safe_paths import (
    MAX_NAME_BYTES,
    MAX_PATH_BYTES,
    NOTEBOOK_SUFFIX,
    SHOWN_CHARS,
    SafePath,
    resolve,
    shown,
)

__all__ = [
    "MAX_NAME_BYTES",
    "MAX_PATH_BYTES",
    "SHOWN_CHARS",
    "Contents",
    "shown",
]

_TOO_LONG: Final = "the path is too long for the server's file system"


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _name_too_long(exc: BaseException) -> bool:
    # The contents manager wraps the OSError in its own 500 (raise ... from e).
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno == errno.ENAMETOOLONG:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _attachment_error(path: str, why: str) -> BadRequest:
    return BadRequest(f"attachment {shown(path)} {why}", reason="bad_attachments")


class Contents:
    """The server's contents manager (or None: a server without one), made async."""

    def __init__(
        self, manager: Any, *, root_dir: str | None = None, max_bytes: int = 10 * 1024 * 1024
    ) -> None:
        self.manager = manager
        self.max_bytes = max_bytes
        own = getattr(manager, "root_dir", None)
        #: The contents root paths are resolved in: the manager's, else ``root_dir``.
        self.root_dir: str = own if isinstance(own, str) and own else (root_dir or os.getcwd())

    def resolve(
        self, raw: Any, what: str, *, notebook: bool = False, folder: bool = False
    ) -> SafePath:
        """``raw`` resolved in the contents root (:func:`.safe_paths.resolve`): refused
        with ``BadRequest`` (``bad_path``). ``notebook``: it must end in ``.ipynb``;
        ``folder``: the root itself (``""``) is accepted."""
        suffix = NOTEBOOK_SUFFIX if notebook else ""
        return resolve(raw, self.root_dir, what=what, suffix=suffix, allow_root=folder)

    @property
    def available(self) -> bool:
        """True when the server has a contents manager."""
        return self.manager is not None

    def writer(self) -> Any:
        """The contents manager to write with; ``NotSupported`` (``no_contents``) if none."""
        if self.manager is None:
            raise NotSupported("no contents manager to write with", reason="no_contents")
        return self.manager

    # --- reading -----------------------------------------------------------------------

    async def read_attachment(self, raw: str) -> dict[str, Any]:
        """The file at contents path ``raw`` as a File part (see the module docstring)."""
        safe = self.resolve(raw, "attachment")
        path = safe.path
        if self.manager is None:
            raise BadRequest(
                "attachments are not available on this server", reason="bad_attachments"
            )
        limit = self.max_bytes
        too_large = BadRequest(
            f"attachment {shown(path)} is over {limit} bytes", reason="attachment_too_large"
        )
        try:
            model = await ensure_async(self.manager.get(safe.confirm(), content=False))
            if model.get("type") == "directory":
                raise _attachment_error(path, "is a folder")
            size = model.get("size")
            if isinstance(size, int) and size > limit:
                raise too_large
            model = await ensure_async(
                self.manager.get(safe.confirm(), content=True, type="file", format="base64")
            )
        except BadRequest:
            raise
        except Exception as exc:  # the contents manager's 404/400 (tornado HTTPError), OSError
            status = getattr(exc, "status_code", None)
            raise _attachment_error(
                path, "not found" if status == 404 else "cannot be read"
            ) from None
        safe.confirm()  # the bytes came from where the path led before: else dropped
        data = base64.b64decode(str(model.get("content") or ""))
        if len(data) > limit:
            raise too_large
        media_type = model.get("mimetype") or mimetypes.guess_type(path)[0]
        return {
            "name": posixpath.basename(path),
            "media_type": media_type or "application/octet-stream",
            "data": base64.b64encode(data).decode("ascii"),
        }

    async def read_notebook(self, path: str) -> Any:
        """The notebook JSON at ``path`` (the contents manager's errors pass through)."""
        model = await ensure_async(self.writer().get(path, content=True, type="notebook"))
        return model["content"]

    async def file_exists(self, path: str) -> bool:
        """True when ``path`` is a file."""
        return bool(await ensure_async(self.writer().file_exists(path)))

    async def dir_exists(self, path: str) -> bool:
        """True when ``path`` is a folder."""
        return bool(await ensure_async(self.writer().dir_exists(path)))

    # --- writing -----------------------------------------------------------------------

    async def save_notebook(self, path: str | SafePath, nb: dict[str, Any]) -> None:
        """Save ``nb`` at ``path`` (a contents path, resolved here, or one resolved
        already), making its missing folders first.

        A refusal of the contents manager (a hidden path, a file where a folder should be:
        its 4xx) or of the file system (a path too long) is a ``BadRequest``
        (``bad_path``); anything else passes through. A path longer than
        :data:`MAX_PATH_BYTES` once joined to the manager's ``root_dir`` is refused before
        anything is made; so is a path that changed since it was resolved (a symlink).
        """
        cm = self.writer()
        safe = path if isinstance(path, SafePath) else self.resolve(path, "'path'", notebook=True)
        shown_path = shown(safe.path)
        root = getattr(cm, "root_dir", None)
        if isinstance(root, str) and _size(os.path.join(root, safe.target)) > MAX_PATH_BYTES:
            raise BadRequest(f"cannot write {shown_path}: {_TOO_LONG}", reason="bad_path")
        folder = posixpath.dirname(safe.confirm())
        current = ""
        try:
            for part in folder.split("/") if folder else ():
                current = f"{current}/{part}" if current else part
                if not await ensure_async(cm.dir_exists(current)):
                    safe.confirm()
                    await ensure_async(cm.save({"type": "directory"}, current))
            model = {"type": "notebook", "format": "json", "content": nb}
            await ensure_async(cm.save(model, safe.confirm()))
        except BadRequest:
            raise
        except Exception as exc:
            status = getattr(exc, "status_code", None)
            message = getattr(exc, "log_message", None) or type(exc).__name__
            if _name_too_long(exc):  # the file system's own limit (a symlinked root, say)
                message = _TOO_LONG
            elif not (isinstance(status, int) and 400 <= status < 500):
                raise
            raise BadRequest(f"cannot write {shown_path}: {message}", reason="bad_path") from None
