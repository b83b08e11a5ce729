"""The one resolver of contents paths (runtime/notebook/safe_paths.py), with real files and real
symlinks in a temporary root, and the readers and writers that use it against Jupyter's
real file contents manager."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_server.services.contents.filemanager import AsyncFileContentsManager
from nbformat.v4 import new_notebook

from jupyter_agent.exceptions import BadRequest, PathRefused
from jupyter_agent.runtime.kernels.run_kernel import RunKernel
from jupyter_agent.runtime.notebook.contents import Contents
from jupyter_agent.runtime.notebook.exports import NotebookWriter
from jupyter_agent.runtime.notebook.safe_paths import notebook_path, resolve

SECRET = "outside text that must never be read"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "secret.txt").write_text(SECRET)
    nbformat.write(new_notebook(), folder / "c.ipynb")
    return folder


@pytest.fixture
def root(tmp_path: Path, outside: Path) -> Path:
    base = tmp_path / "root"
    (base / "work").mkdir(parents=True)
    nbformat.write(new_notebook(), base / "work" / "a.ipynb")
    (base / ".hidden").mkdir()
    nbformat.write(new_notebook(), base / ".hidden" / "b.ipynb")
    # Three links out of the root: to a file, to a folder, and a dangling one.
    os.symlink(outside / "secret.txt", base / "link_file.txt")
    os.symlink(outside, base / "link_out")
    os.symlink(outside / "gone.ipynb", base / "link_dangling.ipynb")
    return base


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("work/a.ipynb", "work/a.ipynb"),
        ("/work/a.ipynb", "work/a.ipynb"),
        ("./work/./a.ipynb", "work/a.ipynb"),
        ("new/not-yet.ipynb", "new/not-yet.ipynb"),  # to come: judged by what exists
    ],
)
def test_clean_paths(root: Path, raw: str, clean: str) -> None:
    safe = resolve(raw, str(root), suffix=".ipynb")
    assert (safe.path, safe.target) == (clean, clean)
    assert safe.real == str(root / clean)
    assert safe.confirm() == clean


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("../x.ipynb", "outside the server's root ('..')"),
        ("work/../../x.ipynb", "outside the server's root ('..')"),
        (".hidden/b.ipynb", "hidden"),
        ("work/.ipynb_checkpoints/a-checkpoint.ipynb", "hidden"),
        ("work/a.txt", "not a notebook"),
        ("work/.ipynb", "hidden"),
        ("", "non-empty"),
        ("/", "non-empty"),
        ("a\x00.ipynb", "not a clean contents path"),
        ("a\\b.ipynb", "not a clean contents path"),
        ("a//b.ipynb", "not a clean contents path"),
        ("x" * 300 + ".ipynb", "too long"),
        ("\ud800.ipynb", "not valid Unicode"),
        ("link_out/c.ipynb", "outside the server's root (a symlink)"),
        ("link_dangling.ipynb", "outside the server's root (a symlink)"),
    ],
)
def test_refused_paths(root: Path, raw: str, why: str) -> None:
    with pytest.raises(BadRequest) as info:
        resolve(raw, str(root), what="'path'", suffix=".ipynb")
    assert type(info.value) is BadRequest
    assert info.value.reason == "bad_path"
    assert why in info.value.message
    if raw and len(raw) < 100 and "\ud800" not in raw:
        assert info.value.message.startswith(f"'path' {raw!r} is refused: ")


@pytest.mark.parametrize(
    "raw", ["link_file.txt", "link_out", "link_out/secret.txt", "link_out/new/x"]
)
def test_links_out_are_refused_without_naming_where_they_lead(
    root: Path, outside: Path, raw: str
) -> None:
    with pytest.raises(BadRequest) as info:
        resolve(raw, str(root), what="attachment")
    assert info.value.reason == "bad_path"
    assert "outside the server's root (a symlink)" in info.value.message
    assert str(outside) not in info.value.message
    assert "elsewhere" not in info.value.message


def test_links_inside_the_root(root: Path) -> None:
    os.symlink(root / "work", root / "alias")
    os.symlink(root / "work" / "new.ipynb", root / "to-come.ipynb")  # dangling, inside
    os.symlink(root / ".hidden" / "b.ipynb", root / "b.ipynb")
    os.symlink(root, root / "top")
    os.symlink("loop", root / "loop")
    (root / "data.csv").write_text("a,b\n")
    os.symlink(root / "data.csv", root / "data.ipynb")
    alias = resolve("alias/a.ipynb", str(root))
    assert (alias.path, alias.target) == ("alias/a.ipynb", "work/a.ipynb")
    assert resolve("to-come.ipynb", str(root)).target == "work/new.ipynb"
    for raw, why in [
        ("b.ipynb", "hidden file or folder (a symlink)"),
        ("top", "the server's root folder itself"),
        ("loop", "symlink loop"),
        ("loop/x.ipynb", "symlink loop"),
    ]:
        with pytest.raises(BadRequest, match="is refused") as info:
            resolve(raw, str(root))
        assert why in info.value.message, raw
    assert resolve("top", str(root), allow_root=True).target == ""
    assert resolve("", str(root), allow_root=True).real == str(root)
    with pytest.raises(PathRefused, match="not a notebook") as refused:
        notebook_path("data.ipynb", str(root))
    assert refused.value.reason == "path_refused"
    assert notebook_path("alias/a.ipynb", str(root)).path == "alias/a.ipynb"


def test_confirm_refuses_a_path_that_changed(root: Path, outside: Path) -> None:
    (root / "notes").mkdir()
    safe = resolve("notes/x.ipynb", str(root))
    (root / "notes").rmdir()
    os.symlink(outside, root / "notes")  # swapped for a link out after the check
    with pytest.raises(BadRequest, match="outside the server's root"):
        safe.confirm()
    os.unlink(root / "notes")
    os.symlink(root / "work", root / "notes")  # a link inside, but elsewhere: changed too
    with pytest.raises(BadRequest, match="changed while in use"):
        safe.confirm()


# --- the readers and writers ------------------------------------------------------------


def _nb() -> dict[str, Any]:
    return dict(nbformat.from_dict(new_notebook()))


def _outside_files(outside: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(outside.rglob("*")) if p.is_file()}


async def test_writes_never_leave_the_root(root: Path, outside: Path) -> None:
    writer = NotebookWriter(AsyncFileContentsManager(root_dir=str(root)), "link_out")
    before = _outside_files(outside)
    for raw in ("link_out/x.ipynb", "link_out/c.ipynb", "link_dangling.ipynb"):
        for overwrite in (False, True):
            with pytest.raises(BadRequest) as info:
                await writer.write_at(raw, _nb(), overwrite=overwrite)
            assert info.value.reason == "bad_path"
    with pytest.raises(BadRequest, match="the trace folder 'link_out' is refused"):
        await writer.write_new("Plot", _nb())  # the trace folder leads out
    assert _outside_files(outside) == before
    assert not (outside / "gone.ipynb").exists()


async def test_a_write_whose_folder_is_swapped_writes_nothing(root: Path, outside: Path) -> None:
    contents = Contents(AsyncFileContentsManager(root_dir=str(root)))
    (root / "notes").mkdir()
    safe = contents.resolve("notes/x.ipynb", "'path'", notebook=True)
    (root / "notes").rmdir()
    os.symlink(outside, root / "notes")
    with pytest.raises(BadRequest) as info:
        await contents.save_notebook(safe, _nb())
    assert info.value.reason == "bad_path"
    assert not (outside / "x.ipynb").exists()


async def test_a_trace_name_that_is_a_link_out_is_passed_over(root: Path, outside: Path) -> None:
    (root / "traces").mkdir()
    os.symlink(outside / "c.ipynb", root / "traces" / "Plot.ipynb")
    writer = NotebookWriter(AsyncFileContentsManager(root_dir=str(root)), "traces")
    before = _outside_files(outside)
    assert await writer.write_new("Plot", _nb()) == ("traces/Plot-2.ipynb", True)
    assert _outside_files(outside) == before


class _Swapping(AsyncFileContentsManager):
    """Jupyter's file manager with a concurrent writer in the root: as the first look at
    ``notes/data.txt`` is made, its folder becomes a link out of the root."""

    def __init__(self, outside: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.outside = outside

    async def get(self, path: str, content: bool = True, **kwargs: Any) -> Any:
        model = await super().get(path, content=content, **kwargs)
        notes = Path(self.root_dir) / "notes"
        if not content and notes.is_dir() and not notes.is_symlink():
            (notes / "data.txt").unlink()
            notes.rmdir()
            os.symlink(self.outside, notes)
        return model


async def test_attachments(root: Path, outside: Path) -> None:
    (root / "work" / "data.txt").write_text("inside")
    contents = Contents(AsyncFileContentsManager(root_dir=str(root)))
    part = await contents.read_attachment("work/data.txt")
    assert base64.b64decode(part["data"]) == b"inside"
    for raw in ("link_file.txt", "link_out/secret.txt", "link_dangling.ipynb", ".hidden/b.ipynb"):
        with pytest.raises(BadRequest) as info:
            await contents.read_attachment(raw)
        assert info.value.reason == "bad_path"
        assert SECRET not in info.value.message
    # The folder swapped for a link out between the check and the read: refused.
    (root / "notes").mkdir()
    (root / "notes" / "data.txt").write_text("inside")
    os.symlink(outside / "secret.txt", outside / "data.txt")
    racing = Contents(_Swapping(outside, root_dir=str(root)))
    with pytest.raises(BadRequest) as info:
        await racing.read_attachment("notes/data.txt")
    assert info.value.reason == "bad_path"


def test_the_kernel_folder_is_resolved_when_the_kernel_moves(root: Path, outside: Path) -> None:
    assert RunKernel(None, root_dir=str(root), cwd="work").folder() == str(root / "work")
    assert RunKernel(None, root_dir=str(root), cwd=".").folder() == str(root)
    # The viewed folder became a link out of the root since the message: the root.
    assert RunKernel(None, root_dir=str(root), cwd="link_out").folder() == str(root)
    assert RunKernel(None, root_dir=str(root), cwd=".hidden").folder() == str(root)
