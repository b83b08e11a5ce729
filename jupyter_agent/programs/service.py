"""The program service: deploy, list, show and roll back program versions.

:class:`ProgramService` is what the REST routes (``agent/programs``) and so the CLI use.
Contracts:

- async methods; every check, store call and import in a worker thread
  (``asyncio.to_thread``), never on the event loop;
- :meth:`~ProgramService.deploy` runs every check before anything is written: those
  that run no program code here (:func:`~jupyter_agent.programs.deploy_checks.check_static`),
  those that run it in a check process (:class:`~jupyter_agent.programs.check_process.
  CheckProcess`: never in this process, under a deadline, away from the server's
  secrets). A refusal (ProgramRefused, naming the file and line) stores, writes and
  imports nothing and leaves the active version as it was. A deploy whose files hash as a
  stored version's answers that version (and activates it as asked) without checking it
  again. Deployed versions are materialised in the cache dir (imported when a run uses one);
- :meth:`~ProgramService.rollback`: with ``to``, activate that version (built-in or
  deployed; unknown: NotFound); without, activate the version this layer ran before the
  current one, walking back on repeated rollbacks (:meth:`~ProgramService._previous`):
  back past the first activation, the layer's override is cleared (an agent layer falls
  back to the server-wide one, the server-wide layer to the built-in default); with
  nothing to go back to, BadRequest ``no_rollback``;
- agents are names (``[a-z][a-z0-9_-]{0,39}``, "" the server-wide layer); this service
  does not know which agents the server hosts (the handler may check);
- raises only the error tree (ProgramRefused, BadRequest, NotFound, StoreError).
"""

from __future__ import annotations

import asyncio
import builtins
from pathlib import Path
from typing import Any

from jupyter_agent.exceptions import BadRequest, NotFound
from jupyter_agent.programs.builtin import (
    BUILTIN,
    DEFAULTS,
    RUN_FAMILIES,
    SUB_FAMILIES,
    builtin_hash,
    latest_builtin,
)
from jupyter_agent.programs.check_process import CheckProcess
from jupyter_agent.programs.deploy_checks import check_family, check_static
from jupyter_agent.programs.refs import NAME_RE, ProgramRef, family_of
from jupyter_agent.programs.registry import ProgramRegistry, active_version
from jupyter_agent.store.program_store import ProgramRow

__all__ = ["ProgramService"]


def _agent(agent: Any) -> str:
    if agent in (None, "", "*"):
        return ""
    if not isinstance(agent, str) or NAME_RE.fullmatch(agent) is None:
        raise BadRequest(f"{str(agent)[:60]!r} is not an agent name", reason="unknown_agent")
    return agent


