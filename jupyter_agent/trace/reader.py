"""Reading an effect log: :func:`read_log` parses the JSONL file :class:`EffectLog` writes.

The format is :mod:`jupyter_agent.trace.log`'s. Contracts:

- :func:`read_log` tolerates a truncated last line (a crash mid-write) and reports it
  (:attr:`TraceFile.truncated`); any other damage is a :class:`TraceError` naming the
  1-based line number.
- a ``program_error`` line ends a run whose program failed: it is
  :attr:`TraceFile.program_error`, and no effect line may follow it;
- :func:`pair_effects` joins each intent to its result (None for an effect the run never
  finished), in seq order.

:mod:`jupyter_agent.trace.log` re-exports every public name here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from jupyter_agent.effects import EFFECT_NAMES, Result
from jupyter_agent.exceptions import TraceError

__all__ = [
    "LogLine",
    "LoggedEffect",
    "Phase",
    "TraceFile",
    "pair_effects",
    "parse_log",
    "read_log",
]

Phase = Literal["intent", "result"]


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
    #: The run's ``program_error`` line (``{program, error: {type, message}, after_seq,
    #: t}``) when its program failed; None for every other log.
    program_error: dict[str, Any] | None = None

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
    return parse_log(Path(path).read_bytes())


def parse_log(raw: bytes) -> TraceFile:
    """:func:`read_log` of a log's bytes (fetched from a server, say)."""
    chunks = raw.split(b"\n")
    ends_clean = chunks[-1] == b""
    if ends_clean:
        chunks.pop()
    truncated = False
    header: dict[str, Any] | None = None
    lines: list[LogLine] = []
    last_seq = 0
    pending: dict[int, str] = {}
    program_error: dict[str, Any] | None = None
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
        if isinstance(obj, dict) and obj.get("kind") == "program_error":
            program_error = _program_error(obj, lineno)
            continue
        if program_error is not None:
            raise TraceError(f"line {lineno}: an effect after the program_error line")
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
    return TraceFile(header=header, lines=lines, truncated=truncated, program_error=program_error)


def _program_error(obj: dict[str, Any], lineno: int) -> dict[str, Any]:
    error, after = obj.get("error"), obj.get("after_seq")
    if not isinstance(error, dict) or not isinstance(obj.get("program"), str):
        raise TraceError(f"line {lineno}: a program_error line without program and error")
    if not isinstance(after, int) or isinstance(after, bool) or after < 0:
        raise TraceError(f"line {lineno}: bad after_seq {after!r}")
    return obj


def pair_effects(trace: TraceFile) -> list[LoggedEffect]:
    """Every effect of the log, intent joined to its result, in seq order."""
    intents: dict[int, LogLine] = {}
    results: dict[int, LogLine] = {}
    for line in trace.lines:
        (intents if line.phase == "intent" else results)[line.seq] = line
    return [LoggedEffect(intents[seq], results.get(seq)) for seq in sorted(intents)]
