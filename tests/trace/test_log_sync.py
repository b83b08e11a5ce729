"""The effect log's sync policies: ``effect`` syncs before outside effects, ``group`` in the
background (at most every interval, only when there are new lines) and at the run's end."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from jupyter_agent.effects import OUTSIDE_EFFECTS, Effect
from jupyter_agent.trace.log import PROGRAM, EffectLog, GroupSyncer, read_log

HEADER = {"run_id": "run_01SYNC", "chat_id": "chat_01SYNC", "program": PROGRAM, "created": "x"}
CELL = Effect(name="cell.run", data={"cell_id": "c1", "code": "x", "timeout_s": 1})
CLOCK = Effect(name="clock.now", data={})
TURN = Effect(name="turn.append", data={"id": "t"})


@dataclass
class Syncs:
    """Every fdatasync of the test: who called it, and how many lines the file had."""

    path: Path | None = None
    calls: list[tuple[str, int]] = field(default_factory=list)
    fsyncs: int = 0

    def lines(self) -> int:
        assert self.path is not None
        return len(self.path.read_bytes().splitlines())

    def by(self, thread: str) -> list[int]:
        return [n for name, n in self.calls if name == thread]


@pytest.fixture
def syncs(monkeypatch: pytest.MonkeyPatch) -> Syncs:
    record = Syncs()
    real_datasync = getattr(os, "fdatasync", os.fsync)
    real_fsync = os.fsync

    def datasync(fd: int) -> None:
        record.calls.append((threading.current_thread().name, record.lines()))
        real_datasync(fd)

    def fsync(fd: int) -> None:
        record.fsyncs += 1
        real_fsync(fd)

    monkeypatch.setattr(os, "fdatasync", datasync, raising=False)
    monkeypatch.setattr(os, "fsync", fsync)
    return record


def _open(tmp_path: Path, syncs: Syncs, syncer: GroupSyncer | None) -> EffectLog:
    log = EffectLog.create(tmp_path / "run.jsonl", HEADER, syncer=syncer)
    syncs.path = log.path
    if syncer is None:
        assert syncs.fsyncs == 2  # the header and its folder entry, before the run does anything
    else:
        # Written to the OS only; the syncer makes the file and its folder entry durable.
        assert syncs.fsyncs == 0
        assert syncs.calls == []
        _wait("the header's background sync", lambda: syncs.fsyncs == 1)
        assert syncs.by("effect-log-sync") == [1]
        syncs.fsyncs = 0
    return log


def _sync_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "effect-log-sync"}


def _wait(what: str, probe: Callable[[], bool], timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while not probe():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def test_effect_policy_syncs_an_outside_intent_before_intent_returns(
    tmp_path: Path, syncs: Syncs
) -> None:
    before = _sync_threads()
    log = _open(tmp_path, syncs, None)
    assert log.policy == "effect"
    assert all(log.sync_before(name) for name in OUTSIDE_EFFECTS)
    assert not log.sync_before(CLOCK.name)
    seq = log.intent(CLOCK)
    log.result(seq, CLOCK.name, "t")
    assert syncs.calls == []
    seq = log.intent(CELL)
    me = threading.current_thread().name
    assert syncs.calls == [(me, 4)]  # header, clock pair, the cell's intent: all on disk
    log.result(seq, CELL.name, {})
    log.close()
    assert syncs.fsyncs == 3  # and close
    assert _sync_threads() <= before  # the effect policy starts no syncer thread


def test_group_policy_never_syncs_on_the_writers_path(tmp_path: Path, syncs: Syncs) -> None:
    syncer = GroupSyncer(interval_ms=50)
    log = _open(tmp_path, syncs, syncer)
    assert log.policy == "run"
    assert [n for n in sorted(OUTSIDE_EFFECTS) if log.sync_before(n)] == ["turn.append"]
    me = threading.current_thread().name
    for _ in range(20):
        seq = log.intent(CELL)
        log.result(seq, CELL.name, {})
    assert syncs.by(me) == []  # no write waited for the disk
    _wait("a background sync of every line", lambda: 41 in syncs.by("effect-log-sync"))
    # The run's end is on disk before intent() returns (the turn is stored next).
    seq = log.intent(TURN)
    assert syncs.by(me) == [42]
    log.result(seq, TURN.name, {"ok": True})
    fsyncs = syncs.fsyncs
    log.close()
    assert syncs.fsyncs == fsyncs + 1  # and the whole file at close
    syncer.close()
    assert len(read_log(log.path).lines) == 42


def test_group_syncs_within_the_interval_at_most_every_interval(
    tmp_path: Path, syncs: Syncs
) -> None:
    interval_ms = 100
    syncer = GroupSyncer(interval_ms=interval_ms)
    log = _open(tmp_path, syncs, syncer)
    # Lines written steadily for a second: at most one round per interval (and the first).
    t0 = time.monotonic()
    while time.monotonic() - t0 < 1.0:
        seq = log.intent(CLOCK)
        log.result(seq, CLOCK.name, "t")
        time.sleep(0.002)
    elapsed = time.monotonic() - t0
    written = syncs.lines()
    _wait("the last lines to be synced", lambda: written in syncs.by("effect-log-sync"))
    background = syncs.by("effect-log-sync")
    assert 2 <= syncer.rounds <= elapsed * 1000 / interval_ms + 3, background
    # Each line reaches the disk within about one interval (slack for a loaded machine).
    # A line written while a round's fdatasync ran marks the log once more, so one more
    # round may follow (it syncs nothing new): let it pass before watching for idleness.
    time.sleep(2 * interval_ms / 1000)
    idle_rounds = syncer.rounds
    time.sleep(0.3)
    assert syncer.rounds == idle_rounds  # no new lines: no sync
    seq = log.intent(CLOCK)
    t_line = time.monotonic()
    _wait("the new line's sync", lambda: written + 1 in syncs.by("effect-log-sync"))
    assert time.monotonic() - t_line < interval_ms / 1000 + 1.0
    log.result(seq, CLOCK.name, "t")
    log.close()
    syncer.close()


def test_one_syncer_thread_for_many_logs_and_close_syncs_what_is_pending(
    tmp_path: Path, syncs: Syncs
) -> None:
    before = _sync_threads()
    syncer = GroupSyncer(interval_ms=60_000)  # a round only at the first mark, then at close
    syncs.path = tmp_path / "run0.jsonl"
    first = EffectLog.create(syncs.path, HEADER, syncer=syncer)  # the first round: at once
    _wait("the first round", lambda: len(syncs.by("effect-log-sync")) == 1)
    logs = [first] + [
        EffectLog.create(tmp_path / f"run{i}.jsonl", HEADER, syncer=syncer) for i in range(1, 5)
    ]
    seq = logs[0].intent(CLOCK)
    for log in logs:
        log.intent(CELL)
    threads = list(_sync_threads() - before)  # (other tests' servers may leave theirs)
    assert len(threads) == 1
    before = len(syncs.by("effect-log-sync"))
    syncer.close()
    assert not threads[0].is_alive()
    assert len(syncs.by("effect-log-sync")) == before + 5  # every log with new lines, once
    # After the syncer stopped, a log syncs its new line itself.
    logs[0].result(seq, CLOCK.name, "t")
    assert syncs.calls[-1] == (threading.current_thread().name, 4)
    for log in logs:
        log.close()


def test_a_closed_log_is_skipped_by_the_syncer(tmp_path: Path, syncs: Syncs) -> None:
    syncer = GroupSyncer(interval_ms=60_000)
    log = _open(tmp_path, syncs, syncer)
    log.intent(CLOCK)
    log.close()
    assert not log.sync_if_dirty()
    syncer.close()
    with pytest.raises(ValueError, match="interval_ms"):
        GroupSyncer(interval_ms=0)


def test_the_runs_end_sync_makes_a_new_logs_folder_entry_durable(
    tmp_path: Path, syncs: Syncs
) -> None:
    syncer = GroupSyncer(interval_ms=60_000)  # one round at the first mark, then none
    syncs.path = tmp_path / "first.jsonl"
    first = EffectLog.create(syncs.path, HEADER, syncer=syncer)
    _wait("the first round", lambda: syncs.fsyncs == 1)
    log = EffectLog.create(tmp_path / "run.jsonl", HEADER, syncer=syncer)
    syncs.path = log.path
    before = syncs.fsyncs
    log.intent(TURN)  # the run's end: synced now, not in a minute
    assert syncs.by(threading.current_thread().name) == [2]
    assert syncs.fsyncs == before + 1  # and the new file's folder entry with it
    log.close()
    first.close()
    syncer.close()


def test_a_failed_background_sync_is_raised_by_the_runs_own_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = getattr(os, "fdatasync", os.fsync)
    failures: list[str] = []

    def flaky(fd: int) -> None:
        if threading.current_thread().name == "effect-log-sync" and not failures:
            failures.append("EIO")
            raise OSError(5, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fdatasync", flaky, raising=False)
    syncer = GroupSyncer(interval_ms=10)
    log = EffectLog.create(tmp_path / "run.jsonl", HEADER, syncer=syncer)
    _wait("the failed background sync", lambda: bool(failures))
    time.sleep(0.05)
    with pytest.raises(OSError, match="Input/output error"):
        log.intent(TURN)  # its turn must not be stored as if the log were on disk
    log.close()
    syncer.close()
