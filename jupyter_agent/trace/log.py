"""The JSONL effect log of one run: a header line, then an intent and a result per effect.

Format (DESIGN section 3)::

    {"kind": "header", "version": 1, "run_id", "chat_id", "program", "programs"?, "profile",
     "tiers", "created"}
    {"seq": 1, "phase": "intent", "name": "config.get", "data": {...}, "t": "...Z"}
    {"seq": 1, "phase": "result", "name": "config.get", "data": ..., "t": "...Z"}
    {"seq": 7, "phase": "intent", "name": "app.call", "data": {...}, "t": "...Z", "parent": 6}
    {"seq": 7, "phase": "result", "name": "app.call", "data": null, "t": "...Z", "error": {...}}

``programs`` (``toolcaller@v4`` on) names the programs the run is made of: the loop and
its sub-programs, hashed (``["toolcaller@v4#ab12...", "llm@v1#...", ...]``,
the run program first) with ``agent``; older logs have none.

A run whose program failed (it raised, yielded what it may not, went past a
backstop, or was stuck) ends with one more line, written by :meth:`EffectLog.program_error`
and read as :attr:`TraceFile.program_error`::

    {"kind": "program_error", "program": "toolcaller@v5#...", "error": {"type", "message"},
     "after_seq": 12, "t": "...Z"}

``after_seq``: the last seq written before the failure (the program failed after it).

Contracts:

- ``seq`` counts effects from 1 in the order their intents are written; a result line
  repeats its intent's seq and name. A nested effect (an ``app.call`` the host performs while
  a cell runs) carries ``parent``: the seq of that ``cell.run``.
- Durability: every line is written with one ``write`` call (never a half line from this
  process) before the effect it precedes, so it is with the OS (and visible to readers) at
  once: a killed process (SIGKILL, a crash) loses no line. When lines reach the disk (power
  loss) follows the log's :data:`SyncPolicy`, fixed at :meth:`EffectLog.create`:

  - ``effect`` (no syncer given): the file is fdatasynced before :meth:`EffectLog.intent`
    returns for an effect in :data:`OUTSIDE_EFFECTS`, so everything before it and the intent
    itself is on disk before the effect reaches outside the process;
  - ``run`` (a :class:`~jupyter_agent.trace.syncer.GroupSyncer` given): no write waits for
    the disk, except the intent of a run's end (:data:`RUN_END_EFFECTS`: ``turn.append``,
    the turn being stored); the syncer's thread syncs the log's new lines at most every
    ``interval_ms``.

  In both, the header is fsynced at creation and the whole file at :meth:`EffectLog.close`.
- Data must be JSON-serialisable: :class:`TypeError` is raised before anything is written.
- No credential is ever written: an ``http.post`` intent whose ``headers`` hold a
  credential-like header (``authorization``, ``x-api-key``, ...) is refused with
  :class:`ValueError`. The transport adds the credential after the intent was recorded.
- Safe to call from concurrent asyncio tasks and from other threads (one lock).
- Reading is :mod:`jupyter_agent.trace.reader` (:func:`read_log`, :func:`pair_effects`),
  re-exported here.
- The file is created with mode 0600 (only its owner reads a run's record).
- Fault injection, for tests only (``docs/fault-injection.md``,
  :mod:`jupyter_agent.trace.fault_hook`): the environment variable
  :data:`FAULT_ENV` (read once, at import) set to ``kill:before:NAME[:N]`` or
  ``kill:after:NAME[:N]`` makes the process SIGKILL itself at the Nth (default 1st) effect
  called NAME of any log in this process, ``before`` right after its intent line is on
  disk, ``after`` right after its result line is. Unset, it costs one ``is None`` test.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal

from jupyter_agent.effects import (
    HTTP_POST,
    OUTSIDE_EFFECTS,
    TURN_APPEND,
    Effect,
    Result,
)
from jupyter_agent.trace.fault_hook import FAULT, FAULT_ENV, fault_point
from jupyter_agent.trace.reader import (
    LoggedEffect,
    LogLine,
    Phase,
    TraceFile,
    pair_effects,
    read_log,
)
from jupyter_agent.trace.syncer import GroupSyncer

__all__ = [
    "FAULT_ENV",
    "LOG_VERSION",
    "PROGRAM",
    "RUN_END_EFFECTS",
    "SYNC_POLICIES",
    "EffectLog",
    "GroupSyncer",
    "LogLine",
    "LoggedEffect",
    "Phase",
    "SyncPolicy",
    "TraceFile",
    "now_iso",
    "pair_effects",
    "read_log",
]

PROGRAM: Final = "toolcaller@v8"  # the same as core.loop.PROGRAM (trace has no core import)
LOG_VERSION: Final = 1

SyncPolicy = Literal["effect", "run"]
SYNC_POLICIES: Final[tuple[SyncPolicy, ...]] = ("effect", "run")
# The run's end: its intent is on disk before the turn is stored, under every policy.
RUN_END_EFFECTS: Final = frozenset({TURN_APPEND})

# Header names that carry a credential; matched case-insensitively, also as substrings.
_SECRET_HEADER_EXACT: Final = frozenset({"authorization", "proxy-authorization", "cookie"})
_SECRET_HEADER_PARTS: Final = ("api-key", "api_key", "apikey", "token", "secret")


def now_iso() -> str:
    """The current UTC time as ISO-8601 with millisecond precision and a ``Z``."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _dumps(obj: Any) -> bytes:
    """One log line as UTF-8 bytes ending in a newline; TypeError when not JSON-serialisable."""
    try:
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:  # ValueError: circular reference
        raise TypeError(f"effect log data is not JSON-serialisable: {exc}") from None
    try:
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates (e.g. from surrogateescape-decoded output) cannot be UTF-8:
        # escaping everything keeps them readable by json.loads.
        return (json.dumps(obj, ensure_ascii=True, separators=(",", ":")) + "\n").encode()


