"""File names and the trace folder of the notebooks the app writes
(runtime/notebook/exports.py), and the NotebookWriter against Jupyter's real file contents
manager."""

from __future__ import annotations

import asyncio
import json
import unicodedata
from pathlib import Path

import nbformat
import pytest
from jupyter_server.services.contents.filemanager import AsyncFileContentsManager
from traitlets import TraitError

from jupyter_agent.exceptions import Conflict, NotSupported
from jupyter_agent.runtime.notebook.exports import (
    MAX_STEM_BYTES,
    MAX_STEM_CHARS,
    NotebookWriter,
    check_folder,
    safe_stem,
    trace_stem,
)
from jupyter_agent.server.app import JupyterAgent

TITLES = [
    "../../etc/passwd",
    "a/b\\c",
    "/",
    ".hidden",
    "...",
    "-rf now",
    "🎉 party plan 🥳",
    "",
    "   ",
    "x" * 500,
    "👩‍👩‍👧" * 200,
    "tab\there\nnewline\x00nul\x7fdel",
    "\u202egnp.exe",  # a right-to-left override
    'what is 6*7? <b>"quoted"</b> | pipe:colon',
    "CON",
    "trailing dots...",
    "\ud800lone surrogate",
]


def _checked(stem: str) -> None:
    assert stem
    assert "/" not in stem
    assert "\\" not in stem
    assert not stem.startswith((".", "-", " "))
    assert not stem.endswith((".", " "))
    assert not any(unicodedata.category(c) in ("Cc", "Cs") for c in stem)
    assert "\u202e" not in stem
    assert not set('<>:"|?*') & set(stem)
    assert len(stem) <= MAX_STEM_CHARS
    assert len(stem.encode("utf-8")) <= MAX_STEM_BYTES


@pytest.mark.parametrize("title", TITLES)
def test_safe_stem_rules(title: str) -> None:
    stem = safe_stem(title, "chat_01ABC")
    _checked(stem)
    with_turn = trace_stem(title, "run_01ABC", 3)
    _checked(with_turn)
    if stem != "chat_01ABC":
        assert with_turn.endswith(" - turn 3")  # the suffix survives a long title


def test_safe_stem_examples() -> None:
    assert safe_stem("../../etc/passwd", "id") == "etc-passwd"
    assert safe_stem("/", "chat_1") == "chat_1"
    assert safe_stem(".hidden", "id") == "hidden"
    assert safe_stem("", "chat_1") == "chat_1"
    assert safe_stem("🎉 party", "id") == "🎉 party"
    assert safe_stem("x" * 500, "id") == "x" * MAX_STEM_CHARS
    assert safe_stem("CON", "id") == "CON_"
    assert safe_stem("Plot the squares", "id") == "Plot the squares"
    assert trace_stem("Plot", "run_1", 2) == "Plot - turn 2"
    assert trace_stem("Plot", "run_1", None) == "Plot - run_1"
    assert trace_stem("", "run_1", 2) == "run_1"


@pytest.mark.parametrize(
    ("value", "clean"),
    [("agent-traces", "agent-traces"), ("/a/b/", "a/b"), ("", ""), ("/", ""), ("x/./y", "x/y")],
)
def test_trace_folder_accepted(value: str, clean: str) -> None:
    assert check_folder(value) == clean
    assert JupyterAgent(trace_dir=value).trace_dir == clean


@pytest.mark.parametrize("value", ["../up", "a/../../b", ".agent", "a/.git", "a\\b", "a//b"])
def test_trace_folder_refused(value: str) -> None:
    with pytest.raises(ValueError):
        check_folder(value)
    with pytest.raises(TraitError, match="trace_dir"):
        JupyterAgent(trace_dir=value)


def test_trace_folder_default() -> None:
    assert JupyterAgent().trace_dir == "agent-traces"


# --- the writer through Jupyter's file contents manager ----------------------------------


