"""Replay a recorded run of a program and check it is identical.

:func:`replay_run` feeds the program the log's header names from the run's log (no
model, no kernel): every effect the program asks for must match the log one by one, and
for the loop the turn record it produces must equal the recorded one (the ``turn.append``
intent; a history run's summary is its ``chunk.store`` intent, compared like every
effect). Any difference raises :class:`~jupyter_agent.exceptions.NondeterminismError`
naming the seq.

Which program: the header's ``programs[0]`` when it is a hashed ref of the
header's ``program`` (``toolcaller@v5#ab12...``), else ``program`` itself (older logs).
``load(ref)`` gives it: a factory ``(run_id, chat_id) -> generator``, or a registry
``Resolved`` (its ``factory``, ``builtin`` and ``note``). Without ``load``, built-ins only
(:func:`builtin_loader`): a built-in recorded with another build's hash is a note, not a
failure; a deployed version is :class:`~jupyter_agent.exceptions.ProgramMissing`. A
loader raises ProgramMissing / ProgramMismatch for a version it cannot find or whose files
differ; they propagate (the CLI's one line, exit 2).

The program runs under the host's :class:`~jupyter_agent.runtime.programs.guard.
ProgramGuard` as it did (a deployed one steps in threads under the recorded step
deadline). A log ending with a ``program_error`` line (the program failed) replays
identically when the program fails again the same way (error type and message) after the
same effects: :func:`replay_run` then returns a :class:`ReplayedFailure`. A failure the
log does not hold, a different one, or none where it holds one is a divergence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_agent.codec import dump_dict
from jupyter_agent.core.history.program import HistoryOutcome
from jupyter_agent.core.loop.runstate import seconds_between
from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.exceptions import NondeterminismError, ProgramFault, ProgramMissing, TraceError
from jupyter_agent.programs.builtin import BUILTIN, builtin_hash
from jupyter_agent.programs.refs import HASH_CHARS, ProgramRef, parse_ref
from jupyter_agent.runtime.programs.guard import (
    DEFAULT_STEP_TIMEOUT_S,
    ProgramFailed,
    ProgramGuard,
    drive_program_sync,
    unloadable,
)
from jupyter_agent.trace.log import TraceFile, read_log
from jupyter_agent.trace.replay import Replayer

__all__ = [
    "Loader",
    "ReplayOutcome",
    "ReplayedFailure",
    "builtin_loader",
    "recorded_ref",
    "replay_run",
    "verify_run",
]

Loader = Callable[[ProgramRef], Any]
"""``ref -> factory`` or a registry ``Resolved`` (see the module docstring)."""


@dataclass(frozen=True, kw_only=True)
class ReplayedFailure:
    """A recorded program failure the replay reproduced (same error, same point)."""

    program: str
    error: dict[str, str]
    after_seq: int


@dataclass(frozen=True, kw_only=True)
class ReplayOutcome:
    """What a replay found: identical, or the diverging seq with both sides. ``notes``:
    what the replay noticed without failing (another build of a built-in); ``failure``:
    the recorded program failure it reproduced."""

    identical: bool
    run_id: str
    seq: int | None = None
    recorded: Any = None
    asked: Any = None
    message: str = ""
    program: str | None = None
    notes: tuple[str, ...] = ()
    failure: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return dump_dict(self)


def _recorded_turn(trace: TraceFile) -> tuple[int, dict[str, Any]] | None:
    for line in trace.lines:
        if line.phase == "intent" and line.name == "turn.append" and line.parent is None:
            return line.seq, line.data
    return None


def recorded_ref(trace: TraceFile) -> ProgramRef:
    """The run program's ref as recorded (module docstring); TraceError when unreadable."""
    name = trace.header.get("program")
    programs = trace.header.get("programs")
    first = programs[0] if isinstance(programs, list) and programs else None
    try:
        if isinstance(first, str):
            ref = parse_ref(first)
            if ref.hash and ref.key == name:
                return ref
        return parse_ref(str(name))
    except ValueError:
        raise TraceError(f"the log header names no program to replay ({name!r:.80})") from None


def builtin_loader(ref: ProgramRef, notes: list[str] | None = None) -> Any:
    """The built-in run program ``ref`` (a note in ``notes`` when it was recorded with
    another build); ProgramMissing for a version that is not built in."""
    program = BUILTIN.get(ref.key)
    if program is None:
        raise ProgramMissing(
            f"{ref.text} is not built in, and this replay has no store to find it in "
            "(replay with --db-url or --addr)",
            ref=ref.text,
        )
    if program.factory is None:
        raise TraceError(f"cannot replay {ref.key}: it runs inside another program")
    full = builtin_hash(ref.key)
    if notes is not None and not ref.same_content(full):
        notes.append(
            f"recorded with another build of {ref.key} (#{ref.hash} vs #{full[:HASH_CHARS]})"
        )
    return program.factory