def _is_secret_header(name: str) -> bool:
    low = name.lower()
    return low in _SECRET_HEADER_EXACT or any(part in low for part in _SECRET_HEADER_PARTS)


def _check_no_credential(effect: Effect) -> None:
    if effect.name != HTTP_POST:
        return
    headers = effect.data.get("headers")
    if isinstance(headers, Mapping):
        bad = sorted(str(k) for k in headers if _is_secret_header(str(k)))
        if bad:
            # Name the header only, never its value.
            raise ValueError(
                f"refusing to log an http.post intent with credential header(s) {bad}: "
                "the transport adds credentials after the intent is recorded"
            )


class EffectLog:
    """An append-only JSONL effect log, open for writing. Make one with :meth:`create`."""

    def __init__(self, path: Path, fd: int | None, syncer: GroupSyncer | None = None) -> None:
        """Internal: use :meth:`create` (or :meth:`later`)."""
        self._path = path
        self._fd: int | None = fd
        self._header: bytes | None = None  # a log made by later(): its header line
        self._syncer = syncer
        self._lock = threading.Lock()  # writes; never held by a background sync
        self._sync_lock = threading.Lock()  # syncs and close; taken before _lock, never after
        self._dirty = False  # lines written since the last sync
        self._dir_pending = False  # under run: the folder entry is not synced yet
        self._sync_error: OSError | None = None  # a failed background sync, not yet raised
        self._seq = 0
        self._pending: dict[int, str] = {}  # seq -> name of intents without a result yet

    @classmethod
    def create(
        cls, path: Path | str, header: Mapping[str, Any], *, syncer: GroupSyncer | None = None
    ) -> EffectLog:
        """Create a new log at ``path`` (parent folders too) and write its header line.

        The header line is ``{"kind": "header", "version": 1, **header}``; ``header`` holds
        run_id, chat_id, program, programs (v4), profile, tiers, created. Refuses to
        overwrite an existing file (FileExistsError): a run's log is written once. The
        file's mode is 0600 whatever the umask. Under ``effect`` the file and its folder
        entry are fsynced so the log exists on disk before the run does anything; under
        ``run`` the header is written to the OS (a killed server keeps it) and the syncer's
        next round, or the close, makes the file and its folder entry durable (a power loss
        may lose a log created in the last interval, as any line of it: recovery takes a
        missing log).
        ``syncer``: the ``run`` sync policy, synced by that syncer's thread; None: the
        ``effect`` policy (module docstring).
        """
        log = cls.later(path, header, syncer=syncer)
        log.open()
        return log

    @classmethod
    def later(
        cls, path: Path | str, header: Mapping[str, Any], *, syncer: GroupSyncer | None = None
    ) -> EffectLog:
        """A log :meth:`open` creates later (its run acknowledged first); closed until then."""
        log = cls(Path(path), None, syncer)
        line = {"kind": "header", "version": LOG_VERSION}
        line.update({k: v for k, v in header.items() if k not in ("kind", "version")})
        log._header = _dumps(line)
        return log

    def open(self) -> None:
        """Create the file of a :meth:`later` log, as :meth:`create` does (ValueError: twice)."""
        data, self._header = self._header, None
        if data is None:
            raise ValueError(f"effect log {self._path.name} was opened before")
        self._path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        self._fd = fd  # nothing else writes it before this returns: no lock (as in create)
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(fd, 0o600)  # exactly: the umask may only have narrowed it
            if self._syncer is None:
                self._write(data)
                os.fsync(fd)
                _fsync_dir(self._path.parent)
            else:
                self._dir_pending = True
                self._append(data)  # synced off the run's path, with its folder entry
        except BaseException:
            self.close()
            raise

    @property
    def path(self) -> Path:
        """Where the log is written."""
        return self._path

    @property
    def policy(self) -> SyncPolicy:
        """When lines reach the disk: ``effect`` or ``run`` (module docstring)."""
        return "effect" if self._syncer is None else "run"

    @property
    def last_seq(self) -> int:
        """The seq of the newest intent (0 before the first)."""
        return self._seq

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran."""
        return self._fd is None

    def sync_before(self, name: str) -> bool:
        """Whether the intent of an effect called ``name`` must be on disk before it runs:
        an outside effect under ``effect``, the run's end (:data:`RUN_END_EFFECTS`) under
        both policies."""
        if name in RUN_END_EFFECTS:
            return True
        return self._syncer is None and name in OUTSIDE_EFFECTS

    def intent(self, effect: Effect, *, t: str | None = None, durable: bool = True) -> int:
        """Append the intent line of ``effect`` and return its new seq (1, 2, 3, ...).

        When :meth:`sync_before` says so, the file is fdatasynced before this returns, so
        the intent is on disk before the effect happens. With ``durable=False`` the caller
        takes that duty: it must call :meth:`sync` before performing such an effect (an
        async driver does so in a worker thread, so a slow disk never blocks its event
        loop). Other lines are left to the policy (the group syncer, or the next sync).
        """
        _check_no_credential(effect)
        inline = durable and self.sync_before(effect.name)
        with self._lock:
            fd = self._require_open()
            seq = self._seq + 1
            line: dict[str, Any] = {
                "seq": seq,
                "phase": "intent",
                "name": effect.name,
                "data": effect.data,
                "t": t or now_iso(),
            }
            if effect.parent is not None:
                line["parent"] = effect.parent
            self._append(_dumps(line))
            self._seq = seq
            self._pending[seq] = effect.name
            if inline:
                self._dirty = False
                new_entry, self._dir_pending = self._dir_pending, False
                failed, self._sync_error = self._sync_error, None
                if failed is not None:
                    raise failed  # see sync()
                _datasync(fd)
                if new_entry:
                    _fsync_dir(self._path.parent)
            if FAULT is not None:
                fault_point("before", effect.name, fd)
        return seq

    def result(
        self,
        seq: int,
        name: str,
        data: Any,
        *,
        error: Mapping[str, Any] | None = None,
        t: str | None = None,
    ) -> Result:
        """Append the result line of effect ``seq`` and return it as a :class:`Result`.

        ``seq`` must be an intent of this log without a result yet, and ``name`` its name
        (ValueError otherwise). Never synced here: it becomes durable at the next sync.
        """
        err = dict(error) if error is not None else None
        with self._lock:
            fd = self._require_open()
            expected = self._pending.get(seq)
            if expected is None:
                raise ValueError(f"seq {seq} has no open intent in this log")
            if expected != name:
                raise ValueError(f"seq {seq} is a {expected!r} intent, not {name!r}")
            line: dict[str, Any] = {
                "seq": seq,
                "phase": "result",
                "name": name,
                "data": data,
                "t": t or now_iso(),
            }
            if err is not None:
                line["error"] = err
            self._append(_dumps(line))
            del self._pending[seq]
            if FAULT is not None:
                fault_point("after", name, fd)
        return Result(seq=seq, name=name, data=data, error=err)

    def program_error(self, program: str, error: Mapping[str, Any], *, t: str | None = None) -> int:
        """Append the run's ``program_error`` line (module docstring) after the last effect
        written; returns its ``after_seq``. Not synced here (the close syncs)."""
        with self._lock:
            self._require_open()
            after = self._seq
            err = {"type": str(error.get("type", "")), "message": str(error.get("message", ""))}
            line = {"kind": "program_error", "program": program, "error": err, "after_seq": after}
            self._append(_dumps({**line, "t": t or now_iso()}))
        return after

    def sync(self) -> None:
        """Make every line written so far durable (fdatasync); ValueError once closed."""
        with self._sync_lock:
            with self._lock:
                fd = self._require_open()
                self._dirty = False
                new_entry, self._dir_pending = self._dir_pending, False
                failed, self._sync_error = self._sync_error, None
            if failed is not None:
                # A background sync of these lines failed: Linux reports a writeback error
                # once per file, so this fdatasync could succeed on lost data. Say so.
                raise failed
            _datasync(fd)
            if new_entry:
                _fsync_dir(self._path.parent)

    def sync_if_dirty(self) -> bool:
        """For the group syncer: :meth:`sync` when lines were written since the last sync
        and the log is open; True if it synced. Writers never wait for this fdatasync."""
        with self._sync_lock:
            with self._lock:
                fd = self._fd
                if fd is None or not self._dirty:
                    return False
                self._dirty = False  # lines written during the sync mark the log again
                new_entry, self._dir_pending = self._dir_pending, False
            try:
                _datasync(fd)  # the fd stays open: close() takes _sync_lock first
                if new_entry:
                    _fsync_dir(self._path.parent)
            except OSError as exc:
                with self._lock:
                    self._sync_error = exc  # raised by the run's own next sync or close
                raise
            return True

    def close(self) -> None:
        """Fsync and close the file; closing twice is harmless."""
        with self._sync_lock, self._lock:
            fd, self._fd = self._fd, None
            if fd is None:
                return
            self._dirty = False
            new_entry, self._dir_pending = self._dir_pending, False
            failed, self._sync_error = self._sync_error, None
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            if new_entry:
                _fsync_dir(self._path.parent)
            if failed is not None:
                raise failed

    def __enter__(self) -> EffectLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _require_open(self) -> int:
        if self._fd is None:
            raise ValueError(f"effect log {self._path.name} is closed")
        return self._fd

    def _write(self, data: bytes) -> None:
        """Write ``data`` whole (the caller holds the lock)."""
        fd = self._require_open()
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]

    def _append(self, data: bytes) -> None:
        """Write a line; under ``run``, tell the syncer the first time the log holds
        unsynced lines (the caller holds the lock)."""
        self._write(data)
        if not self._dirty:
            self._dirty = True
            if self._syncer is not None and not self._syncer.mark(self):
                _datasync(self._require_open())  # the syncer has stopped: sync here
                self._dirty = False


def _datasync(fd: int) -> None:
    """Flush the file's data (and its size) to disk: fdatasync where there is one."""
    getattr(os, "fdatasync", os.fsync)(fd)


def _fsync_dir(folder: Path) -> None:
    """Make a new file's folder entry durable (a no-op where folders can't be opened)."""
    try:
        dfd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
