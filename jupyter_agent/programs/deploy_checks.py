"""The checks a deploy passes before anything is stored (blocking).

:func:`check_deploy` runs them in order and raises ProgramRefused at the first failure,
naming the file and line:

1. the family: a run family (``toolcaller``, ``history``); a sub family (``llm``,
   ``autorecall``) or any other name is refused;
2. the files' rules (:func:`~jupyter_agent.programs.files.check_files`) and
   ``program.json`` (``entry``, ``description``, ``uses``: built-in sub-programs or
   ``history@v1``);
3. every ``.py`` compiles;
4. the folder imports in isolation (a throwaway package name, under the watchdog) and the
   entry is a generator function;
5. the smoke test (:mod:`jupyter_agent.programs.smoke`) passes;
6. each of the folder's own ``scenarios/*.jsonl`` replays identically with it.

It returns a :class:`Checked` (the files, their hash, entry, uses, description); the
import is forgotten afterwards (the registry imports a stored version under its own name).

Checks 1-3 run no program code (:func:`check_static`: the server runs them itself, in a
worker thread); checks 4-6 run it (:func:`check_code`): the server runs them only in a
check process (:mod:`~jupyter_agent.programs.check_process`), never in its own.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from jupyter_agent.exceptions import (
    NondeterminismError,
    ProgramRefused,
    ProgramStuck,
    TraceError,
)
from jupyter_agent.programs.builtin import BUILTIN, DEFAULTS, RUN_FAMILIES, SUB_FAMILIES
from jupyter_agent.programs.files import check_files, content_hash, materialise
from jupyter_agent.programs.loader import PARENT, EntryMissing, import_program, unload
from jupyter_agent.programs.refs import NAME_RE, family_of
from jupyter_agent.programs.smoke import STEP_S, smoke, where
from jupyter_agent.programs.watchdog import call_with_deadline
from jupyter_agent.trace.log import read_log
from jupyter_agent.trace.replay import replay

__all__ = ["ALLOWED_USES", "Checked", "check_code", "check_deploy", "check_family", "check_static"]

#: What a deployed program's ``uses`` may name.
ALLOWED_USES: Final = frozenset(
    k for k, p in BUILTIN.items() if p.kind == "sub" or family_of(k) == "history"
)
_ENTRY_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_SUB_HOSTS: Final = {
    "autorecall": "autorecall runs inside toolcaller: deploy a toolcaller version that"
    " carries your recall step",
    "llm": "llm runs inside toolcaller: deploy a toolcaller version that carries your"
    " adapter changes",
}


@dataclass(frozen=True, kw_only=True)
class Checked:
    """A deploy that passed every check."""

    name: str
    files: dict[str, str]
    hash: str
    entry: str
    uses: tuple[str, ...]
    description: str


def check_family(name: Any) -> str:
    """``name`` if it is a deployable (run) family; ProgramRefused otherwise."""
    if not isinstance(name, str) or NAME_RE.fullmatch(name) is None:
        raise ProgramRefused(f"{str(name)[:60]!r} is not a program name")
    if name in SUB_FAMILIES:
        raise ProgramRefused(_SUB_HOSTS.get(name, f"{name} is not deployable"))
    if name not in RUN_FAMILIES:
        raise ProgramRefused(
            f"unknown program family {name!r}: deploy one of {', '.join(RUN_FAMILIES)}"
        )
    return name


def _manifest(name: str, files: dict[str, str]) -> tuple[str, tuple[str, ...], str]:
    """``program.json``'s entry, uses and description (with their defaults)."""
    raw = files.get("program.json")
    meta: Any = {}
    if raw is not None:
        try:
            meta = json.loads(raw)
        except ValueError as exc:
            raise ProgramRefused(f"program.json line {getattr(exc, 'lineno', 1)}: {exc}") from None
        if not isinstance(meta, dict):
            raise ProgramRefused("program.json: must be a JSON object")
    entry = meta.get("entry", "program")
    if not isinstance(entry, str) or _ENTRY_RE.fullmatch(entry) is None:
        raise ProgramRefused("program.json: `entry` must be a module path such as 'program'")
    description = meta.get("description", "")
    if not isinstance(description, str):
        raise ProgramRefused("program.json: `description` must be a string")
    uses = meta.get("uses", list(BUILTIN[DEFAULTS[name]].uses))
    if not isinstance(uses, list) or not all(isinstance(u, str) for u in uses):
        raise ProgramRefused("program.json: `uses` must be a list of names such as 'llm@v1'")
    for use in uses:
        if use not in ALLOWED_USES:
            raise ProgramRefused(
                f"program.json: `uses` names {use!r}: use {', '.join(sorted(ALLOWED_USES))}"
            )
    entry_file = entry.replace(".", "/") + ".py"
    if entry_file not in files:
        raise ProgramRefused(
            f"no entry point `program`: {entry_file} is missing"
            + (" (program.json's entry)" if raw is not None else "")
        )
    return entry, tuple(dict.fromkeys(uses)), description[:500]


