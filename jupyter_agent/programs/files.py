"""A deployed program's files: the rules they follow, their content hash, reading a source
path, and the materialised copy in the cache dir.

Files kept: ``*.py *.json *.md *.jsonl *.txt``, UTF-8 text, not hidden, not under
``__pycache__``; at most :data:`MAX_FILES` files and :data:`MAX_BYTES` in all; relative
POSIX paths without ``..``. :func:`check_files` refuses anything else (the REST path);
:func:`read_source` skips it (the CLI reading a folder).

The content hash (:func:`content_hash`) is the sha256 of ``b"jupyter-agent program\\0" +
family + b"\\0"`` followed, for each file in path order, by ``path + b"\\0" + len + b"\\0" +
bytes + b"\\0"`` (``len`` the byte length in decimal): the same files give the same hash on
every machine, and a version is identified by it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Final

from jupyter_agent.exceptions import ProgramRefused

__all__ = [
    "MAX_BYTES",
    "MAX_FILES",
    "SUFFIXES",
    "check_files",
    "content_hash",
    "materialise",
    "read_materialised",
    "read_source",
]

#: The file kinds a program may carry.
SUFFIXES: Final = (".py", ".json", ".md", ".jsonl", ".txt")
#: At most this many files ...
MAX_FILES: Final = 64
#: ... and this many bytes (UTF-8) in all.
MAX_BYTES: Final = 1_000_000
#: The file the cache dir keeps beside a version's files (not one of them).
META: Final = "meta.json"
_PART_RE: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def _path_problem(path: str) -> str | None:
    """Why ``path`` is not a file a program may carry (None when it may)."""
    if not isinstance(path, str) or not path or "\\" in path or path.startswith("/"):
        return "not a relative POSIX path"
    parts = PurePosixPath(path).parts
    if any(p in ("..", ".") for p in path.split("/")) or not parts:
        return "a path may not hold '..' or '.'"
    if any(p.startswith(".") for p in parts):
        return "hidden files are not kept"
    if path == META:
        return f"{META} is the program cache's own file: use program.json"
    if "__pycache__" in parts:
        return "__pycache__ is not kept"
    if not all(_PART_RE.fullmatch(p) for p in parts):
        return "use letters, digits, '_', '-' and '.' in names"
    if not path.endswith(SUFFIXES):
        return f"only {' '.join('*' + s for s in SUFFIXES)} files are kept"
    return None


def check_files(files: Any) -> dict[str, str]:
    """``files`` (``{path: text}``) as a checked dict; ProgramRefused naming the first
    path that breaks a rule, or the limit passed."""
    if not isinstance(files, Mapping) or not files:
        raise ProgramRefused("files: give at least program.py ({path: text})")
    if len(files) > MAX_FILES:
        raise ProgramRefused(f"files: {len(files)} files, at most {MAX_FILES}")
    total = 0
    out: dict[str, str] = {}
    for path, body in files.items():
        problem = _path_problem(path)
        if problem is not None:
            raise ProgramRefused(f"{str(path)[:200]!r}: {problem}")
        if not isinstance(body, str):
            raise ProgramRefused(f"{path}: the content must be text")
        try:
            total += len(body.encode("utf-8"))
        except UnicodeEncodeError:
            raise ProgramRefused(f"{path}: not valid UTF-8 text") from None
        if "\0" in body:
            raise ProgramRefused(f"{path}: not text (a NUL byte)")
        out[path] = body
    if total > MAX_BYTES:
        raise ProgramRefused(f"files: {total} bytes, at most {MAX_BYTES}")
    return dict(sorted(out.items()))


def content_hash(family: str, files: Mapping[str, str]) -> str:
    """The full sha256 hex of a version of ``family`` made of ``files``."""
    digest = hashlib.sha256(b"jupyter-agent program\0" + family.encode() + b"\0")
    for path in sorted(files):
        data = files[path].encode("utf-8")
        digest.update(path.encode() + b"\0" + str(len(data)).encode() + b"\0" + data + b"\0")
    return digest.hexdigest()


def read_source(source: Path) -> dict[str, str]:
    """The files of a program at ``source``: a ``.py`` file becomes ``program.py``; a
    folder gives every file the rules keep (others are skipped). ProgramRefused when
    nothing usable is there or a kept file is not UTF-8 text."""
    if source.is_file():
        if source.suffix != ".py":
            raise ProgramRefused(f"{source.name}: deploy a .py file or a folder")
        return {"program.py": _read_text(source, "program.py")}
    if not source.is_dir():
        raise ProgramRefused(f"{source}: no such file or folder")
    files: dict[str, str] = {}
    for path in sorted(source.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(source).as_posix()
        if _path_problem(rel) is None:
            files[rel] = _read_text(path, rel)
    if not files:
        raise ProgramRefused(f"{source}: no program files in the folder")
    return files


def _read_text(path: Path, name: str) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ProgramRefused(f"{name}: not UTF-8 text") from None
    except OSError as exc:
        raise ProgramRefused(f"{name}: cannot read it ({exc.strerror})") from None


def materialise(
    cache_dir: Path, full_hash: str, files: Mapping[str, str], meta: Mapping[str, Any]
) -> Path:
    """Write ``files`` and ``meta.json`` to ``{cache_dir}/{full_hash}/`` (atomic: a temp
    folder renamed into place; an existing folder is kept as it is: same hash, same
    files) and return that folder. OSError when the cache dir cannot be written."""
    target = cache_dir / full_hash
    if (target / META).is_file():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=f".{full_hash[:12]}-", dir=cache_dir))
    try:
        for rel, body in files.items():
            path = temp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")
        (temp / META).write_text(json.dumps(dict(meta), indent=1, sort_keys=True), encoding="utf-8")
        try:
            os.rename(temp, target)
        except OSError:
            if not (target / META).is_file():  # not a concurrent writer's win: a failure
                raise
    finally:
        if temp.exists():
            shutil.rmtree(temp, ignore_errors=True)
    return target


def read_materialised(folder: Path) -> tuple[dict[str, str], dict[str, Any]] | None:
    """The files and the meta of a materialised version (None when the folder has no
    ``meta.json``). Files the rules do not keep (``__pycache__``) are skipped."""
    try:
        meta = json.loads((folder / META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    files: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_file() and rel != META and _path_problem(rel) is None:
            files[rel] = path.read_text(encoding="utf-8")
    return files, meta if isinstance(meta, dict) else {}
