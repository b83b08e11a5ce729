"""The JSONL effect log: writing, fsync policy, reading back, damage."""

from __future__ import annotations

import json
import os
import secrets
import threading
from pathlib import Path

import pytest

from jupyter_agent.effects import OUTSIDE_EFFECTS, Effect
from jupyter_agent.exceptions import TraceError
from jupyter_agent.trace.log import PROGRAM, EffectLog, now_iso, pair_effects, read_log

HEADER = {
    "run_id": "run_01TEST",
    "chat_id": "chat_01TEST",
    "program": PROGRAM,
    "profile": {"context_window": 200000},
    "tiers": {"codegen": {"provider": "fake", "model": "m"}},
    "created": "2025-01-02T03:04:05.678Z",
}


def _write_sample(path: Path) -> None:
    with EffectLog.create(path, HEADER) as log:
        s1 = log.intent(Effect(name="config.get", data={"key": "spaces"}))
        log.result(s1, "config.get", {"files": {}})
        s2 = log.intent(
            Effect(name="cell.run", data={"cell_id": "c1", "code": "1", "timeout_s": 5})
        )
        s3 = log.intent(
            Effect(name="app.call", data={"app": "llm", "method": "chat", "args": {}}, parent=s2)
        )
        log.result(s3, "app.call", None, error={"type": "AppCallError", "message": "boom"})
        log.result(s2, "cell.run", {"prints": []})


def test_write_and_read_back(tmp_path):
    path = tmp_path / "runs" / "run_01TEST.jsonl"
    _write_sample(path)
    raw = path.read_text().splitlines()
    assert json.loads(raw[0]) == {"kind": "header", "version": 1, **HEADER}
    trace = read_log(path)
    assert trace.header["run_id"] == "run_01TEST"
    assert trace.run_id == "run_01TEST"
    assert not trace.truncated
    assert [(ln.seq, ln.phase, ln.name) for ln in trace.lines] == [
        (1, "intent", "config.get"),
        (1, "result", "config.get"),
        (2, "intent", "cell.run"),
        (3, "intent", "app.call"),
        (3, "result", "app.call"),
        (2, "result", "cell.run"),
    ]
    assert trace.lines[3].parent == 2
    assert trace.lines[4].error == {"type": "AppCallError", "message": "boom"}
    assert "parent" not in json.loads(raw[1])
    pairs = pair_effects(trace)
    assert [(p.seq, p.name, p.parent) for p in pairs] == [
        (1, "config.get", None),
        (2, "cell.run", None),
        (3, "app.call", 2),
    ]
    assert pairs[1].data == {"cell_id": "c1", "code": "1", "timeout_s": 5}
    assert pairs[1].result is not None
    assert pairs[1].result.data == {"prints": []}
    assert pairs[2].result is not None
    assert not pairs[2].result.to_result().ok


def test_times_are_utc_millis_z(tmp_path):
    t = now_iso()
    assert t.endswith("Z")
    assert len(t) == len("2025-01-02T03:04:05.678Z")
    _write_sample(tmp_path / "a.jsonl")
    for line in read_log(tmp_path / "a.jsonl").lines:
        assert line.t.endswith("Z")
        assert line.t[19] == "."


def test_never_overwrites(tmp_path):
    path = tmp_path / "a.jsonl"
    _write_sample(path)
    before = path.read_bytes()
    with pytest.raises(FileExistsError):
        EffectLog.create(path, HEADER)
    assert path.read_bytes() == before


