"""The JSONL effect log of one run: a header line, then an intent and a result per effect.

Format (DESIGN section 3)::

    {"kind": "header", "version": 1, "run_id", "chat_id", "program", "profile", "tiers", "created"}
    {"seq": 1, "phase": "intent", "name": "config.get", "data": {...}, "t": "...Z"}
    {"seq": 1, "phase": "result", "name": "config.get", "data": ..., "t": "...Z"}
    {"seq": 7, "phase": "intent", "name": "app.call", "data": {...}, "t": "...Z", "parent": 6}
    {"seq": 7, "phase": "result", "name": "app.call", "data": null, "t": "...Z", "error": {...}}

Contracts:

- ``seq`` counts effects from 1 in the order their intents are written; a result line
  repeats its intent's seq and name. A nested effect (an ``app.call`` the host performs while
  a cell runs) carries ``parent``: the seq of that ``cell.run``.
- Durability (group commit): every line is written with one ``write`` call (never a half
  line from this process) and is visible to readers at once; the file is fsynced before
  :meth:`EffectLog.intent` returns for an effect in :data:`OUTSIDE_EFFECTS` (so everything
  before it, and the intent itself, is on disk before the effect reaches outside the
  process), and on close. Results and in-process intents become durable at the next fsync.
- Data must be JSON-serialisable: :class:`TypeError` is raised before anything is written.
- No credential is ever written: an ``http.post`` intent whose ``headers`` hold a
  credential-like header (``authorization``, ``x-api-key``, ...) is refused with
  :class:`ValueError`. The transport adds the credential after the intent was recorded.
- Safe to call from concurrent asyncio tasks and from other threads (one lock).
- :func:`read_log` tolerates a truncated last line (a crash mid-write) and reports it; any
  other damage is a :class:`TraceError` naming the line number.
- The file is created with mode 0600 (only its owner reads a run's record).
- Fault injection, for tests only (``docs/fault-injection.md``): the environment variable
  :data:`FAULT_ENV` (read once, at import) set to ``kill:before:NAME[:N]`` or
  ``kill:after:NAME[:N]`` makes the process SIGKILL itself at the Nth (default 1st) effect
  called NAME of any log in this process, ``before`` right after its intent line is on
  disk, ``after`` right after its result line is. Unset, it costs one ``is None`` test.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal

from jupyter_agent.effects import EFFECT_NAMES, HTTP_POST, OUTSIDE_EFFECTS, Effect, Result
from jupyter_agent.exceptions import TraceError

__all__ = [
    "FAULT_ENV",
    "LOG_VERSION",
    "PROGRAM",
    "EffectLog",
    "LogLine",
    "LoggedEffect",
    "TraceFile",
    "now_iso",
    "pair_effects",
    "read_log",
]

PROGRAM: Final = "toolcaller@v3"  # the same as core.loop.PROGRAM (trace has no core import)
LOG_VERSION: Final = 1

Phase = Literal["intent", "result"]

# Header names that carry a credential; matched case-insensitively, also as substrings.
_SECRET_HEADER_EXACT: Final = frozenset({"authorization", "proxy-authorization", "cookie"})
_SECRET_HEADER_PARTS: Final = ("api-key", "api_key", "apikey", "token", "secret")


FAULT_ENV: Final = "JUPYTER_AGENT_FAULT"


@dataclass(frozen=True)
class _Fault:
    """Where the fault hook kills the process: the ``nth`` ``name`` effect's ``when`` line."""

    when: Literal["before", "after"]
    name: str
    nth: int = 1


def _parse_fault(spec: str | None) -> _Fault | None:
    """The fault :data:`FAULT_ENV` asks for (None when unset or empty); ValueError if bad."""
    if not spec:
        return None
    parts = spec.strip().split(":")
    nth = 1
    if len(parts) == 4:
        try:
            nth = int(parts[3])
        except ValueError:
            nth = 0
        parts = parts[:3]
    if len(parts) != 3 or parts[0] != "kill" or parts[1] not in ("before", "after") or nth < 1:
        raise ValueError(
            f"{FAULT_ENV}={spec!r}: expected kill:before:NAME[:N] or kill:after:NAME[:N]"
        )
    if parts[2] not in EFFECT_NAMES:
        raise ValueError(
            f"{FAULT_ENV}={spec!r}: unknown effect {parts[2]!r} (one of {sorted(EFFECT_NAMES)})"
        )
    when: Literal["before", "after"] = "before" if parts[1] == "before" else "after"
    return _Fault(when=when, name=parts[2], nth=nth)


