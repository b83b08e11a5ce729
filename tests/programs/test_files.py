"""Program files: the rules, the content hash, reading a source path, the cache dir."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from jupyter_agent.exceptions import ProgramRefused
from jupyter_agent.programs.files import (
    check_files,
    content_hash,
    materialise,
    read_materialised,
    read_source,
)


def test_content_hash_is_the_documented_one() -> None:
    files = {"program.py": "x = 1\n", "a/b.json": "{}"}
    digest = hashlib.sha256(b"jupyter-agent program\0toolcaller\0")
    for path in ("a/b.json", "program.py"):
        data = files[path].encode()
        digest.update(path.encode() + b"\0" + str(len(data)).encode() + b"\0" + data + b"\0")
    assert content_hash("toolcaller", files) == digest.hexdigest()
    assert content_hash("toolcaller", dict(reversed(files.items()))) == digest.hexdigest()
    assert content_hash("history", files) != digest.hexdigest()
    assert content_hash("toolcaller", {**files, "program.py": "x = 2\n"}) != digest.hexdigest()


@pytest.mark.parametrize(
    ("files", "words"),
    [
        ({}, "at least program.py"),
        ({"/etc/x.py": ""}, "relative POSIX"),
        ({"a/../x.py": ""}, "'..'"),
        ({"a\\x.py": ""}, "relative POSIX"),
        ({".git/x.py": ""}, "hidden"),
        ({"__pycache__/x.py": ""}, "__pycache__"),
        ({"x.so": ""}, "only *.py"),
        ({"x.py": 3}, "must be text"),
        ({"x.py": "\0"}, "NUL"),
        ({"x.py": "\ud800"}, "UTF-8"),
        ({f"m{i}.py": "" for i in range(65)}, "at most 64"),
        ({"x.txt": "é" * 500_001}, "at most 1000000"),
    ],
)
def test_files_rules_refuse_naming_the_path(files: dict[str, object], words: str) -> None:
    with pytest.raises(ProgramRefused, match=None) as info:
        check_files(files)
    assert words in str(info.value)
    assert info.value.reason == "program_refused"


def test_read_source_file_and_folder(tmp_path: Path) -> None:
    one = tmp_path / "mine.py"
    one.write_text("def program(r, c):\n    yield\n")
    assert read_source(one) == {"program.py": one.read_text()}
    folder = tmp_path / "pkg"
    (folder / "sub").mkdir(parents=True)
    (folder / "program.py").write_text("A")
    (folder / "sub" / "util.py").write_text("B")
    (folder / "notes.md").write_text("C")
    (folder / "image.png").write_bytes(b"\x89")
    (folder / ".env").write_text("SECRET=1")
    assert read_source(folder) == {"notes.md": "C", "program.py": "A", "sub/util.py": "B"}
    (tmp_path / "empty").mkdir()
    with pytest.raises(ProgramRefused, match="no program files"):
        read_source(tmp_path / "empty")
    (tmp_path / "x.txt").write_text("x")
    with pytest.raises(ProgramRefused, match=r"a \.py file or a folder"):
        read_source(tmp_path / "x.txt")


def test_materialise_is_atomic_and_idempotent(tmp_path: Path) -> None:
    files = {"program.py": "A\n", "lib/x.py": "B\n"}
    digest = content_hash("toolcaller", files)
    folder = materialise(tmp_path, digest, files, {"name": "toolcaller", "version": 5})
    assert folder == tmp_path / digest
    assert read_materialised(folder) == (files, {"name": "toolcaller", "version": 5})
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "program.cpython.pyc").write_bytes(b"\0")
    assert materialise(tmp_path, digest, files, {}) == folder  # kept as it is
    assert read_materialised(folder) == (files, {"name": "toolcaller", "version": 5})
    assert [p.name for p in tmp_path.iterdir()] == [digest]  # no temp folder left
    assert read_materialised(tmp_path / "nothing") is None
