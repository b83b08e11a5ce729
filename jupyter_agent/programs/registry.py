"""Which version of a program a run uses, and the recorded versions replay loads.

:class:`ProgramRegistry` is runtime-side; its methods are blocking (a store query, maybe an
import): call them in a worker thread (``asyncio.to_thread``).

- :meth:`~ProgramRegistry.resolve` (the hot path, every run start): one indexed query
  (``store.activation_mark()``); the active map (layer, family) -> version and the stored
  rows are re-read only when that mark changed; a deployed version's module is imported
  once and cached by its full hash forever (versions are immutable).
- Active version of family F for agent A: the newest activation row of (A, F) unless it
  clears the override, else the newest of ("", F) unless it clears, else ``DEFAULTS[F]``.
- :meth:`~ProgramRegistry.load` (replay, recovery): a built-in from the package (a recorded
  hash of another build is a ``note``, not an error; but first a deployed version with
  that hash, renumbered when a package upgrade made its number built in, is looked up by
  ``(name, hash)``: an old log replays as the deployed program); a deployed version from the store,
  else from the cache dir; its files' hash is recomputed and must match the record
  (ProgramMismatch), and a version found nowhere is ProgramMissing.
- Every deployed version loaded is materialised into ``{cache_dir}/{fullhash}/`` (files and
  ``meta.json``), so a local replay works without the database.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_agent.exceptions import ProgramFault, ProgramMismatch, ProgramMissing
from jupyter_agent.programs.builtin import (
    BUILTIN,
    DEFAULTS,
    Factory,
    builtin_hash,
    builtin_ref,
)
from jupyter_agent.programs.files import content_hash, materialise, read_materialised
from jupyter_agent.programs.loader import import_program, module_name
from jupyter_agent.programs.refs import HASH_CHARS, ProgramRef, parse_ref

__all__ = ["ProgramRegistry", "Resolved", "active_version"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Resolved:
    """A program ready to run: ``ref`` (with its full hash), the sub-programs it ``uses``,
    its ``factory`` ``(run_id, chat_id) -> EffectGen``, whether it is ``builtin``, and a
    ``note`` for replay ("recorded with another build of ...", else "")."""

    ref: ProgramRef
    uses: tuple[ProgramRef, ...]
    factory: Factory
    builtin: bool
    note: str = ""

    @property
    def programs(self) -> tuple[str, ...]:
        """What its runs record: ``(ref.text, *uses texts)``, each ``name@vN#hash12``."""
        return (self.ref.text, *(u.text for u in self.uses))


def active_version(layers: dict[tuple[str, str], int | None], agent: str, family: str) -> str:
    """The active ``name@vN`` of ``family`` for ``agent`` given each layer's newest
    activation (``(agent, family) -> version or None``; ``""`` the server-wide layer)."""
    for layer in (agent, ""):
        version = layers.get((layer, family))
        if version is not None:
            return f"{family}@v{version}"
    return DEFAULTS[family]


