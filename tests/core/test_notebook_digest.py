"""The notebook digest (``notebook.read()``): bounded cells and the budgeted text.

Cells are built with nbformat's own constructors (what the contents manager gives), so
the shapes are the real ones.
"""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any

from nbformat.v4 import new_code_cell, new_markdown_cell, new_output

from jupyter_agent.core.digest.cells import CellResult, LastValue, Value
from jupyter_agent.core.digest.render import digest_cell
from jupyter_agent.core.notebook.digest import (
    CUT_MARK,
    DIGEST_MIME,
    NotebookOptions,
    output_text,
    read_cells,
    revision_of,
)
from jupyter_agent.core.tokens import count_tokens

TRACEBACK = [
    "\x1b[0;31m---------------------------------------------------------------------------\x1b[0m",
    "\x1b[0;31mZeroDivisionError\x1b[0m                         Traceback (most recent call last)",
    "Cell \x1b[0;32mIn[3], line 2\x1b[0m\n\x1b[1;32m      1\x1b[0m x = 1\n"
    "\x1b[0;32m----> 2\x1b[0m x / 0\n",
    "\x1b[0;31mZeroDivisionError\x1b[0m: division by zero",
]


def _png(width: int, height: int) -> str:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    raw = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows))
    return base64.b64encode(raw + chunk(b"IEND", b"")).decode()


def small() -> list[Any]:
    return [
        new_markdown_cell("# Sales\nQuarterly numbers.", id="intro"),
        new_code_cell(
            "import pandas as pd\ndf = pd.read_csv('sales.csv')\nprint(len(df))",
            id="load",
            execution_count=2,
            outputs=[new_output("stream", name="stdout", text="1200\n")],
        ),
        new_code_cell(
            "x = 1\nx / 0",
            id="fit",
            execution_count=3,
            outputs=[
                new_output(
                    "error",
                    ename="ZeroDivisionError",
                    evalue="division by zero",
                    traceback=TRACEBACK,
                )
            ],
        ),
    ]


def test_output_texts_of_each_kind() -> None:
    png = _png(4, 3)
    figure = new_output(
        "display_data", data={"image/png": png, "text/plain": "<Figure size 640x480 with 1 Axes>"}
    )
    assert output_text(figure).splitlines() == [
        f"<image/png 4x3 {max(1, round(len(png) * 3 // 4 / 1024))} KB>",
        "<Figure size 640x480 with 1 Axes>",
    ]
    assert output_text(new_output("stream", name="stderr", text="warn\n")) == "warn\n"
    result = new_output("execute_result", data={"text/plain": "42"}, execution_count=1)
    assert output_text(result) == "42"
    md = new_output(
        "display_data",
        data={"text/plain": "<IPython.core.display.Markdown object>", "text/markdown": "**hi**"},
    )
    assert output_text(md) == "**hi**"
    html = new_output("display_data", data={"text/html": "<b>x</b>" * 400})
    assert output_text(html) == "<text/html 3 KB>"
    error = output_text(small()[2]["outputs"][0])
    assert error.startswith("ZeroDivisionError: division by zero\n")
    assert "\x1b" not in error
    assert "----> 2 x / 0" in error


def test_a_small_notebook_reads_whole() -> None:
    read = read_cells("work/sales.ipynb", small(), focus="fit")
    lines = read.text.splitlines()
    assert lines[0] == (
        f"Notebook work/sales.ipynb (3 cells: 2 code, 1 markdown; revision {read.revision})"
    )
    assert lines[1] == "nb is what notebook.read() returned: nb.cells[i], nb.output(cell_id, n)"
    assert lines[2:11] == [
        "[0] markdown id=intro",
        "  # Sales",
        "  Quarterly numbers.",
        "[1] code id=load In[2]",
        "  import pandas as pd",
        "  df = pd.read_csv('sales.csv')",
        "  print(len(df))",
        "  [out 1] 1200",
        "[2] code id=fit In[3]  <- the person's cell",
    ]
    assert "  [out 1] error: ZeroDivisionError: division by zero" in lines
    assert "    ----> 2 x / 0" in lines  # the compact traceback, indented under it
    assert read.stubbed == ()
    assert not read.cut
    assert read.cells[1] == {
        "id": "load",
        "cell_type": "code",
        "source": "import pandas as pd\ndf = pd.read_csv('sales.csv')\nprint(len(df))",
        "outputs": ["1200\n"],
        "execution_count": 2,
    }
    assert read.tokens == count_tokens(read.text)
    assert read_cells("work/sales.ipynb", small(), focus="fit") == read  # deterministic


def test_a_big_output_is_a_stub_naming_the_call_and_the_cells_keep_it_whole() -> None:
    big = "row,value\n" + "".join(f"{i},{i * i}\n" for i in range(3000))
    cells = small()
    cells[1]["outputs"] = [new_output("stream", name="stdout", text=big)]
    read = read_cells("sales.ipynb", cells)
    [stub] = [ln for ln in read.text.splitlines() if ln.startswith("  [out 1] <stub")]
    assert f"{len(big):,} chars" in stub
    assert "head: 'row,value\\n0,0\\n" in stub
    assert stub.endswith('get it whole with nb.output("load", 1)>')
    assert read.stubbed == ('nb.output("load", 1)',)
    assert read.cells[1]["outputs"] == [big]


