"""docs/architecture.md against the tree: every package on the map, every named path real."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "jupyter_agent"
DOC = ROOT / "docs" / "architecture.md"

# A backticked path: no spaces, no braces (routes like `agent/chats/{id}/events` are not).
PATH = re.compile(r"`([\w.-]+(?:/[\w.-]*)+)`")
# The grid's columns that name a layer's folder: a cell's names live in it.
LAYER_COLUMNS = {"server", "runtime", "store", "core"}


def doc() -> str:
    return DOC.read_text(encoding="utf-8")


def section(title: str) -> str:
    text = doc()
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def real_packages() -> set[str]:
    return {
        str(init.parent.relative_to(ROOT)) + "/" for init in sorted(PACKAGE.rglob("__init__.py"))
    }


def test_every_package_has_its_line_and_no_line_is_stale() -> None:
    listed = re.findall(r"^- `(jupyter_agent/[\w/]*)`:", section("Every package"), re.M)
    assert len(listed) == len(set(listed)), "a package is listed twice"
    assert set(listed) == real_packages(), {
        "missing from the map": sorted(real_packages() - set(listed)),
        "on the map, not in the tree": sorted(set(listed) - real_packages()),
    }


def resolve(name: str, base: Path) -> Path:
    """A path as the page writes it: from the repository root when it starts with one of
    its top folders, else from ``base``."""
    if name.split("/")[0] in {"jupyter_agent", "labextension", "tests", "docs"}:
        return ROOT / name
    return base / name


def test_every_path_the_page_names_exists() -> None:
    # (the grid's names are relative to their column: the next test reads those)
    text = doc().replace(section("The grid"), "")
    missing = [name for name in PATH.findall(text) if not resolve(name, PACKAGE).exists()]
    assert missing == [], f"paths on the map that are not in the tree: {missing}"


def test_every_name_in_the_grid_exists_in_its_layer() -> None:
    rows = [line for line in section("The grid").splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in rows[0].strip("|").split("|")]
    assert set(header) >= LAYER_COLUMNS | {"concern", "elsewhere"}, header
    assert len(rows) > 2, "the grid has no concern"
    missing = []
    for row in rows[2:]:  # after the header and its |---| line
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        for column, cell in zip(header, cells, strict=True):
            if column == "concern":
                continue
            base = PACKAGE / column if column in LAYER_COLUMNS else PACKAGE
            if column == "panel":  # the JupyterLab extension's sources, by the same concerns
                base = ROOT / "labextension" / "src"
            for name in re.findall(r"`([^`]+)`", cell):
                if not resolve(name, base).exists():
                    missing.append(f"{column}: {name}")
    assert missing == [], f"grid names that are not in the tree: {missing}"
