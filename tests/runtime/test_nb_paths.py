"""Which notebook paths the notebook app (and the proposals) accept: real files, real
symlinks in a temporary root."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_notebook

from jupyter_agent.exceptions import PathRefused
from jupyter_agent.runtime.nb_paths import notebook_path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    base = tmp_path / "root"
    (base / "work").mkdir(parents=True)
    nbformat.write(new_notebook(), base / "work" / "a.ipynb")
    (base / ".hidden").mkdir()
    nbformat.write(new_notebook(), base / ".hidden" / "b.ipynb")
    (tmp_path / "out").mkdir()
    nbformat.write(new_notebook(), tmp_path / "out" / "c.ipynb")
    return base


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("work/a.ipynb", "work/a.ipynb"),
        ("/work/a.ipynb", "work/a.ipynb"),
        ("./work/./a.ipynb", "work/a.ipynb"),
        ("new/not-yet.ipynb", "new/not-yet.ipynb"),  # a file to come is judged by its folder
    ],
)
def test_clean_paths(root: Path, raw: str, clean: str) -> None:
    assert notebook_path(raw, str(root)) == clean


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("../x.ipynb", "outside the server's root ('..')"),
        ("work/../../x.ipynb", "outside the server's root ('..')"),
        (".hidden/b.ipynb", "hidden"),
        ("work/.ipynb_checkpoints/a-checkpoint.ipynb", "hidden"),
        ("work/a.txt", "not a notebook"),
        ("work/.ipynb", "hidden"),
        ("", "non-empty string"),
        ("a\x00.ipynb", "not a clean contents path"),
        ("x" * 300 + ".ipynb", "too long"),
    ],
)
def test_refused_paths(root: Path, raw: str, why: str) -> None:
    with pytest.raises(PathRefused) as info:
        notebook_path(raw, str(root))
    assert why in info.value.message
    assert info.value.reason == "path_refused"


def test_symlinks_are_followed(root: Path) -> None:
    os.symlink(root.parent / "out", root / "outlink")
    os.symlink(root.parent / "out" / "c.ipynb", root / "c.ipynb")
    os.symlink(root / ".hidden" / "b.ipynb", root / "b.ipynb")
    os.symlink(root / "work" / "a.ipynb", root / "alias.ipynb")
    (root / "data.csv").write_text("a,b\n")
    os.symlink(root / "data.csv", root / "data.ipynb")
    for raw, why in [
        ("outlink/c.ipynb", "outside the server's root (a symlink)"),
        ("c.ipynb", "outside the server's root (a symlink)"),
        ("b.ipynb", "hidden file (a symlink)"),
        ("data.ipynb", "not a notebook"),
    ]:
        with pytest.raises(PathRefused, match=r"\(a symlink\)|not a notebook") as info:
            notebook_path(raw, str(root))
        assert why in info.value.message
    assert notebook_path("alias.ipynb", str(root)) == "alias.ipynb"  # inside: fine


def test_a_non_string_is_refused(root: Path) -> None:
    with pytest.raises(PathRefused, match="non-empty string"):
        notebook_path(["work/a.ipynb"], str(root))
