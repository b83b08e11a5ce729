"""The README names what this build really records (issue 30, item 10): the current
program version, not one of the past."""

from __future__ import annotations

from pathlib import Path

from jupyter_agent.core.loop.machine import PROGRAM

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_names_the_current_program_version():
    text = README.read_text(encoding="utf-8")
    assert f"This version's runs are `{PROGRAM}`." in text