def test_outputs_and_sources_are_cut_to_their_caps_with_a_marker() -> None:
    options = NotebookOptions(output_cap=1000, outputs_cap=1500, source_cap=500)
    cells = [
        new_code_cell(
            "a" * 800, id="one", outputs=[new_output("stream", name="stdout", text="x" * 1200)]
        ),
        new_code_cell("b", id="two", outputs=[new_output("stream", name="stdout", text="y" * 900)]),
        new_code_cell("c", id="three", outputs=[new_output("stream", name="stdout", text="z")]),
    ]
    read = read_cells("cut.ipynb", cells, options)
    one, two, three = read.cells
    assert one["source"] == "a" * 500 + f"{CUT_MARK} 800 chars in all]"
    assert one["outputs"] == ["x" * 1000 + f"{CUT_MARK} 1,200 chars in all]"]
    assert two["outputs"] == ["y" * 500 + f"{CUT_MARK} 900 chars in all]"]  # the read's total
    assert three["outputs"] == [f"{CUT_MARK} 1 chars in all]"]
    assert read.cut
    assert 'nb.output("one", 1)' in read.stubbed  # a cut output is always a stub


def _many(n: int) -> list[Any]:
    cells = []
    for i in range(n):
        outputs = [new_output("stream", name="stdout", text=f"result {i}\n" * 5)]
        cells.append(
            new_code_cell(
                f"# step {i}\nvalue_{i} = compute({i})\nprint(value_{i})",
                id=f"cell{i:03d}",
                execution_count=i + 1 if i % 2 == 0 else None,
                outputs=outputs,
            )
        )
    return cells


def test_a_long_notebook_fits_the_budget_around_the_persons_cell() -> None:
    options = NotebookOptions(budget_tokens=2000)
    read = read_cells("long.ipynb", _many(500), options, focus="cell250")
    assert read.tokens <= 2000
    lines = read.text.splitlines()
    at = lines.index("[250] code id=cell250 In[251]  <- the person's cell")
    assert lines[at + 1 : at + 4] == [
        "  # step 250",
        "  value_250 = compute(250)",
        "  print(value_250)",
    ]
    gaps = [ln for ln in lines if "not shown" in ln]
    assert gaps[0].startswith("[0]…[")
    assert "nb.cells[0:" in gaps[0]
    assert gaps[-1].endswith(":500]")
    assert len(read.cells) == 500  # the view keeps every cell
    # The neighbours keep more detail than cells farther away.
    assert "[251] code id=cell251" in lines
    assert read_cells("long.ipynb", _many(500), options, focus=250).text == read.text


def test_without_a_focus_the_last_cell_run_stays_whole() -> None:
    cells = _many(300)
    cells[40]["execution_count"] = 999
    read = read_cells("long.ipynb", cells, NotebookOptions(budget_tokens=1000))
    assert read.tokens <= 1000
    lines = read.text.splitlines()
    at = lines.index("[40] code id=cell040 In[999]")
    assert lines[at + 1] == "  # step 40"
    assert "<- the person's cell" not in read.text


def test_revision_follows_sources_not_outputs() -> None:
    cells = small()
    before = revision_of(cells)
    cells[1]["outputs"] = []
    assert revision_of(cells) == before
    cells[1]["source"] = "print('changed')"
    assert revision_of(cells) != before


def test_on_disk_shapes_and_cells_without_ids() -> None:
    cells = [
        {
            "cell_type": "code",
            "source": ["a = 1\n", "a"],
            "metadata": {},
            "outputs": [
                {
                    "output_type": "execute_result",
                    "data": {"text/plain": ["1"]},
                    "metadata": {},
                    "execution_count": 1,
                }
            ],
            "execution_count": 1,
        },
    ]
    read = read_cells("old.ipynb", cells, NotebookOptions(home="/home/me"))
    assert read.cells[0]["id"] is None
    assert read.cells[0]["source"] == "a = 1\na"
    assert "[0] code id=? In[1]" in read.text
    assert "  [out 1] execute_result 1" in read.text


def test_paths_read_as_the_cell_digests_show_them() -> None:
    cells = [new_code_cell("open('/home/me/data/x.csv')", id="p")]
    read = read_cells("p.ipynb", cells, NotebookOptions(home="/home/me"))
    assert "open('~/data/x.csv')" in read.text
    assert read.cells[0]["source"] == "open('/home/me/data/x.csv')"


def test_the_cell_digest_shows_a_notebook_digest_whole() -> None:
    text = read_cells("long.ipynb", _many(100)).text
    assert len(text) > 4 * 600  # over the cell digest's per-value budget
    view = LastValue(
        repr=Value(text=text), mime={DIGEST_MIME: {"path": "long.ipynb"}}, type_name="NotebookView"
    )
    shown = digest_cell(CellResult(cell_id="c1", last=view)).text
    assert "\n".join(f"  {ln}" if ln else "" for ln in text.split("\n")) in shown  # block()
    assert "stub" not in shown.split("\n", 2)[1]
    plain = LastValue(repr=Value(text=text), type_name="str")
    assert "<stub: " in digest_cell(CellResult(cell_id="c1", last=plain)).text
    cut = LastValue(repr=Value(text=text[:100], chars=len(text)), mime={DIGEST_MIME: {}})
    assert "<stub: " in digest_cell(CellResult(cell_id="c1", last=cut)).text
