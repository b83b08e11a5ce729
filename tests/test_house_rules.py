"""The house rules the import contracts cannot state (CONTRIBUTING, docs/architecture.md).

Measured on the sources of the tree under test: no module over 450 lines (the panel's
TypeScript included), no folder with more than 15 modules directly in it, no import cycle
between modules (imports under TYPE_CHECKING and inside functions count, as grimp sees
them), and every package's ``__init__.py`` says what it holds, what it may import and who
uses it. The layering itself is in ``.importlinter`` (``lint-imports``).
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import grimp

import jupyter_agent

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "jupyter_agent"
PANEL = ROOT / "labextension" / "src"

MAX_LINES = 450
MAX_MODULES_PER_FOLDER = 15


def python_modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def packages() -> list[Path]:
    """Every package folder of jupyter_agent (a folder with an ``__init__.py``)."""
    return sorted(p.parent for p in PACKAGE.rglob("__init__.py"))


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_python_module_over_the_limit() -> None:
    over = {
        str(path.relative_to(ROOT)): n
        for path in python_modules()
        if (n := line_count(path)) > MAX_LINES
    }
    assert over == {}, f"modules over {MAX_LINES} lines: {over}"


def test_no_panel_module_over_the_limit() -> None:
    sources = [p for p in PANEL.rglob("*.ts") if "__tests__" not in p.parts]
    assert sources, f"no TypeScript sources under {PANEL}"
    over = {
        str(path.relative_to(ROOT)): n for path in sources if (n := line_count(path)) > MAX_LINES
    }
    assert over == {}, f"panel modules over {MAX_LINES} lines: {over}"


def test_no_folder_over_the_limit() -> None:
    crowded = {}
    for folder in packages():
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        if len(modules) > MAX_MODULES_PER_FOLDER:
            crowded[str(folder.relative_to(ROOT))] = len(modules)
    assert crowded == {}, f"folders with over {MAX_MODULES_PER_FOLDER} modules: {crowded}"


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for module in sorted(graph.modules):
            if module not in index:
                visit(module)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(found)


def test_import_cycles_are_found() -> None:
    # The finder itself, on a graph with one cycle of three and a tail outside it.
    graph = grimp.ImportGraph()
    for importer, imported in [("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.d", "p.a")]:
        graph.add_import(importer=importer, imported=imported)
    assert import_cycles(graph) == [["p.a", "p.b", "p.c"]]


def test_no_import_cycle_between_modules() -> None:
    graph = grimp.build_graph("jupyter_agent", include_external_packages=False, cache_dir=None)
    # grimp finds the package the way import does: it must be this tree's.
    assert Path(jupyter_agent.__file__).resolve().parent == PACKAGE
    # The one allowed way back up: the package's root names its ExtensionApp, lazily, for
    # Jupyter Server (the same exception as in .importlinter's layers contract).
    root, extension_app = "jupyter_agent", "jupyter_agent.server.app"
    if graph.direct_import_exists(importer=root, imported=extension_app):
        graph.remove_import(importer=root, imported=extension_app)
    cycles = [
        " <-> ".join(name.removeprefix("jupyter_agent.") for name in cycle)
        for cycle in import_cycles(graph)
    ]
    assert cycles == [], "import cycles between modules:\n" + "\n".join(cycles)


# What a package docstring names: what it may import ("imports", "may import", "pure") and
# who uses it ("used by", "uses").
IMPORTS = re.compile(r"\bimport|\bpure\b", re.IGNORECASE)
USERS = re.compile(r"\bused\s+(by|from)\b|\buses?\s+it\b|\bimported\s+by\b", re.IGNORECASE)


def test_every_package_says_what_it_holds_imports_and_who_uses_it() -> None:
    lacking = {}
    for folder in packages():
        init = folder / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        lines = [line for line in doc.splitlines() if line.strip()]
        missing = [
            what
            for what, ok in [
                ("a docstring of a few lines", len(lines) >= 2),
                ("what it may import", bool(IMPORTS.search(doc))),
                ("who uses it", bool(USERS.search(doc))),
            ]
            if not ok
        ]
        if missing:
            lacking[str(init.relative_to(ROOT))] = missing
    assert lacking == {}, f"package docstrings lacking: {lacking}"