class ProgramService:
    """Deploys and activations over ``store`` (a Store), loading through ``registry``;
    ``checks`` runs a deploy's code checks (default: a :class:`CheckProcess` with the
    server's filtered environment, no sandbox, temp dirs under ``scratch``)."""

    def __init__(
        self,
        store: Any,
        registry: ProgramRegistry,
        *,
        scratch: Path | None = None,
        checks: CheckProcess | None = None,
    ) -> None:
        self.store = store
        self.registry = registry
        self.checks = checks or CheckProcess(scratch=scratch)

    # --- writes --------------------------------------------------------------------------

    async def deploy(
        self,
        name: str,
        files: dict[str, str],
        *,
        agent: str = "",
        by: str = "",
        activate: bool = True,
    ) -> dict[str, Any]:
        """Check, store and (``activate``) activate a new version of ``name`` for layer
        ``agent``; ``{program: version JSON, active: the layer's active ref text}``."""
        layer = _agent(agent)
        checked = await asyncio.to_thread(check_static, name, files)
        stored_already = await asyncio.to_thread(
            self.store.program_by_hash, checked.name, checked.hash
        )
        if stored_already is None:
            await self.checks.run(checked)
        row = ProgramRow(
            name=checked.name,
            hash=checked.hash,
            files=checked.files,
            entry=checked.entry,
            uses=checked.uses,
            description=checked.description,
            created_by=by,
        )

        def store_it() -> tuple[ProgramRow, str]:
            stored = self.store.add_program(row)
            self.registry.materialise(stored)
            if activate:
                self.store.activate(layer, stored.name, stored.version, by)
            return stored, self._active_text(layer, stored.name)

        stored, active = await asyncio.to_thread(store_it)
        return {"program": self._version_json(stored), "active": active}

    async def rollback(
        self, name: str, *, agent: str = "", to: int | None = None, by: str = ""
    ) -> dict[str, Any]:
        """Activate version ``to`` of ``name`` for layer ``agent``, or the one it ran
        before the current one (see the module docstring); ``{active: ref text}``."""
        family = check_family(name)
        layer = _agent(agent)
        if to is not None and (not isinstance(to, int) or isinstance(to, bool) or to < 1):
            raise BadRequest("`to` must be a version number (1, 2, ...)")

        def roll() -> str:
            if to is not None:
                if not self._exists(family, to):
                    raise NotFound(f"no {family}@v{to}")
                self.store.activate(layer, family, to, by)
            else:
                self.store.activate(layer, family, self._previous(layer, family), by)
            return self._active_text(layer, family)

        return {"active": await asyncio.to_thread(roll)}

    def _previous(self, layer: str, family: str) -> int | None:
        """The version this layer ran before its current one (None: the layer's override
        cleared), walking back: a second rollback in a row goes further back, never
        returns to the version just left.

        The layer's activation rows are read as a stack: a row naming the version below
        the top (what a rollback writes, or an activation of that same version) pops the
        top; any other row pushes. The target is the version under the top that still
        exists. BadRequest ``no_rollback`` when the layer has nothing to go back to.
        """
        stack: list[int | None] = [None]  # None: no override (the layer below, or built in)
        for row in self.store.activations(agent=layer, name=family):
            if len(stack) > 1 and row.version == stack[-2]:
                stack.pop()
            elif row.version != stack[-1]:
                stack.append(row.version)
        if len(stack) == 1:
            where = f"agent {layer!r}" if layer else "the server-wide layer"
            raise BadRequest(
                f"{family} has nothing to roll back to in {where}: it runs the version"
                " below it (give `to` to pick one)",
                reason="no_rollback",
            )
        for version in reversed(stack[:-1]):
            if version is None or self._exists(family, version):
                return version
        return None

    def _exists(self, family: str, version: int) -> bool:
        if version <= latest_builtin(family):
            return f"{family}@v{version}" in BUILTIN
        return self.store.program(family, version) is not None

    # --- reads ---------------------------------------------------------------------------

    async def list(self) -> dict[str, Any]:
        """``{programs: [{name, kind, versions: [...], active: {agent or "*": ref}}]}``."""
        return await asyncio.to_thread(self._list)

    def _list(self) -> dict[str, Any]:
        deployed = self.store.programs()
        layers = self.registry.layers()
        hashes = {(r.name, r.version): r.hash for r in deployed}
        out = []
        for family in (*RUN_FAMILIES, *SUB_FAMILIES):
            versions = [self._builtin_json(key) for key in BUILTIN if family_of(key) == family]
            versions += [self._version_json(r) for r in deployed if r.name == family]
            active: dict[str, str] = {}
            if family in DEFAULTS:
                agents = sorted({a for a, f in layers if f == family and a})
                for agent in ("", *agents):
                    key = active_version(layers, agent, family)
                    version = int(key.partition("@v")[2])
                    full = hashes.get((family, version)) or _builtin_full(key)
                    active[agent or "*"] = ProgramRef(family, version, full).text
            kind = "run" if family in RUN_FAMILIES else "sub"
            out.append({"name": family, "kind": kind, "versions": versions, "active": active})
        return {"programs": out}

    async def show(self, name: str, version: int | None = None) -> dict[str, Any]:
        """One version with its ``files`` (default: the server-wide active one); a
        built-in has ``files`` {} and ``modules``. NotFound for an unknown one."""
        if not isinstance(name, str) or name not in (*RUN_FAMILIES, *SUB_FAMILIES):
            raise NotFound(f"no program {str(name)[:60]!r}")
        return await asyncio.to_thread(self._show, name, version)

    def _show(self, name: str, version: int | None) -> dict[str, Any]:
        if version is None:
            if name not in DEFAULTS:
                version = latest_builtin(name)
            else:
                key = active_version(self.registry.layers(), "", name)
                version = int(key.partition("@v")[2])
        key = f"{name}@v{version}"
        if version <= latest_builtin(name):
            if key not in BUILTIN:
                raise NotFound(f"no {key}")
            return {**self._builtin_json(key), "files": {}, "modules": list(BUILTIN[key].modules)}
        row = self.store.program(name, version)
        if row is None:
            raise NotFound(f"no {key}")
        return {**self._version_json(row), "files": dict(row.files), "entry": row.entry}

    # --- JSON ----------------------------------------------------------------------------

    def _active_text(self, layer: str, family: str) -> str:
        self.registry.invalidate()
        key = active_version(self.registry.layers(), layer, family)
        version = int(key.partition("@v")[2])
        if key in BUILTIN:
            return ProgramRef(family, version, builtin_hash(key)).text
        row = self.store.program(family, version)
        return ProgramRef(family, version, row.hash if row else None).text

    @staticmethod
    def _version_json(row: ProgramRow) -> dict[str, Any]:
        return {
            "name": row.name,
            "version": row.version,
            "hash": row.hash,
            "ref": ProgramRef(row.name, row.version, row.hash).text,
            "builtin": False,
            "created": row.created,
            "by": row.created_by,
            "description": row.description,
            "uses": builtins.list(row.uses),
        }

    @staticmethod
    def _builtin_json(key: str) -> dict[str, Any]:
        program = BUILTIN[key]
        name, _, version = key.partition("@v")
        full = builtin_hash(key)
        return {
            "name": name,
            "version": int(version),
            "hash": full,
            "ref": ProgramRef(name, int(version), full).text,
            "builtin": True,
            "created": None,
            "by": None,
            "description": program.description,
            "uses": builtins.list(program.uses),
        }


def _builtin_full(key: str) -> str | None:
    return builtin_hash(key) if key in BUILTIN else None
