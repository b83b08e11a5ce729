"""The guides name what this build really records (issue 30, item 10): the current
program version, not one of the past. (The README's sections moved to docs/guide/ in
issue 32; the README links them.)"""

from __future__ import annotations

import sys
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


def _budget_rows(text: str) -> dict[str, tuple[str, str, str]]:
    """The rows of the turn budget table: phase -> (chat cell, code cell, goal cell)."""
    head = "| phase | chat turn | code turn | goal (x floor), chat / code |"
    lines = text[text.index(head) :].splitlines()[2:]
    rows = {}
    for line in lines:
        if not line.startswith("|"):
            break
        phase, chat, code, goal = (cell.strip() for cell in line.strip("|").split("|"))
        rows[phase] = (chat, code, goal)
    return rows


def _cap(cell: str) -> float | None:
    return float(cell.split("<=")[1].split("x")[0]) if "<=" in cell else None


def _goals(cell: str) -> tuple[float | None, float | None]:
    chat, _, code = cell.partition("/")
    return (
        float(chat.strip().rstrip("x")) if chat.strip() else None,
        float(code.strip().rstrip("x")) if code.strip() else None,
    )


def test_the_readme_and_the_performance_page_state_the_benchs_budget() -> None:
    # The budget the bench keeps and the goals it prints, stated where a person
    # reads them (issue 27, item 1): the same figures, phase by phase.
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from bench_turn_budget import BUDGET, GOAL
    finally:
        sys.path.remove(str(ROOT / "bench"))
    names = {
        "total, to the reply": "total (to the reply)",
        "total, to `run_end`": "total (to run_end)",
        "POST (to the 202)": "POST",
        "set-up (202 to the first effect)": "set-up",
        "`config.get` (one start answer)": "config.get",
        "`recall.search`": "recall.search",
        "`http.post` (the model call)": "http.post",
        "`cell.run`": "cell.run",
        "between effects (loop, log)": "between effects",
        "after the reply (to `run_end`)": "after the reply",
    }
    for text in ((ROOT / "README.md").read_text(encoding="utf-8"), _read("performance.md")):
        rows = _budget_rows(text)
        assert set(rows) == set(names)
        for label, phase in names.items():
            chat, code, goal = rows[label]
            assert (_cap(chat), _cap(code)) == (
                BUDGET["chat"].get(phase),
                BUDGET["code"].get(phase),
            ), label
            assert _goals(goal) == (GOAL["chat"].get(phase), GOAL["code"].get(phase)), label