def _ceilings(trace: TraceFile) -> Any:
    """The ceilings the run's guard counted with: the header's (deployed runs), else what
    the run read (``config.get ceilings``, or v7's ``config.get start``), else the
    defaults (None)."""
    if isinstance(trace.header.get("ceilings"), dict):
        return trace.header["ceilings"]
    asked, start = None, False
    for line in trace.lines:
        if line.phase == "intent" and line.name == "config.get" and isinstance(line.data, dict):
            key = line.data.get("key")
            if key in ("ceilings", "start"):
                asked, start = line.seq, key == "start"
        elif line.phase == "result" and line.seq == asked:
            if start:  # toolcaller@v7's one read: its ceilings
                return line.data.get("ceilings") if isinstance(line.data, dict) else None
            return line.data
    return None


def _elapsed(trace: TraceFile, replayer: Replayer) -> Callable[[], float]:
    """The guard's clock in a replay: the recorded time of the effect being asked, from
    the first effect's (the run's start to within milliseconds; a header's ``created``
    may be written by hand)."""
    start = trace.lines[0].t if trace.lines else str(trace.header.get("created") or "")
    last = trace.lines[-1].t if trace.lines else start
    end = str((trace.program_error or {}).get("t") or last)

    def elapsed() -> float:
        try:
            return seconds_between(start, replayer.next_t or end)
        except ValueError:
            return 0.0

    return elapsed


def replay_run(
    trace: TraceFile, load: Loader | None = None, *, notes: list[str] | None = None
) -> TurnRecord | HistoryOutcome | ReplayedFailure:
    """Replay the program of a recorded run; returns what it produced: the loop's turn, the
    history program's outcome, or the recorded failure reproduced (module docstring).
    ``notes`` collects what the replay noticed without failing."""
    run_id, chat_id = trace.header.get("run_id"), trace.header.get("chat_id")
    if not isinstance(run_id, str) or not isinstance(chat_id, str):
        raise TraceError("the log header names no run_id / chat_id")
    ref = recorded_ref(trace)
    replayer = Replayer(trace)
    guard = ProgramGuard(ref.text, _ceilings(trace), elapsed=_elapsed(trace, replayer))
    try:
        loaded = builtin_loader(ref, notes) if load is None else load(ref)
    except ProgramFault as fault:  # it did not load: as at the run's start
        return _failed(trace, replayer, unloadable(ref.text, fault))
    factory = getattr(loaded, "factory", loaded)
    builtin = bool(getattr(loaded, "builtin", ref.key in BUILTIN))
    note = getattr(loaded, "note", None)
    if note and notes is not None:
        notes.append(str(note))
    timeout = trace.header.get("step_timeout_s")
    try:
        produced: TurnRecord | HistoryOutcome = drive_program_sync(
            factory(run_id, chat_id),
            replayer.answer,
            guard,
            threaded=not builtin,
            step_timeout_s=float(timeout) if timeout else DEFAULT_STEP_TIMEOUT_S,
        )
    except ProgramFailed as failed:
        return _failed(trace, replayer, failed)
    replayer.finish()
    if trace.program_error is not None:
        recorded_error = trace.program_error
        raise NondeterminismError(
            int(recorded_error["after_seq"]) + 1, {"program_error": recorded_error["error"]}, None
        )
    if not isinstance(produced, TurnRecord):
        return produced
    recorded = _recorded_turn(trace)
    if recorded is not None and produced.to_json() != recorded[1]:
        raise NondeterminismError(recorded[0], recorded[1], produced.to_json())
    return produced


def _failed(trace: TraceFile, replayer: Replayer, failed: ProgramFailed) -> ReplayedFailure:
    """The program failed in the replay: identical only where and as the run recorded."""
    asked = {"program_error": failed.error}
    recorded = trace.program_error
    if recorded is None or replayer.remaining:
        shown = {"program_error": None} if recorded is None else None
        raise NondeterminismError(replayer.next_seq, _next_recorded(replayer) or shown, asked)
    if recorded.get("error") != failed.error:
        raise NondeterminismError(
            int(recorded["after_seq"]) + 1, {"program_error": recorded.get("error")}, asked
        )
    return ReplayedFailure(
        program=str(recorded.get("program")),
        error=failed.error,
        after_seq=int(recorded["after_seq"]),
    )


def _next_recorded(replayer: Replayer) -> dict[str, Any] | None:
    """The recorded effect the replay did not reach (None when all were asked)."""
    if not replayer.remaining:
        return None
    seq = replayer.next_seq
    for line in replayer.trace.lines:
        if line.seq == seq and line.phase == "intent":
            return {"name": line.name, "data": line.data}
    return None


def verify_run(source: TraceFile | Path | str, load: Loader | None = None) -> ReplayOutcome:
    """Replay a run and report instead of raising on a divergence (ProgramMissing,
    ProgramMismatch and other TraceErrors still raise)."""
    trace = source if isinstance(source, TraceFile) else read_log(source)
    run_id = str(trace.header.get("run_id", ""))
    notes: list[str] = []
    program = recorded_ref(trace).text
    try:
        produced = replay_run(trace, load, notes=notes)
    except NondeterminismError as err:
        return ReplayOutcome(
            identical=False,
            run_id=run_id,
            seq=err.seq,
            recorded=err.recorded,
            asked=err.asked,
            message=str(err),
            program=program,
            notes=tuple(notes),
        )
    failure = dump_dict(produced) if isinstance(produced, ReplayedFailure) else None
    return ReplayOutcome(
        identical=True, run_id=run_id, program=program, notes=tuple(notes), failure=failure
    )