def _nb(text: str) -> dict[str, object]:
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(text, id="c1"),
            nbformat.v4.new_markdown_cell("hi", id="m1"),
        ]
    )
    return dict(nbformat.from_dict(nb))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    folder.mkdir()
    return folder


@pytest.fixture
def writer(root: Path) -> NotebookWriter:
    return NotebookWriter(AsyncFileContentsManager(root_dir=str(root)), "agent-traces")


async def test_unique_names_never_overwrite(writer: NotebookWriter, root: Path) -> None:
    folder = root / "agent-traces"
    folder.mkdir()
    (folder / "Plot.ipynb").write_text("a person's file, not even a notebook")
    (folder / "Plot-2.ipynb").mkdir()  # a folder with a notebook's name
    path, created = await writer.write_new("Plot", _nb("1"))
    assert (path, created) == ("agent-traces/Plot-3.ipynb", True)
    assert (folder / "Plot.ipynb").read_text() == "a person's file, not even a notebook"
    # Another notebook under the same name: the next free one.
    assert await writer.write_new("Plot", _nb("2")) == ("agent-traces/Plot-4.ipynb", True)
    # The same notebook again: answered as is, nothing written.
    before = (folder / "Plot-3.ipynb").stat().st_mtime_ns
    assert await writer.write_new("Plot", _nb("1")) == ("agent-traces/Plot-3.ipynb", False)
    assert (folder / "Plot-3.ipynb").stat().st_mtime_ns == before
    # Once a person edits it, it is theirs: a new file, theirs untouched.
    edited = json.loads((folder / "Plot-3.ipynb").read_text())
    edited["cells"][1]["source"] = "my notes"
    (folder / "Plot-3.ipynb").write_text(json.dumps(edited))
    assert await writer.write_new("Plot", _nb("1")) == ("agent-traces/Plot-5.ipynb", True)
    assert json.loads((folder / "Plot-3.ipynb").read_text())["cells"][1]["source"] == "my notes"


async def test_concurrent_writes_pick_distinct_names(writer: NotebookWriter, root: Path) -> None:
    answers = await asyncio.gather(*(writer.write_new("Same", _nb(str(n))) for n in range(5)))
    paths = [p for p, _ in answers]
    assert len(set(paths)) == 5
    for n, path in enumerate(paths):
        assert nbformat.read(root / path, as_version=4).cells[0].source == str(n)


async def test_round_trip_through_the_contents_manager_changes_nothing(
    writer: NotebookWriter, root: Path
) -> None:
    path, _ = await writer.write_new("Round trip", _nb("print(6 * 7)"))
    on_disk = (root / path).read_bytes()
    nbformat.validate(nbformat.reads(on_disk.decode(), as_version=4))
    cm = writer.contents_manager
    model = await cm.get(path, content=True, type="notebook")
    await cm.save({"type": "notebook", "format": "json", "content": model["content"]}, path)
    assert (root / path).read_bytes() == on_disk


async def test_write_at_refuses_an_existing_file(writer: NotebookWriter, root: Path) -> None:
    (root / "mine.ipynb").write_text("{}")
    with pytest.raises(Conflict) as info:
        await writer.write_at("mine.ipynb", _nb("1"), overwrite=False)
    assert info.value.reason == "exists"
    assert (root / "mine.ipynb").read_text() == "{}"
    assert await writer.write_at("mine.ipynb", _nb("1"), overwrite=True) == "mine.ipynb"
    assert nbformat.read(root / "mine.ipynb", as_version=4).cells[0].source == "1"


async def test_root_folder_and_no_contents_manager(root: Path) -> None:
    at_root = NotebookWriter(AsyncFileContentsManager(root_dir=str(root)), "")
    assert await at_root.write_new("top", _nb("1")) == ("top.ipynb", True)
    with pytest.raises(NotSupported) as info:
        await NotebookWriter(None).write_new("x", _nb("1"))
    assert info.value.reason == "no_contents"
