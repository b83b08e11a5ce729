"""Where ``jupyter agent replay`` finds the program versions a run recorded.

:class:`ReplayLoader` answers :func:`~jupyter_agent.trace.verify.replay_run`'s
``load(ref)``, in this order:

1. a built-in: the package's (another build's hash is a note, printed to stderr);
2. the local program registry (:class:`~jupyter_agent.programs.registry.ProgramRegistry`)
   over the local database (``--db-url``, else the default SQLite file in the data dir
   when it exists; it is never created) and the local program cache
   ``{data_dir}/jupyter_agent/programs/{fullhash}/`` (works without the database);
3. else the server at ``--addr``: ``GET agent/programs/{name}@v{N}`` gives the files; they
   are materialised into a temporary cache (removed at the end) and loaded by a registry
   over it, which checks their hash against the record.

A version found nowhere is the local :class:`~jupyter_agent.exceptions.ProgramMissing`
(the server's answer, if it could not help, is added to its message); files that hash
differently from the record are ProgramMismatch: the CLI prints one line and exits 2.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any

from jupyter_agent.exceptions import ProgramMissing
from jupyter_agent.programs.builtin import BUILTIN
from jupyter_agent.programs.refs import ProgramRef
from jupyter_agent.runtime.paths import agent_data_dir, default_db_url

__all__ = ["ReplayLoader", "programs_cache_dir"]


def programs_cache_dir() -> Path:
    """``{data_dir}/jupyter_agent/programs``: where a server materialises the deployed
    versions it ran (the registry's ``cache_dir``)."""
    return agent_data_dir() / "programs"


class ReplayLoader:
    """``load(ref)`` for a replay from the command line (module docstring); a context
    manager that closes the database and removes the temporary cache."""

    def __init__(self, args: argparse.Namespace) -> None:
        self._args = args
        self._store: Any = None
        self._registry: Any = None
        self._temp: Path | None = None

    def __enter__(self) -> ReplayLoader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._store is not None:
            self._store.close()
        if self._temp is not None:
            shutil.rmtree(self._temp, ignore_errors=True)

    def load(self, ref: ProgramRef) -> Any:
        """The recorded version ``ref`` as a registry ``Resolved``."""
        if ref.key in BUILTIN:
            return self._local().load(ref)
        try:
            return self._local().load(ref)
        except ProgramMissing as missing:
            return self._from_server(ref, missing)

    def _local(self) -> Any:
        if self._registry is None:
            from jupyter_agent.programs.registry import ProgramRegistry

            url = getattr(self._args, "db_url", None) or default_db_url()
            explicit = getattr(self._args, "db_url", None) is not None
            if explicit or Path(url.removeprefix("sqlite:///")).is_file():
                from jupyter_agent.store.repo import Store

                self._store = Store(url)
            self._registry = ProgramRegistry(self._store, programs_cache_dir())
        return self._registry

    def _from_server(self, ref: ProgramRef, missing: ProgramMissing) -> Any:
        from jupyter_agent.cli.options import server_of
        from jupyter_agent.client import AgentClient, ClientError
        from jupyter_agent.programs.files import content_hash, materialise
        from jupyter_agent.programs.registry import ProgramRegistry

        if not hasattr(self._args, "addr"):
            raise missing
        addr, token = server_of(self._args)
        try:
            with AgentClient(addr, token) as client:
                body = client._json("GET", f"agent/programs/{ref.key}")
        except ClientError as exc:
            raise ProgramMissing(
                f"{missing} (the server at {exc.addr or addr}: {exc})", ref=ref.text
            ) from None
        files = body.get("files") if isinstance(body, dict) else None
        if not isinstance(files, dict) or not files:
            raise ProgramMissing(
                f"{missing} (the server at {addr} sent no files for it)", ref=ref.text
            )
        files = {str(k): str(v) for k, v in files.items()}
        full = content_hash(ref.name, files)
        self._temp = self._temp or Path(tempfile.mkdtemp(prefix="jupyter-agent-programs-"))
        meta = {
            "name": ref.name,
            "version": ref.version,
            "hash": full,
            "entry": _entry(files, body),
            "uses": list(body.get("uses") or ()),
            "description": str(body.get("description") or ""),
        }
        materialise(self._temp, full, files, meta)
        # The registry over the temporary cache checks the files' hash against the record.
        return ProgramRegistry(None, self._temp).load(ref)


def _entry(files: dict[str, str], body: dict[str, Any]) -> str:
    """The entry module: the answer's, else ``program.json``'s, else ``program``."""
    if isinstance(body.get("entry"), str) and body["entry"]:
        return str(body["entry"])
    try:
        entry = json.loads(files.get("program.json") or "{}").get("entry")
    except (ValueError, AttributeError):
        entry = None
    return entry if isinstance(entry, str) and entry else "program"
