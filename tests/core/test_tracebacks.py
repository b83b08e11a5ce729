"""Compact tracebacks and path normalisation (pure functions, real IPython-shaped input)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jupyter_agent.core.digest.options import DigestOptions
from jupyter_agent.core.digest.tracebacks import MAX_FRAMES, compact_traceback, strip_ansi
from jupyter_agent.core.paths import normalize_paths

CELLS = Path(__file__).parent / "cells"
RED, GREEN, CYAN, RESET = "\x1b[0;31m", "\x1b[0;32m", "\x1b[0;36m", "\x1b[0m"


def _ipy_frame(location: str, arrow: str, context: tuple[str, ...] = ()) -> str:
    """One frame the way IPython 8 colours it."""
    lines = [f"{GREEN}{location}{RESET}"]
    lines += [f"\x1b[1;32m      1{RESET} {c}" for c in context]
    lines.append(f"{GREEN}{arrow}{RESET}")
    return "\n".join(lines) + "\n"


def _library_traceback() -> list[str]:
    return [
        f"{RED}{'-' * 75}{RESET}",
        f"{RED}ValueError{RESET}                                Traceback (most recent call last)",
        _ipy_frame("Cell In[7], line 2", "----> 2 run(data)", ("data = load()",)),
        _ipy_frame("Cell In[5], line 4, in run(d)", "----> 4     return lib.go(d)"),
        _ipy_frame(
            "File /opt/env/lib/python3.11/site-packages/lib/a.py:10, in go(d)", "---> 10 x()"
        ),
        _ipy_frame("File /opt/env/lib/python3.11/site-packages/lib/b.py:20, in x()", "---> 20 y()"),
        _ipy_frame("File /opt/env/lib/python3.11/site-packages/lib/c.py:30, in y()", "---> 30 z()"),
        _ipy_frame(
            "File /opt/env/lib/python3.11/site-packages/lib/d.py:40, in z()",
            "---> 40     raise ValueError('bad input')",
        ),
        f"{RED}ValueError{RESET}: bad input",
    ]


def test_ansi_stripped_cell_frames_kept_innermost_library_kept_rest_elided() -> None:
    out = compact_traceback(_library_traceback(), ename="ValueError", evalue="bad input")
    assert "\x1b" not in out
    assert out.splitlines() == [
        "Cell In[7], line 2",
        "----> 2 run(data)",
        "Cell In[5], line 4, in run(d)",
        "----> 4     return lib.go(d)",
        "… 3 library frames …",
        "File /opt/env/lib/python3.11/site-packages/lib/d.py:40, in z()",
        "---> 40     raise ValueError('bad input')",
    ]


def test_paths_normalised_when_options_given() -> None:
    options = DigestOptions(env_prefix="/opt/env")
    out = compact_traceback(
        _library_traceback(), ename="ValueError", evalue="bad input", options=options
    )
    assert "File <env>/lib/python3.11/site-packages/lib/d.py:40, in z()" in out
    assert "/opt/env" not in out


def test_real_ipython_traceback_from_fixture() -> None:
    data = json.loads((CELLS / "nested_error.json").read_text(encoding="utf-8"))
    err = data["error"]
    out = compact_traceback(err["traceback"], ename=err["ename"], evalue=err["evalue"])
    lines = out.splitlines()
    assert [ln for ln in lines if ln.startswith("Cell In[")] == [
        "Cell In[4], line 8",
        "Cell In[4], line 5, in load_config(text)",
        "Cell In[4], line 3, in parse(text)",
    ]
    assert "… 2 library frames …" in lines
    assert lines[-2].startswith("File /ENV/lib/python3.11/json/decoder.py:353")
    assert "JSONDecodeError" not in out  # the digest's "Error:" line says it once


def test_ipykernel_temp_file_frames_count_as_cell_code() -> None:
    tb = [
        "Traceback (most recent call last):",
        '  File "/tmp/ipykernel_4242/3141592.py", line 3, in <module>',
        "    helper()",
        '  File "/tmp/ipykernel_4242/2718281.py", line 2, in helper',
        "    json.loads('{')",
        '  File "/usr/lib/python3.11/json/__init__.py", line 346, in loads',
        "    return _default_decoder.decode(s)",
        '  File "/usr/lib/python3.11/json/decoder.py", line 353, in raw_decode',
        "    obj, end = self.scan_once(s, idx)",
        "               ^^^^^^^^^^^^^^^^^^^^^^",
        "json.decoder.JSONDecodeError: Expecting property name",
    ]
    out = compact_traceback(tb, ename="JSONDecodeError", evalue="Expecting property name")
    assert out.splitlines() == [
        '  File "/tmp/ipykernel_4242/3141592.py", line 3, in <module>',
        "    helper()",
        '  File "/tmp/ipykernel_4242/2718281.py", line 2, in helper',
        "    json.loads('{')",
        "… 1 library frame …",
        '  File "/usr/lib/python3.11/json/decoder.py", line 353, in raw_decode',
        "    obj, end = self.scan_once(s, idx)",
        "               ^^^^^^^^^^^^^^^^^^^^^^",
    ]


def test_syntax_error_kept_verbatim_with_caret() -> None:
    tb = [
        "  Cell \x1b[0;32mIn[1], line 1\x1b[0m\n"
        "    x = (\n        ^\nSyntaxError: incomplete input\n"
    ]
    out = compact_traceback(tb, ename="SyntaxError", evalue="incomplete input (<ipython>, line 1)")
    assert out == "  Cell In[1], line 1\n    x = (\n        ^"


def test_chained_exceptions_keep_the_link_and_the_cause() -> None:
    tb = [
        "-" * 75,
        "KeyError                                  Traceback (most recent call last)",
        "Cell In[1], line 2\n      1 try:\n----> 2     {}['a']\n",
        "KeyError: 'a'",
        "\nThe above exception was the direct cause of the following exception:\n",
        "ValueError                                Traceback (most recent call last)",
        "Cell In[1], line 4\n      3 except KeyError as e:\n"
        "----> 4     raise ValueError('bad') from e\n",
        "ValueError: bad",
    ]
    assert compact_traceback(tb, ename="ValueError", evalue="bad").splitlines() == [
        "Cell In[1], line 2",
        "----> 2     {}['a']",
        "KeyError: 'a'",
        "The above exception was the direct cause of the following exception:",
        "Cell In[1], line 4",
        "----> 4     raise ValueError('bad') from e",
    ]


def test_deep_recursion_in_cell_code_is_capped() -> None:
    frames = [_ipy_frame("Cell In[1], line 3", "----> 3 f(0)")]
    frames += [_ipy_frame("Cell In[1], line 2, in f(n)", "----> 2     return f(n+1)")] * 200
    tb = ["RecursionError     Traceback (most recent call last)", *frames, "RecursionError: x"]
    out = compact_traceback(tb, ename="RecursionError", evalue="x")
    assert out.count("Cell In[1]") == MAX_FRAMES
    assert f"… {201 - MAX_FRAMES} frames …" in out
    assert out.splitlines()[0] == "Cell In[1], line 3"


def test_ipython_skipping_note_is_kept() -> None:
    tb = [
        "RecursionError     Traceback (most recent call last)",
        _ipy_frame("Cell In[1], line 2, in f(n)", "----> 2     return f(n+1)"),
        "    [... skipping similar frames: f at line 2 (2987 times)]\n",
        _ipy_frame("Cell In[1], line 2, in f(n)", "----> 2     return f(n+1)"),
        "RecursionError: maximum recursion depth exceeded",
    ]
    out = compact_traceback(tb, ename="RecursionError", evalue="maximum recursion depth exceeded")
    assert "[... skipping similar frames: f at line 2 (2987 times)]" in out.splitlines()


def test_strip_ansi() -> None:
    assert strip_ansi("\x1b[38;5;241;43m.\x1b[39;49m\x1b[0m") == "."


@pytest.mark.parametrize(
    ("text", "env", "home", "expected"),
    [
        ("/opt/env/lib/x.py", "/opt/env", "", "<env>/lib/x.py"),
        ("/home/al/data.csv", "", "/home/al", "~/data.csv"),
        ("/home/al/.venv/lib/a.py /home/al/b", "/home/al/.venv", "/home/al", "<env>/lib/a.py ~/b"),
        ("~/.venv/lib/a.py", "/home/al/.venv", "/home/al/", "<env>/lib/a.py"),
        ("/home/alice/x /data/home/al/x", "", "/home/al", "/home/alice/x /data/home/al/x"),
        ("'/home/al' (/home/al/x)", "", "/home/al", "'~' (~/x)"),
        ("/anything", "", "", "/anything"),
        ("/anything", "/", "/", "/anything"),
    ],
)
def test_normalize_paths(text: str, env: str, home: str, expected: str) -> None:
    assert normalize_paths(text, env_prefix=env, home=home) == expected
