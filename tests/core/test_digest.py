"""The digest of cells and bash commands: unit tests on hand-built results, and golden
digests of cells captured from a real IPython run (``tests/core/cells/make_fixtures.py``).

Goldens are compared exactly; ``UPDATE_GOLDEN=1`` rewrites them.
"""

from __future__ import annotations

import base64
import json
import os
import re
import struct
import zlib
from pathlib import Path

import pytest

from jupyter_agent.core.digest.cells import (
    AppCallRecord,
    BashResult,
    CellError,
    CellResult,
    LastValue,
    OmittedPrints,
    Value,
)
from jupyter_agent.core.digest.parts import image_size
from jupyter_agent.core.digest.render import Digest, DigestOptions, digest_bash, digest_cell
from jupyter_agent.messages import File

HERE = Path(__file__).parent
CELLS = HERE / "cells"
GOLDEN = HERE / "golden"
PLACEHOLDERS = DigestOptions(env_prefix="/ENV", home="/HOME")


def _png(width: int, height: int) -> bytes:
    """A real, valid RGB PNG of the given size."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def _lines(d: Digest) -> list[str]:
    return d.text.splitlines()


# --- output -----------------------------------------------------------------------------


def test_prints_numbered_then_last_value() -> None:
    result = CellResult(
        cell_id="c3",
        prints=(Value(text="hello"), Value(text="a\nb"), Value(text="")),
        last=LastValue(repr=Value(text="42"), type_name="int"),
        execution_count=3,
        duration_s=0.5,
    )
    d = digest_cell(result)
    assert _lines(d) == [
        "Cell c3 (In[3], 0.50s)",
        "Output:",
        "[1] hello",
        "[2]",
        "  a",
        "  b",
        "[3] (empty)",
        "Last value (int): 42",
    ]
    assert not d.is_error
    assert d.stubbed == ()
    assert d.tokens == -(-len(d.text) // 4)
    assert d.content == (d.content[0],)


def test_no_output() -> None:
    assert _lines(digest_cell(CellResult(cell_id="c1"))) == [
        "Cell c1 (0.00s)",
        "Output: (no output)",
    ]


def test_last_value_html_table_noted_with_its_text_repr() -> None:
    last = LastValue(
        repr=Value(text="   a\n0  1"),
        mime={"text/html": "<div><table><tr><td>1</td></tr></table></div>"},
        type_name="DataFrame",
    )
    d = digest_cell(CellResult(cell_id="c1", last=last))
    assert "Last value (DataFrame; also text/html table):\n     a\n  0  1" in d.text


def test_million_char_print_is_stubbed_with_the_exact_call() -> None:
    big = Value(text="x" * 5000, chars=1_000_000)
    d = digest_cell(CellResult(cell_id="c3", prints=(Value(text="ok"), big)))
    assert d.stubbed == ('values.get("c3", 2)',)
    head = "x" * 300
    assert (
        f"[2] <stub: 1,000,000 chars (~250,000 tokens); head: '{head}…'; "
        'get it whole with values.get("c3", 2)>'
    ) in _lines(d)
    assert "[1] ok" in _lines(d)
    assert "run" not in d.text.lower().replace("values.get", "")


def test_value_index_one_stub_and_last_stub() -> None:
    big = Value(text="y" * 3000, chars=1_000_000)
    d = digest_cell(
        CellResult(cell_id="c3", prints=(big,), last=LastValue(repr=big, type_name="str"))
    )
    assert d.stubbed == ('values.get("c3", 1)', 'values.get("c3", "last")')
    assert 'get it whole with values.get("c3", 1)>' in d.text
    assert "Last value (str): <stub: 1,000,000 chars" in d.text
    assert 'get it whole with values.get("c3", "last")>' in d.text


def test_value_over_budget_but_sent_whole_shows_head_and_tail() -> None:
    text = "".join(f"line {i}\n" for i in range(400))  # 3,490 chars > 600 tokens
    d = digest_cell(CellResult(cell_id="c9", prints=(Value(text=text),)))
    (line,) = [ln for ln in _lines(d) if ln.startswith("[1]")]
    assert line.startswith("[1] <stub: 3,490 chars (~873 tokens); head: 'line 0\\nline 1\\n")
    assert "; tail: '…" in line
    assert line.endswith('line 399\\n\'; get it whole with values.get("c9", 1)>')


def test_total_budget_stubs_the_values_that_no_longer_fit() -> None:
    prints = tuple(Value(text=f"{i:02d}" + "v" * 1998) for i in range(1, 11))  # 2,000 each
    last = LastValue(repr=Value(text="'the answer'"), type_name="str")
    d = digest_cell(CellResult(cell_id="c3", prints=prints, last=last))
    lines = _lines(d)
    assert lines[2] == "[1] 01" + "v" * 1998  # the first value, whole
    assert lines[3] == (
        "[2]…[9] <stub: 8 more values, 16,000 chars (~4,000 tokens), digest budget used; "
        'get them with [values.get("c3", i) for i in range(2, 10)]>'
    )
    assert lines[4] == "[10] 10" + "v" * 1998  # the last printed value, whole
    assert lines[5] == "Last value (str): 'the answer'"  # placed first, never squeezed out
    assert d.stubbed == ('[values.get("c3", i) for i in range(2, 10)]',)
    assert d.tokens <= 3000


def test_later_single_value_stubbed_when_total_budget_is_small() -> None:
    prints = tuple(Value(text=c * 500) for c in "abc")
    d = digest_cell(CellResult(cell_id="c7", prints=prints), DigestOptions(total_budget_tokens=350))
    lines = _lines(d)
    assert lines[2] == "[1] " + "a" * 500
    assert lines[3].startswith("[2] <stub: 500 chars (~125 tokens), digest budget used; head: 'b")
    assert lines[3].endswith('get it whole with values.get("c7", 2)>')
    assert lines[4] == "[3] " + "c" * 500
    assert d.stubbed == ('values.get("c7", 2)',)


@pytest.mark.parametrize("n", [10, 1000, 20000])
def test_digest_stays_within_total_budget(n: int) -> None:
    prints = tuple(Value(text=f"step {i}: " + "z" * (i % 50)) for i in range(n))
    result = CellResult(
        cell_id="c1",
        prints=prints,
        stderr=Value(text="warn\n" * 100),
        last=LastValue(repr=Value(text="q" * 2000), type_name="str"),
        app_calls=tuple(AppCallRecord(seq=i, app="llm", method="chat") for i in range(30)),
    )
    d = digest_cell(result)
    assert d.tokens <= 3000
    assert digest_cell(result) == d  # deterministic


def test_stderr_section_and_carriage_returns_rendered_like_a_terminal() -> None:
    stderr = Value(text="10%|#\r50%|#####\r100%|##########\nwarning: slow\n")
    d = digest_cell(CellResult(cell_id="c1", prints=(Value(text="x"),), stderr=stderr))
    assert _lines(d)[-3:] == ["Stderr:", "  100%|##########", "  warning: slow"]


def test_outputs_truncated_marker() -> None:
    d = digest_cell(CellResult(cell_id="c1", prints=(Value(text="x"),), outputs_truncated=True))
    assert _lines(d)[-1] == "Note: the kernel cut this cell's outputs (more than it keeps)."


# --- side effects -----------------------------------------------------------------------


def _call(seq: int, name: str, **kw: object) -> AppCallRecord:
    app, method = name.split(".")
    return AppCallRecord(seq=seq, app=app, method=method, **kw)  # type: ignore[arg-type]


def test_side_effects_grouped_with_mutations_and_failures_by_seq() -> None:
    calls = (
        _call(14, "chat.post", mutation=True),
        _call(15, "llm.chat"),
        _call(16, "chat.post", mutation=True),
        _call(17, "llm.chat", ok=False, error="timeout\nafter 30 s"),
        _call(18, "chat.post", mutation=True),
    )
    d = digest_cell(CellResult(cell_id="c1", app_calls=calls))
    assert _lines(d)[1:] == [
        "Side effects: chat.post \u00d73, llm.chat \u00d72",
        "#14 chat.post (mutation)",
        "#16 chat.post (mutation)",
        "#17 llm.chat failed: timeout after 30 s",
        "#18 chat.post (mutation)",
    ]


HINT = (
    "hint: 4 sequential llm.chat calls; "
    "fan them out in one round trip with batch(llm.chat.spec(...), ...)"
)


def _hints(calls: list[AppCallRecord]) -> list[str]:
    d = digest_cell(CellResult(cell_id="c1", app_calls=tuple(calls)))
    return [ln for ln in _lines(d) if ln.startswith("hint:")]


def test_batch_hint_at_four_sequential_calls() -> None:
    assert _hints([_call(i, "llm.chat") for i in range(4)]) == [HINT]


def test_no_batch_hint_at_three() -> None:
    assert _hints([_call(i, "llm.chat") for i in range(3)]) == []


def test_no_batch_hint_when_interleaved() -> None:
    calls = [_call(i, "llm.chat" if i % 2 else "chat.post") for i in range(8)]
    assert _hints(calls) == []


def test_no_batch_hint_for_calls_inside_a_batch() -> None:
    calls = [_call(1, "llm.chat"), *(_call(i, "llm.chat", batch=1) for i in range(2, 6))]
    calls.append(_call(6, "llm.chat"))
    assert _hints(calls) == []
    d = digest_cell(CellResult(cell_id="c1", app_calls=tuple(calls)))
    assert "Side effects: llm.chat \u00d76 (4 batched)" in _lines(d)


def test_batch_marker_round_trips_through_json() -> None:
    call = _call(3, "llm.chat", batch=2)
    assert AppCallRecord.from_json(call.to_json()) == call
    assert AppCallRecord.from_json({"seq": 1, "app": "a", "method": "b"}).batch is None


# --- errors -----------------------------------------------------------------------------


def test_error_digest_is_error_keeps_output_and_compacts_traceback() -> None:
    tb = (
        "\x1b[0;31m" + "-" * 75 + "\x1b[0m",
        "\x1b[0;31mNameError\x1b[0m                     Traceback (most recent call last)",
        "Cell \x1b[0;32mIn[3], line 2\x1b[0m\n\x1b[1;32m      1\x1b[0m x = 1\n"
        "\x1b[0;32m----> 2\x1b[0m y\n",
        "\x1b[0;31mNameError\x1b[0m: name 'y' is not defined",
    )
    result = CellResult(
        cell_id="c3",
        prints=(Value(text="before"),),
        error=CellError(ename="NameError", evalue="name 'y' is not defined", traceback=tb),
        execution_count=3,
    )
    d = digest_cell(result)
    assert d.is_error
    assert _lines(d) == [
        "Cell c3 failed (In[3], 0.00s)",
        "Output:",
        "[1] before",
        "Error: NameError: name 'y' is not defined",
        "Cell In[3], line 2",
        "----> 2 y",
    ]


# --- images -----------------------------------------------------------------------------


def _image_cell(count: int = 1) -> CellResult:
    data = base64.b64encode(_png(3, 2)).decode()
    displays = tuple(
        {"image/png": data, "text/plain": "<Figure size 3x2 with 1 Axes>"} for _ in range(count)
    )
    return CellResult(cell_id="c2", displays=displays)


def test_vision_on_attaches_the_png_as_a_file_part() -> None:
    d = digest_cell(_image_cell(), DigestOptions(vision=True))
    assert d.content[1:] == (File(media_type="image/png", data=_png(3, 2), name="image-1.png"),)
    assert (
        "[display 1] image/png 3x2 (attached as image 1) <Figure size 3x2 with 1 Axes>" in _lines(d)
    )


def test_vision_off_says_the_model_cannot_see_the_image() -> None:
    d = digest_cell(_image_cell())
    assert len(d.content) == 1
    assert "[display 1] image/png 3x2 (an image; you cannot see images here)" in d.text


def test_vision_attaches_at_most_max_images() -> None:
    d = digest_cell(_image_cell(3), DigestOptions(vision=True, max_images=2))
    assert [type(p) for p in d.content[1:]] == [File, File]
    assert "[display 3] image/png 3x2 (not attached: at most 2 images per cell)" in d.text


def test_jpeg_size_from_its_sof_header() -> None:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x00" * 9
    sof0 = b"\xff\xc0" + struct.pack(">HBHH", 17, 8, 480, 640) + b"\x00" * 10
    assert image_size("image/jpeg", b"\xff\xd8" + app0 + sof0) == (640, 480)
    assert image_size("image/png", _png(7, 5)[:24]) == (7, 5)
    assert image_size("image/png", b"not a png") is None


# --- paths ------------------------------------------------------------------------------


def test_paths_normalised_in_the_whole_digest() -> None:
    result = CellResult(
        cell_id="c1",
        prints=(Value(text="/u/me/.venv/lib/python3.11/site.py"), Value(text="/u/me/data.csv")),
        error=CellError(
            ename="OSError",
            evalue="cannot read /u/me/data.csv",
            traceback=(
                "Traceback (most recent call last):",
                '  File "/u/me/.venv/lib/python3.11/io.py", line 1, in read',
                "OSError: cannot read /u/me/data.csv",
            ),
        ),
    )
    d = digest_cell(result, DigestOptions(env_prefix="/u/me/.venv", home="/u/me"))
    assert "/u/me" not in d.text
    assert "[1] <env>/lib/python3.11/site.py" in d.text
    assert "[2] ~/data.csv" in d.text
    assert "Error: OSError: cannot read ~/data.csv" in d.text
    assert '  File "<env>/lib/python3.11/io.py", line 1, in read' in d.text


# --- bash -------------------------------------------------------------------------------


def test_bash_digest() -> None:
    result = BashResult(
        command="ls /nope",
        stdout=Value(text=""),
        stderr=Value(text="ls: cannot access '/nope': No such file or directory\n"),
        returncode=2,
        duration_s=0.01,
    )
    d = digest_bash(result)
    assert d.is_error
    assert _lines(d) == [
        "$ ls /nope",
        "exit 2 (0.01s)",
        "stderr: ls: cannot access '/nope': No such file or directory",
    ]


def test_bash_stub_names_sh_last_and_warns_it_is_overwritten() -> None:
    result = BashResult(
        command="cat big.log",
        stdout=Value(text="L" * 4000, chars=2_000_000),
        stderr=Value(text=""),
        returncode=0,
    )
    d = digest_bash(result)
    assert not d.is_error
    assert d.stubbed == ("sh.last.stdout",)
    assert (
        "get it whole with sh.last.stdout (the next bash call replaces sh.last: save it first)>"
        in d.text
    )


def test_bash_timeout_and_no_output() -> None:
    result = BashResult(
        command="sleep 100",
        stdout=Value(text=""),
        stderr=Value(text=""),
        returncode=None,
        timed_out=True,
        duration_s=30.0,
    )
    d = digest_bash(result)
    assert d.is_error
    assert _lines(d) == ["$ sleep 100", "timed out (killed) (30.0s)", "(no output)"]


# --- goldens ----------------------------------------------------------------------------

GOLDENS = {
    "dataframe": PLACEHOLDERS,
    "figure": PLACEHOLDERS,
    "figure_vision": DigestOptions(env_prefix="/ENV", home="/HOME", vision=True),
    "long_loop": PLACEHOLDERS,
    "nested_error": PLACEHOLDERS,
    "side_effects": PLACEHOLDERS,
}


@pytest.mark.parametrize("name", sorted(GOLDENS))
def test_golden(name: str) -> None:
    fixture = name.removesuffix("_vision")
    data = json.loads((CELLS / f"{fixture}.json").read_text(encoding="utf-8"))
    result = CellResult.from_json(data)
    d = digest_cell(result, GOLDENS[name])
    parts = [f"[{type(p).__name__} {p.media_type} {len(p.data)} bytes]" for p in d.content[1:]]
    rendered = "\n".join(
        [d.text, "----", f"is_error={d.is_error} tokens={d.tokens}", *d.stubbed, *parts]
    )
    path = GOLDEN / f"{name}.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(rendered + "\n", encoding="utf-8")
    assert rendered + "\n" == path.read_text(encoding="utf-8")


def test_displays_html_table_and_markdown() -> None:
    displays = (
        {"text/html": "<table><tr><td>1</td></tr></table>", "text/plain": "   a\n0  1"},
        {
            "output_type": "display_data",
            "data": {
                "text/markdown": "# Title\nbody",
                "text/plain": "<IPython.core.display.Markdown object>",
            },
            "metadata": {},
        },
        {"application/vnd.plotly.v1+json": {}},
    )
    d = digest_cell(CellResult(cell_id="c1", displays=displays))
    assert _lines(d)[1:] == [
        "Output:",
        "[display 1] text/html table, as text/plain:",
        "     a",
        "  0  1",
        "[display 2] text/markdown, as text/markdown:",
        "  # Title",
        "  body",
        "[display 3] application/vnd.plotly.v1+json",
    ]


# --- DigestOptions.from_config -------------------------------------------------------------


def test_options_from_config_take_budgets_spaces_and_vision() -> None:
    from jupyter_agent.core.ceilings import Ceilings
    from jupyter_agent.llm.profiles import Profile

    ceilings = Ceilings(value_budget_tokens=500, total_budget_tokens=2500)
    spaces = {"env_prefix": "/u/me/.venv", "home": "/u/me", "agent_space": "/x"}
    # What the loop built by hand (vision from the model's profile) ...
    assert DigestOptions.from_config(ceilings, spaces, Profile(vision=True)) == DigestOptions(
        value_budget_tokens=500,
        total_budget_tokens=2500,
        vision=True,
        env_prefix="/u/me/.venv",
        home="/u/me",
    )
    # ... and what the driver built (no profile: no vision).
    assert DigestOptions.from_config(ceilings, spaces) == DigestOptions(
        value_budget_tokens=500, total_budget_tokens=2500, env_prefix="/u/me/.venv", home="/u/me"
    )
    assert DigestOptions.from_config(Ceilings(), {}, Profile()) == DigestOptions()


def test_prints_the_kernel_left_out_fall_in_the_stub() -> None:
    # 1,000 values kept of 1,000,000: numbers 1-500 and 999,501-1,000,000.
    kept = tuple(Value(text=str(i)) for i in (*range(500), *range(999_500, 1_000_000)))
    gap = OmittedPrints(first=501, count=999_000, chars=5_888_890)
    result = CellResult(cell_id="c1", prints=kept, prints_omitted=gap)
    assert result.prints_total == 1_000_000
    assert [result.print_number(i) for i in (0, 499, 500, 999)] == [1, 500, 999_501, 1_000_000]
    d = digest_cell(result)
    lines = d.text.splitlines()
    assert lines[2] == "[1] 0"
    assert lines[-1] == "[1000000] 999999"
    stub = next(line for line in lines if "<stub:" in line)
    first, last = (int(n) for n in re.findall(r"^\[(\d+)\]…\[(\d+)\]", stub)[0])
    assert 1 < first <= 501
    assert 999_501 <= last < 1_000_000
    assert f"{last - first + 1:,} more values" in stub
    assert len(d.text) < 10_000


def test_a_short_result_with_a_gap_still_names_it() -> None:
    kept = (Value(text="a"), Value(text="z"))
    result = CellResult(cell_id="c1", prints=kept, prints_omitted=OmittedPrints(first=2, count=3))
    d = digest_cell(result)
    assert "[1] a" in d.text
    assert "[5] z" in d.text
    assert "[2]…[4] <stub: 3 more values" in d.text