def _compile_all(files: dict[str, str]) -> None:
    for path, body in files.items():
        if not path.endswith(".py"):
            continue
        try:
            compile(body, path, "exec", dont_inherit=True)
        except SyntaxError as exc:
            raise ProgramRefused(f"{path} line {exc.lineno}: {exc.msg}") from None
        except ValueError as exc:  # e.g. source with a NUL byte
            raise ProgramRefused(f"{path}: {exc}") from None


def check_deploy(name: str, files: Any, *, scratch: Path | None = None) -> Checked:
    """Run every check on a deploy of ``files`` to family ``name`` (see the module
    docstring); ProgramRefused at the first failure. ``scratch``: where the throwaway
    copy goes (default: the system's temp dir). Blocking; runs the program's code in this
    process (the check process's entry, :mod:`~jupyter_agent.programs.check_worker`)."""
    checked = check_static(name, files)
    check_code(checked, scratch=scratch)
    return checked


def check_static(name: str, files: Any) -> Checked:
    """Checks 1-3 (family, files, ``program.json``, every ``.py`` compiles): no program
    code runs. ProgramRefused at the first failure; blocking (a worker thread)."""
    family = check_family(name)
    checked = check_files(files)
    entry, uses, description = _manifest(family, checked)
    _compile_all(checked)
    return Checked(
        name=family,
        files=checked,
        hash=content_hash(family, checked),
        entry=entry,
        uses=uses,
        description=description,
    )


def check_code(checked: Checked, *, scratch: Path | None = None) -> None:
    """Checks 4-6 on a :func:`check_static` result: import in isolation, the smoke test,
    the folder's own scenarios. Runs the program's code in THIS process: only in a check
    process. ProgramRefused at the first failure; the import is forgotten afterwards."""
    family, entry = checked.name, checked.entry
    base = Path(tempfile.mkdtemp(prefix="ja-deploy-", dir=scratch))
    module = f"{PARENT}.check_{family.replace('-', '_')}_{uuid.uuid4().hex}"
    try:
        folder = materialise(base, checked.hash, checked.files, {"name": family})
        entry_file = entry.replace(".", "/") + ".py"
        try:
            factory = call_with_deadline(
                lambda: import_program(folder, module, entry), STEP_S, message="import"
            )
        except EntryMissing as exc:
            raise ProgramRefused(str(exc)) from None
        except ProgramStuck:
            raise ProgramRefused(
                f"{entry_file}: importing it ran past {STEP_S:g} s (an endless loop?)"
            ) from None
        except BaseException as exc:  # SystemExit too: a program's top level is its own
            raise ProgramRefused(
                f"{where(exc, folder, entry_file)}: import failed:"
                f" {type(exc).__name__}: {str(exc)[:300]}"
            ) from None
        smoke(factory, family, folder=folder, entry_file=entry_file)
        for path in sorted(p for p in checked.files if p.startswith("scenarios/")):
            if path.endswith(".jsonl"):
                _own_scenario(factory, family, folder, path)
    finally:
        unload(module)
        shutil.rmtree(base, ignore_errors=True)


def _own_scenario(factory: Any, family: str, folder: Path, path: str) -> None:
    """The folder's recorded scenario ``path`` must replay identically."""
    try:
        trace = read_log(folder / path)
    except TraceError as exc:
        raise ProgramRefused(f"{path}: not an effect log: {exc}") from None
    recorded = trace.header.get("program")
    if not isinstance(recorded, str) or family_of(recorded) != family:
        raise ProgramRefused(f"{path}: a log of {recorded!r}, not of a {family} program")
    run_id = str(trace.header.get("run_id") or "")
    chat_id = str(trace.header.get("chat_id") or "")
    try:
        call_with_deadline(lambda: replay(factory(run_id, chat_id), trace), STEP_S * 2)
    except NondeterminismError as exc:
        raise ProgramRefused(f"{path}: the replay differs at seq {exc.seq}: {exc}"[:600]) from None
    except ProgramStuck:
        raise ProgramRefused(f"{path}: the replay ran past {STEP_S * 2:g} s") from None
    except Exception as exc:
        raise ProgramRefused(
            f"{path}: the replay failed at {where(exc, folder)}: {type(exc).__name__}: {exc}"[:600]
        ) from None
