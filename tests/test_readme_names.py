"""The guides name what this build really records (issue 30, item 10): the current
program version, not one of the past. (The README's sections moved to docs/guide/ in
issue 32; the README links them.)"""

from __future__ import annotations

from pathlib import Path

from jupyter_agent.core.loop.machine import PROGRAM

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "guide"
API = ROOT / "docs" / "api.md"


def _read(name: str) -> str:
    return (GUIDE / name).read_text(encoding="utf-8")


def test_the_guides_name_the_current_program_version() -> None:
    assert f"This version's runs are `{PROGRAM}`." in _read("cli-guide.md")
    assert f"the server's run manager starts the pure loop `{PROGRAM}`" in _read("jupyter.md")
    assert f"named and versioned (`{PROGRAM}`, with the adapters" in _read("programs.md")
    assert f"(`{PROGRAM}#fd4d4de9429e`), and `jupyter agent replay` finds them" in _read(
        "programs.md"
    )
    assert f"Runs of this version are `{PROGRAM}`." in API.read_text(encoding="utf-8")


def test_the_readme_starts_with_the_two_commands_and_links_every_guide() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    run, test = text.index("pip install -e . && jupyter lab"), text.index("bash scripts/test")
    assert run < test < text.index("## Documentation")
    for page in sorted(GUIDE.glob("*.md")):
        assert f"(docs/guide/{page.name})" in text, page.name
    assert len(text) < 10_000  # what it is, a screenshot, the two commands, the links