_FAULT: Final = _parse_fault(os.environ.get(FAULT_ENV))
_fault_seen = 0  # effects matching _FAULT so far, in this process


def _fault_point(when: str, name: str, fd: int) -> None:
    """Kill the process here if the fault hook names this line (see the module docstring).

    Called with the log's lock held, right after the line was written: the line is made
    durable first, so what a test finds on disk is exactly what a real crash leaves.
    """
    global _fault_seen
    fault = _FAULT
    if fault is None or fault.when != when or fault.name != name:
        return
    _fault_seen += 1
    if _fault_seen == fault.nth:
        _datasync(fd)
        os.kill(os.getpid(), signal.SIGKILL)


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

    def __init__(self, path: Path, fd: int) -> None:
        """Internal: use :meth:`create`."""
        self._path = path
        self._fd: int | None = fd
        self._lock = threading.Lock()
        self._seq = 0
        self._pending: dict[int, str] = {}  # seq -> name of intents without a result yet

    @classmethod
    def create(cls, path: Path | str, header: Mapping[str, Any]) -> EffectLog:
        """Create a new log at ``path`` (parent folders too) and write its header line.

        The header line is ``{"kind": "header", "version": 1, **header}``; ``header`` holds
        run_id, chat_id, program, profile, tiers, created. Refuses to overwrite an existing
        file (FileExistsError): a run's log is written once. The file's mode is 0600
        whatever the umask. The file and its folder entry
        are fsynced so the log exists on disk before the run does anything.
        """
        target = Path(path)
        line = {"kind": "header", "version": LOG_VERSION}
        line.update({k: v for k, v in header.items() if k not in ("kind", "version")})
        data = _dumps(line)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        log = cls(target, fd)
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(fd, 0o600)  # exactly: the umask may only have narrowed it
            log._write(data)
            os.fsync(fd)
            _fsync_dir(target.parent)
        except BaseException:
            log.close()
            raise
        return log

    @property
    def path(self) -> Path:
        """Where the log is written."""
        return self._path

    @property
    def last_seq(self) -> int:
        """The seq of the newest intent (0 before the first)."""
        return self._seq

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran."""
        return self._fd is None

    def intent(self, effect: Effect, *, t: str | None = None, durable: bool = True) -> int:
        """Append the intent line of ``effect`` and return its new seq (1, 2, 3, ...).

        For an effect in OUTSIDE_EFFECTS the file is fsynced before this returns, so the
        intent is on disk before the effect happens. With ``durable=False`` the caller
        takes that duty: it must call :meth:`sync` before performing the effect (an async
        driver does so in a worker thread, so a slow disk never blocks its event loop).
        """
        _check_no_credential(effect)
        outside = effect.name in OUTSIDE_EFFECTS
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
            data = _dumps(line)
            self._write(data)
            self._seq = seq
            self._pending[seq] = effect.name
            if outside and durable:
                _datasync(fd)
            if _FAULT is not None:
                _fault_point("before", effect.name, fd)
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
        (ValueError otherwise). Only flushed: it becomes durable at the next fsync.
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
            self._write(_dumps(line))
            del self._pending[seq]
            if _FAULT is not None:
                _fault_point("after", name, fd)
        return Result(seq=seq, name=name, data=data, error=err)

    def sync(self) -> None:
        """Make every line written so far durable (fsync)."""
        with self._lock:
            _datasync(self._require_open())

    def close(self) -> None:
        """Fsync and close the file; closing twice is harmless."""
        with self._lock:
            fd, self._fd = self._fd, None
            if fd is None:
                return
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

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
        fd = self._require_open()
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]


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


# --- reading --------------------------------------------------------------------------


@dataclass(frozen=True)
class LogLine:
    """One intent or result line of an effect log."""

    seq: int
    phase: Phase
    name: str
    data: Any
    t: str
    parent: int | None = None
    error: dict[str, Any] | None = None

    def to_result(self) -> Result:
        """A result line as the :class:`Result` the loop received."""
        return Result(seq=self.seq, name=self.name, data=self.data, error=self.error)


@dataclass(frozen=True)
class TraceFile:
    """A parsed effect log: its header, its lines in file order, and whether the last
    line was cut short (a crash mid-write; that line is dropped)."""

    header: dict[str, Any]
    lines: list[LogLine] = field(default_factory=list)
    truncated: bool = False

    @property
    def run_id(self) -> str | None:
        """The run id named by the header, when any."""
        value = self.header.get("run_id")
        return value if isinstance(value, str) else None


@dataclass(frozen=True)
class LoggedEffect:
    """One effect: its intent line and its result line (None when the run stopped first)."""

    intent: LogLine
    result: LogLine | None

    @property
    def seq(self) -> int:
        return self.intent.seq

    @property
    def name(self) -> str:
        return self.intent.name

    @property
    def data(self) -> Any:
        """The intent's data (what was asked)."""
        return self.intent.data

    @property
    def parent(self) -> int | None:
        return self.intent.parent


