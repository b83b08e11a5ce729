"""The README names what this build really records (issue 30, item 10): the current
program version, not one of the past."""

from __future__ import annotations

from pathlib import Path

from jupyter_agent.core.loop.machine import PROGRAM

README = Path(__file__).resolve().parents[1] / "README.md"


API = README.parent / "docs" / "api.md"


def test_readme_names_the_current_program_version():
    text = README.read_text(encoding="utf-8")
    assert f"This version's runs are `{PROGRAM}`." in text
    assert f"the server's run manager starts the pure loop `{PROGRAM}`" in text
    assert f"named and versioned (`{PROGRAM}`, with the adapters" in text
    assert f"(`{PROGRAM}#fd4d4de9429e`), and `jupyter agent replay` finds them" in text
    assert f"Runs of this version are `{PROGRAM}`." in API.read_text(encoding="utf-8")