def test_fsync_before_each_outside_intent(tmp_path, monkeypatch):
    log = EffectLog.create(tmp_path / "a.jsonl", HEADER)
    calls: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        # What is on disk at fsync time: the intent line must already be written.
        calls.append(len(Path(log.path).read_text().splitlines()))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    monkeypatch.setattr(os, "fdatasync", counting_fsync, raising=False)
    inside = [
        Effect(name="config.get", data={"key": "ceilings"}),
        Effect(name="clock.now", data={}),
        Effect(name="id.new", data={"kind": "run"}),
        Effect(name="mailbox.drain", data={}),
    ]
    for effect in inside:
        seq = log.intent(effect)
        log.result(seq, effect.name, "x")
    assert calls == []
    outside = [
        Effect(name="http.post", data={"url": "http://127.0.0.1:1/v1/messages", "headers": {}}),
        Effect(name="cell.run", data={"cell_id": "c1", "code": "x", "timeout_s": 1}),
        Effect(name="bash.run", data={"command": "ls", "timeout_s": 1}),
        Effect(name="app.call", data={"app": "chat", "method": "post", "args": {}}, parent=6),
        Effect(name="chat.post", data={"text": "hi", "done": True}),
        Effect(name="turn.append", data={"id": "t"}),
        Effect(name="chunk.store", data={"level": 1, "first_turn": 1, "last_turn": 10}),
        Effect(name="chat.retitle", data={"title": "Sales", "expected": "sales?"}),
        Effect(
            name="approval.wait",
            data={"approval_id": "a1", "kind": "cell", "code": "x", "summary": "", "timeout_s": 1},
        ),
    ]
    assert {e.name for e in outside} == set(OUTSIDE_EFFECTS)
    for n, effect in enumerate(outside, start=1):
        lines_before = len(log.path.read_text().splitlines())
        seq = log.intent(effect)
        # exactly one fsync, during intent(), after the intent line was written
        assert len(calls) == n
        assert calls[-1] == lines_before + 1
        log.result(seq, effect.name, {"ok": True})
        assert len(calls) == n  # results are not fsynced
    log.close()
    assert len(calls) == len(outside) + 1  # and once on close
    log.close()
    assert len(calls) == len(outside) + 1


def test_deferred_durability_leaves_the_sync_to_the_caller(tmp_path, monkeypatch):
    log = EffectLog.create(tmp_path / "b.jsonl", HEADER)
    calls: list[int] = []
    monkeypatch.setattr(os, "fsync", lambda fd: calls.append(fd))
    monkeypatch.setattr(os, "fdatasync", lambda fd: calls.append(fd), raising=False)
    seq = log.intent(Effect(name="chat.post", data={"text": "hi", "done": False}), durable=False)
    assert calls == []
    log.sync()
    assert len(calls) == 1
    log.result(seq, "chat.post", "msg_1")
    log.close()
    assert len(calls) == 2


def test_not_serialisable_writes_nothing(tmp_path):
    log = EffectLog.create(tmp_path / "a.jsonl", HEADER)
    size = log.path.stat().st_size
    with pytest.raises(TypeError):
        log.intent(Effect(name="config.get", data={"key": object()}))
    assert log.path.stat().st_size == size
    seq = log.intent(Effect(name="clock.now", data={}))
    assert seq == 1  # the refused intent took no seq
    with pytest.raises(TypeError):
        log.result(seq, "clock.now", {1, 2})
    assert log.result(seq, "clock.now", "2025-01-01T00:00:00.000Z").seq == 1
    log.close()
    assert len(read_log(log.path).lines) == 2


def test_result_checks_seq_and_name(tmp_path):
    with EffectLog.create(tmp_path / "a.jsonl", HEADER) as log:
        seq = log.intent(Effect(name="clock.now", data={}))
        with pytest.raises(ValueError, match=r"not 'id\.new'"):
            log.result(seq, "id.new", "x")
        with pytest.raises(ValueError, match="no open intent"):
            log.result(seq + 1, "clock.now", "x")
        log.result(seq, "clock.now", "x")
        with pytest.raises(ValueError, match="no open intent"):
            log.result(seq, "clock.now", "x")
    with pytest.raises(ValueError, match="closed"):
        log.intent(Effect(name="clock.now", data={}))


