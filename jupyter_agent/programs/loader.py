"""Importing a deployed program's folder as a package and finding its entry point.

The folder is imported as the package ``jupyter_agent_deployed.<name>`` (a unique name
per version, :func:`module_name`, or per deploy check), so its modules can import each
other relatively (``from .util import x``) and never clash with another version's. The
entry module (``program`` by default, dotted for a module in a subfolder) must define the
entry function (``program``), a generator function ``(run_id, chat_id) -> EffectGen``.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import threading
import types
from pathlib import Path
from typing import Any, Final

from jupyter_agent.programs import moved
from jupyter_agent.programs.builtin import Factory
from jupyter_agent.programs.refs import HASH_CHARS

__all__ = ["ENTRY", "PARENT", "EntryMissing", "import_program", "module_name", "unload"]

#: The synthetic parent package of every deployed program's package.
PARENT: Final = "jupyter_agent_deployed"
#: The entry function's name.
ENTRY: Final = "program"
# Imports mutate sys.modules: one at a time (the import system's own locks are per module).
_LOCKS_GUARD: Final = threading.Lock()
#: One lock per package name: a version whose top level hangs blocks only its own import.
_LOCKS: Final[dict[str, threading.Lock]] = {}


def _lock_for(name: str) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(name, threading.Lock())


class EntryMissing(Exception):
    """The entry module has no entry function, or it is not a generator function."""


def module_name(family: str, version: int, full_hash: str) -> str:
    """``jupyter_agent_deployed.<family>_v<N>_<hash12>`` (``-`` in a family becomes ``_``)."""
    return f"{PARENT}.{family.replace('-', '_')}_v{version}_{full_hash[:HASH_CHARS]}"


def _parent() -> types.ModuleType:
    parent = sys.modules.get(PARENT)
    if parent is None:
        parent = types.ModuleType(PARENT, "Deployed programs, one package each.")
        parent.__path__ = []
        sys.modules[PARENT] = parent
    return parent


def import_program(folder: Path, name: str, entry: str = "program") -> Factory:
    """Import ``folder`` as package ``name`` (under :data:`PARENT`) and return its entry
    function. Raises what the import raised (SyntaxError, ImportError, any exception of
    the module's top level), or :class:`EntryMissing`. A package already imported under
    ``name`` is reused (a version's files never change). A program deployed before the
    package's regrouping imports its old module names (:mod:`.moved`)."""
    moved.install()
    with _lock_for(name):
        with _LOCKS_GUARD:
            parent = _parent()
        package = sys.modules.get(name)
        if package is None:
            package = types.ModuleType(name)
            package.__path__ = [str(folder)]
            package.__package__ = name
            package.__file__ = None
            init = folder / "__init__.py"
            sys.modules[name] = package
            try:
                if init.is_file():
                    package.__file__ = str(init)
                    code = compile(init.read_text(encoding="utf-8"), str(init), "exec")
                    exec(code, package.__dict__)
                setattr(parent, name.rpartition(".")[2], package)
            except BaseException:
                unload(name)
                raise
        try:
            module = importlib.import_module(f"{name}.{entry}")
        except BaseException:
            unload(name)
            raise
    found: Any = getattr(module, ENTRY, None)
    if found is None:
        raise EntryMissing(f"no entry point `{ENTRY}` in {entry.replace('.', '/')}.py")
    if not inspect.isgeneratorfunction(found):
        raise EntryMissing(
            f"{entry.replace('.', '/')}.py: `{ENTRY}` is not a generator function"
            " (it must yield effects: def program(run_id, chat_id): ... yield ...)"
        )
    return found  # type: ignore[no-any-return]


def unload(name: str) -> None:
    """Forget package ``name`` and its modules (a deploy check's throwaway import)."""
    for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
        sys.modules.pop(key, None)
    parent = sys.modules.get(PARENT)
    if parent is not None and hasattr(parent, name.rpartition(".")[2]):
        delattr(parent, name.rpartition(".")[2])