class ProgramRegistry:
    """The registry over ``store`` (a Store; None: the cache dir and built-ins only, for a
    local replay) with the materialised versions under ``cache_dir``."""

    def __init__(self, store: Any, cache_dir: Path) -> None:
        self._store = store
        self.cache_dir = Path(cache_dir)
        self._lock = threading.RLock()
        self._mark = -1
        self._layers: dict[tuple[str, str], int | None] = {}
        self._by_key: dict[str, Resolved] = {}  # name@vN -> Resolved, reset with the mark
        self._by_hash: dict[str, Factory] = {}  # full hash -> entry: forever
        self._builtin: dict[str, Resolved] = {}

    # --- the hot path --------------------------------------------------------------------

    def resolve(self, agent: str, family: str) -> Resolved:
        """The active version of run family ``family`` for ``agent``. KeyError for a
        family that is not a run family; ProgramFault when the active deployed version
        cannot be loaded (the run ends error); StoreError from the store."""
        if family not in DEFAULTS:
            raise KeyError(family)
        layers = self.layers()
        key = active_version(layers, agent, family)
        found = self._by_key.get(key)
        if found is not None:
            return found
        with self._lock:
            found = self._by_key.get(key)
            if found is None:
                found = self._resolve_key(key)
                self._by_key[key] = found
            return found

    def cached(self, agent: str, family: str, mark: int) -> Resolved | None:
        """The active version of run family ``family`` for ``agent`` with no store read and
        no file read, or None (then :meth:`resolve`, in a thread): found when ``mark``, the
        store's :meth:`~jupyter_agent.store.repo.Store.activation_mark` as the caller just
        read it, is the one this registry's layers were read at, and that version was
        resolved before. Never blocks on the lock (the event loop calls it): the mark is
        read before and after the lookup, and :meth:`layers` sets no mark while it changes
        the layers and the versions, so a lookup an update overlapped answers None."""
        if family not in DEFAULTS or mark != self._mark:
            return None
        found = self._by_key.get(active_version(self._layers, agent, family))
        return found if mark == self._mark else None

    def resolve_key(self, key: str) -> Resolved:
        """The version ``key`` (``toolcaller@v7``: built in or deployed), active or not
        (a rerun names one). ProgramFault when it is not stored or does not load."""
        with self._lock:
            found = self._by_key.get(key)
            return found if found is not None else self._resolve_key(key)

    def layers(self) -> dict[tuple[str, str], int | None]:
        """Each layer's newest activation ``(agent, family) -> version or None``, re-read
        only when the store's activation mark moved."""
        if self._store is None:
            return {}
        mark = self._store.activation_mark()
        if mark == self._mark:
            return self._layers
        with self._lock:
            if mark != self._mark:
                layers: dict[tuple[str, str], int | None] = {}
                for row in self._store.activations():
                    layers[(row.agent, row.name)] = row.version
                self._mark = -1  # what :meth:`cached` reads unlocked: no mark while they change
                self._layers = layers
                self._by_key = {}  # a pruned number may have been deployed again
                self._mark = mark
            return self._layers

    def invalidate(self) -> None:
        """Forget the active map (the next resolve re-reads it)."""
        with self._lock:
            self._mark = -1

    def _resolve_key(self, key: str) -> Resolved:
        if key in BUILTIN:
            return self._builtin_resolved(key)
        name, _, version = key.partition("@v")
        row = self._store.program(name, int(version)) if self._store is not None else None
        if row is None:
            raise ProgramFault(f"{key} is active but not stored", program=key)
        return self._deployed(row, ProgramRef(name, int(version), row.hash))

    # --- replay and recovery -------------------------------------------------------------

    def load(self, ref: ProgramRef | str) -> Resolved:
        """The recorded version ``ref`` (``name@vN`` or ``name@vN#hash``). ProgramMissing
        when neither the store nor the cache dir has it, ProgramMismatch when its files
        hash differently from the record, ProgramFault when it cannot be imported.

        A built-in key recorded with a hash that is not the built-in's is first looked up
        by ``(name, hash)`` (the store, then the cache dir): a deployed version that a
        package upgrade renumbered (``store/program_renumber.py``) replays as itself, with
        a note; found nowhere, it is the built-in recorded with another build (a note)."""
        if isinstance(ref, str):
            ref = parse_ref(ref)
        if ref.key in BUILTIN:
            resolved = self._builtin_resolved(ref.key)
            full = builtin_hash(ref.key)
            if ref.hash and not full.startswith(ref.hash):
                moved = self._renumbered(ref)
                if moved is not None:
                    return moved
                note = (
                    f"recorded with another build of {ref.key}"
                    f" (#{ref.hash[:HASH_CHARS]} vs #{full[:HASH_CHARS]})"
                )
                return Resolved(resolved.ref, resolved.uses, resolved.factory, True, note)
            return resolved
        row = self._store.program(ref.name, ref.version) if self._store is not None else None
        if row is not None:
            files, meta = dict(row.files), _meta(row)
        else:
            cached = self._cached(ref)
            if cached is None:
                raise ProgramMissing(
                    f"this store has no {ref.key}{_hash_note(ref)}: it was deployed on"
                    " another server? replay with --addr",
                    ref=ref.text,
                )
            files, meta = cached
        return self._checked(ref, ref.version, files, meta)

    def _renumbered(self, ref: ProgramRef) -> Resolved | None:
        """The deployed version of ``ref.name`` whose hash ``ref`` records (the store, else
        the cache dir), under the number it has now; None when there is none."""
        assert ref.hash is not None
        row = self._store.program_by_hash(ref.name, ref.hash) if self._store is not None else None
        if row is not None:
            version, files, meta = row.version, dict(row.files), _meta(row)
        else:
            cached = self._cached(ref, any_version=True)
            if cached is None:
                return None
            files, meta = cached
            version = int(meta.get("version") or ref.version)
        resolved = self._checked(ref, version, files, meta)
        note = f"{ref.text} is the deployed {resolved.ref.key} now ({ref.key} became built in)"
        return Resolved(resolved.ref, resolved.uses, resolved.factory, False, note)

    def _checked(
        self, ref: ProgramRef, version: int, files: dict[str, str], meta: dict[str, Any]
    ) -> Resolved:
        found = content_hash(ref.name, files)
        if not ref.same_content(found):
            raise ProgramMismatch(
                f"{ref.key}: the run recorded #{ref.hash}, the stored files hash to"
                f" #{found[:HASH_CHARS]}",
                ref=ref.text,
                found=found,
            )
        from jupyter_agent.store.program_store import ProgramRow  # store-side dataclass

        stored = ProgramRow(
            name=ref.name,
            version=version,
            hash=found,
            files=files,
            entry=str(meta.get("entry") or "program"),
            uses=tuple(meta.get("uses") or ()),
            description=str(meta.get("description") or ""),
        )
        return self._deployed(stored, ProgramRef(ref.name, version, found))

    def materialise(self, row: Any) -> Path:
        """Write a stored version (a ProgramRow) into the cache dir; its folder."""
        return materialise(self.cache_dir, row.hash, row.files, _meta(row))

    def _cached(
        self, ref: ProgramRef, *, any_version: bool = False
    ) -> tuple[dict[str, str], dict[str, Any]] | None:
        """A materialised version of ``ref`` (its hash prefix; the version must match
        unless ``any_version``: a folder written before a renumbering keeps its old one)."""
        if not self.cache_dir.is_dir():
            return None
        prefix = ref.hash or ""
        for folder in sorted(self.cache_dir.glob(f"{prefix}*")):
            got = read_materialised(folder) if folder.is_dir() else None
            if got is None or got[1].get("name") != ref.name:
                continue
            if any_version or got[1].get("version") == ref.version:
                return got
        return None

    # --- building a Resolved -------------------------------------------------------------

    def _builtin_resolved(self, key: str) -> Resolved:
        found = self._builtin.get(key)
        if found is None:
            program = BUILTIN[key]
            factory = program.factory
            if factory is None:
                raise KeyError(f"{key} is a sub-program: it does not run on its own")
            uses = tuple(builtin_ref(u) for u in program.uses)
            found = Resolved(builtin_ref(key), uses, factory, True)
            self._builtin[key] = found
        return found

    def _deployed(self, row: Any, ref: ProgramRef) -> Resolved:
        uses = tuple(builtin_ref(u) for u in row.uses if u in BUILTIN)
        factory = self._by_hash.get(row.hash)
        if factory is None:
            with self._lock:
                factory = self._by_hash.get(row.hash)
                if factory is None:
                    factory = self._import(row, ref)
                    self._by_hash[row.hash] = factory
        return Resolved(ref, uses, factory, False)

    def _import(self, row: Any, ref: ProgramRef) -> Factory:
        try:
            folder = self.materialise(row)
        except OSError as exc:
            raise ProgramFault(
                f"{ref.text}: cannot write it to the cache dir ({exc})", program=ref.text
            ) from None
        name = module_name(row.name, row.version, row.hash)
        try:
            return import_program(folder, name, row.entry)
        except Exception as exc:
            log.warning("cannot load %s", ref.text, exc_info=True)
            raise ProgramFault(
                f"{ref.text} cannot be loaded: {type(exc).__name__}: {exc}", program=ref.text
            ) from None


def _meta(row: Any) -> dict[str, Any]:
    return {
        "name": row.name,
        "version": row.version,
        "hash": row.hash,
        "entry": row.entry,
        "uses": list(row.uses),
        "description": row.description,
    }


def _hash_note(ref: ProgramRef) -> str:
    return f" (#{ref.hash[:HASH_CHARS]})" if ref.hash else ""