@pytest.mark.parametrize("header", ["Authorization", "x-api-key", "API-Key", "X-Goog-Api-Key"])
def test_credential_header_refused(tmp_path, header):
    canary = "canary-" + secrets.token_hex(8)
    log = EffectLog.create(tmp_path / "a.jsonl", HEADER)
    effect = Effect(
        name="http.post",
        data={"url": "http://127.0.0.1:9/v1", "headers": {"content-type": "x", header: canary}},
    )
    with pytest.raises(ValueError, match="credential") as info:
        log.intent(effect)
    assert canary not in str(info.value)
    log.close()
    assert canary not in log.path.read_text()
    assert read_log(log.path).lines == []


def test_allowed_headers_pass(tmp_path):
    headers = {
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "prompt-caching-2024-07-31",
        "Content-Type": "application/json",
        "x-request-id": "req_1",
    }
    path = tmp_path / "a.jsonl"
    with EffectLog.create(path, HEADER) as log:
        seq = log.intent(Effect(name="http.post", data={"url": "u", "headers": headers}))
        log.result(seq, "http.post", {"status": 200, "json": {}, "attempts": []})
    trace = read_log(path)
    assert [(ln.seq, ln.phase, ln.name) for ln in trace.lines] == [
        (1, "intent", "http.post"),
        (1, "result", "http.post"),
    ]
    # written as given: every name, its case and its value
    assert trace.lines[0].data == {"url": "u", "headers": headers}
    assert list(trace.lines[0].data["headers"]) == list(headers)


def test_truncated_last_line_tolerated(tmp_path):
    path = tmp_path / "a.jsonl"
    _write_sample(path)
    full = path.read_bytes()
    path.write_bytes(full[:-20])  # crash in the middle of the last line
    trace = read_log(path)
    assert trace.truncated
    assert len(trace.lines) == 5
    assert pair_effects(trace)[1].result is None  # cell.run never got its result


def test_garbage_mid_file_names_the_line(tmp_path):
    path = tmp_path / "a.jsonl"
    _write_sample(path)
    lines = path.read_text().splitlines(keepends=True)
    lines[3] = '{"seq": 2, "phase": "intent", garbage\n'
    path.write_text("".join(lines))
    with pytest.raises(TraceError, match="line 4"):
        read_log(path)


@pytest.mark.parametrize(
    ("lineno", "replacement", "message"),
    [
        (1, '{"seq": 1}\n', "header"),
        (3, '{"seq": 1, "phase": "result", "name": "clock.now", "data": 1, "t": "x"}\n', "line 3"),
        (4, '{"seq": 9, "phase": "intent", "name": "cell.run", "data": 1, "t": "x"}\n', "line 4"),
        (4, '{"seq": 2, "phase": "begin", "name": "cell.run", "data": 1, "t": "x"}\n', "line 4"),
        (4, "[1, 2]\n", "line 4"),
    ],
)
def test_inconsistent_lines(tmp_path, lineno, replacement, message):
    path = tmp_path / "a.jsonl"
    _write_sample(path)
    lines = path.read_text().splitlines(keepends=True)
    lines[lineno - 1] = replacement
    path.write_text("".join(lines))
    with pytest.raises(TraceError, match=message):
        read_log(path)


def test_threads_and_unicode(tmp_path):
    path = tmp_path / "a.jsonl"
    log = EffectLog.create(path, HEADER)

    def work(n: int) -> None:
        for i in range(50):
            seq = log.intent(Effect(name="id.new", data={"kind": f"k{n}-{i}"}))
            log.result(seq, "id.new", f"ü\udcff{n}-{i}")  # a lone surrogate too

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    log.close()
    trace = read_log(path)
    pairs = pair_effects(trace)
    assert [p.seq for p in pairs] == list(range(1, 201))
    for p in pairs:
        assert p.result is not None
        assert p.result.data.endswith(p.data["kind"][1:])


def test_a_log_is_readable_by_its_owner_only(tmp_path):
    old = os.umask(0o022)
    try:
        with EffectLog.create(tmp_path / "runs" / "r.jsonl", HEADER) as log:
            mode = log.path.stat().st_mode & 0o777
    finally:
        os.umask(old)
    assert mode == 0o600