def _parse_line(obj: Any, lineno: int) -> LogLine:
    if not isinstance(obj, dict):
        raise TraceError(f"line {lineno}: not a JSON object")
    seq, phase, name, t = obj.get("seq"), obj.get("phase"), obj.get("name"), obj.get("t")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        raise TraceError(f"line {lineno}: bad seq {seq!r}")
    if phase not in ("intent", "result"):
        raise TraceError(f"line {lineno}: bad phase {phase!r}")
    if not isinstance(name, str) or name not in EFFECT_NAMES:
        raise TraceError(f"line {lineno}: unknown effect name {name!r}")
    if not isinstance(t, str):
        raise TraceError(f"line {lineno}: bad time {t!r}")
    if "data" not in obj:
        raise TraceError(f"line {lineno}: no data")
    parent = obj.get("parent")
    if parent is not None and (not isinstance(parent, int) or isinstance(parent, bool)):
        raise TraceError(f"line {lineno}: bad parent {parent!r}")
    error = obj.get("error")
    if error is not None and not isinstance(error, dict):
        raise TraceError(f"line {lineno}: bad error {error!r}")
    return LogLine(seq, phase, name, obj["data"], t, parent, error)


def read_log(path: Path | str) -> TraceFile:
    """Read an effect log written by :class:`EffectLog`.

    A last line without its newline that does not parse is dropped and reported as
    ``truncated``. Anything else that is wrong (an unparsable or malformed line, seqs out
    of order, a result without its intent or with another name, a missing header) raises
    :class:`TraceError` naming the 1-based line number.
    """
    raw = Path(path).read_bytes()
    chunks = raw.split(b"\n")
    ends_clean = chunks[-1] == b""
    if ends_clean:
        chunks.pop()
    truncated = False
    header: dict[str, Any] | None = None
    lines: list[LogLine] = []
    last_seq = 0
    pending: dict[int, str] = {}
    for index, chunk in enumerate(chunks):
        lineno = index + 1
        is_last = index == len(chunks) - 1
        try:
            obj = json.loads(chunk)
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
            if is_last and not ends_clean and header is not None:
                truncated = True
                break
            raise TraceError(f"line {lineno}: not valid JSON ({exc})") from None
        if header is None:
            if not isinstance(obj, dict) or obj.get("kind") != "header":
                raise TraceError(f"line {lineno}: expected the header line")
            header = obj
            continue
        line = _parse_line(obj, lineno)
        if line.phase == "intent":
            if line.seq != last_seq + 1:
                raise TraceError(f"line {lineno}: intent seq {line.seq} after {last_seq}")
            last_seq = line.seq
            pending[line.seq] = line.name
        else:
            expected = pending.pop(line.seq, None)
            if expected is None:
                raise TraceError(f"line {lineno}: result for seq {line.seq} without an intent")
            if expected != line.name:
                raise TraceError(
                    f"line {lineno}: result {line.name!r} for a {expected!r} intent"
                    f" (seq {line.seq})"
                )
        lines.append(line)
    if header is None:
        raise TraceError("line 1: the log has no header")
    return TraceFile(header=header, lines=lines, truncated=truncated)


def pair_effects(trace: TraceFile) -> list[LoggedEffect]:
    """Every effect of the log, intent joined to its result, in seq order."""
    intents: dict[int, LogLine] = {}
    results: dict[int, LogLine] = {}
    for line in trace.lines:
        (intents if line.phase == "intent" else results)[line.seq] = line
    return [LoggedEffect(intents[seq], results.get(seq)) for seq in sorted(intents)]
