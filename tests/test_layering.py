"""The package's layering (CONTRIBUTING): who may import whom, checked on the sources."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "jupyter_agent"


def imports_of(folder: str) -> dict[str, set[str]]:
    """Every absolute module name each file of ``folder`` imports (relative ones resolved)."""
    found: dict[str, set[str]] = {}
    for path in sorted((PACKAGE / folder).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:  # from ..x import y, relative to jupyter_agent/<folder>/
                    base = ["jupyter_agent", folder][: max(0, 2 - (node.level - 1))]
                    names.add(".".join([*base, node.module] if node.module else base))
                elif node.module:
                    names.add(node.module)
        found[str(path.relative_to(PACKAGE))] = names
    return found


@pytest.mark.parametrize(("folder", "banned"), [("llm", "jupyter_agent.core")])
def test_no_package_cycle(folder: str, banned: str) -> None:
    # core/loop/machine.py uses llm's chat call; llm must not need core back (effects and the
    # model tools live at the top: jupyter_agent.effects, jupyter_agent.tools).
    offenders = {
        name: sorted(n for n in names if n == banned or n.startswith(banned + "."))
        for name, names in imports_of(folder).items()
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_core_is_pure() -> None:
    impure = ("asyncio", "httpx", "tornado", "sqlmodel", "sqlalchemy", "ipykernel")
    impure += ("jupyter_client", "jupyter_server", "subprocess")
    for name, names in imports_of("core").items():
        bad = sorted(n for n in names if n.split(".")[0] in impure)
        assert not bad, (name, bad)


def test_runtime_does_not_import_jupyter_server() -> None:
    # The server hands the runtime its kernel manager (and a gateway's RemoteKernels).
    for name, names in imports_of("runtime").items():
        bad = sorted(n for n in names if n.split(".")[0] == "jupyter_server")
        assert not bad, (name, bad)
