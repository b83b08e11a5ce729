"""Replay: a pure generator recorded through the log, then replayed from it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.core.loop.drive import drive
from jupyter_agent.effects import Effect, EffectGen, Result
from jupyter_agent.exceptions import NondeterminismError, TraceError
from jupyter_agent.trace.log import PROGRAM, EffectLog, read_log
from jupyter_agent.trace.replay import Replayer, RunStopped, replay

HEADER = {"run_id": "run_R", "chat_id": "chat_C", "program": PROGRAM, "created": "x"}


def sample_loop(question: str) -> EffectGen[dict[str, Any]]:
    """A small loop shaped like toolcaller: config, clock, model call, cell, reply, turn."""
    spaces = yield Effect(name="config.get", data={"key": "spaces"})
    now = yield Effect(name="clock.now", data={})
    reply = yield Effect(
        name="http.post",
        data={
            "url": "http://127.0.0.1:9/v1/messages",
            "headers": {"anthropic-version": "2023-06-01"},
            # a tuple: the log holds a list, replay must not see a difference
            "json": {"messages": [{"role": "user", "content": question}], "stop": ("a", "b")},
            "credential_ref": "env:TEST_REF",
            "deadline_s": 30.0,
        },
    )
    code = reply.data["json"]["code"]
    cell = yield Effect(name="cell.run", data={"cell_id": "c1", "code": code, "timeout_s": 60})
    text = f"{spaces.data['agent_name']} at {now.data}: {cell.data['prints'][0]}"
    posted = yield Effect(name="chat.post", data={"text": text, "done": True})
    yield Effect(name="turn.append", data={"userText": question, "replies": [text]})
    return {"text": text, "message_id": posted.data, "cell_ok": cell.ok}


def perform(effect: Effect, log: EffectLog, seq: int) -> Any:
    """The 'world' for recording: answers, and writes nested app calls as the host does."""
    if effect.name == "config.get":
        return {"agent_name": "agent"}
    if effect.name == "clock.now":
        return "2025-01-02T03:04:05.678Z"
    if effect.name == "http.post":
        return {"status": 200, "json": {"code": "print(llm.chat('x'))"}, "attempts": [{}]}
    if effect.name == "cell.run":
        for i in range(2):
            nested = Effect(
                name="app.call",
                data={"app": "llm", "method": "chat", "args": {"messages": f"q{i}"}},
                parent=seq,
            )
            s = log.intent(nested)
            log.result(s, "app.call", f"answer{i}")
        return {"prints": ["answer0"]}
    if effect.name == "chat.post":
        return "msg_1"
    return {"ok": True}


def record(gen: EffectGen[Any], path: Path, *, stop_at: str | None = None) -> Any:
    """Drive ``gen`` for real, logging intent and result of each effect."""

    class Crashed(Exception):
        pass

    with EffectLog.create(path, HEADER) as log:

        def logged(effect: Effect) -> Result:
            seq = log.intent(effect)
            if effect.name == stop_at:
                raise Crashed  # the process 'crashed' with the effect in flight
            return log.result(seq, effect.name, perform(effect, log, seq))

        try:
            return drive(gen, logged)
        except Crashed:
            return None


def test_record_then_replay_identical(tmp_path):
    path = tmp_path / "run.jsonl"
    recorded = record(sample_loop("what?"), path)
    trace = read_log(path)
    assert [ln.name for ln in trace.lines if ln.phase == "intent"] == [
        "config.get",
        "clock.now",
        "http.post",
        "cell.run",
        "app.call",
        "app.call",
        "chat.post",
        "turn.append",
    ]
    assert replay(sample_loop("what?"), trace) == recorded
    assert recorded["text"] == "agent at 2025-01-02T03:04:05.678Z: answer0"


def test_replayer_serves_recorded_results(tmp_path):
    path = tmp_path / "run.jsonl"
    record(sample_loop("q"), path)
    replayer = Replayer(read_log(path))
    assert (replayer.position, replayer.remaining) == (0, 6)
    first = replayer.answer(Effect(name="config.get", data={"key": "spaces"}))
    assert first == Result(seq=1, name="config.get", data={"agent_name": "agent"})
    assert (replayer.position, replayer.remaining) == (1, 5)
    with pytest.raises(NondeterminismError) as info:
        replayer.finish()
    assert info.value.seq == 2


def test_tampered_log_names_the_seq(tmp_path):
    path = tmp_path / "run.jsonl"
    record(sample_loop("q"), path)
    lines = path.read_text().splitlines()
    for i, raw in enumerate(lines):
        obj = json.loads(raw)
        if obj.get("name") == "cell.run" and obj.get("phase") == "intent":
            obj["data"]["code"] = "print('tampered')"
            lines[i] = json.dumps(obj)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(NondeterminismError) as info:
        replay(sample_loop("q"), read_log(path))
    err = info.value
    assert err.seq == 4
    assert err.recorded["data"]["code"] == "print('tampered')"
    assert err.asked["data"]["code"] == "print(llm.chat('x'))"
    assert err.recorded["name"] == err.asked["name"] == "cell.run"
    assert "seq 4" in str(err)


def test_different_question_diverges_at_the_model_call(tmp_path):
    path = tmp_path / "run.jsonl"
    record(sample_loop("q"), path)
    with pytest.raises(NondeterminismError) as info:
        replay(sample_loop("another q"), read_log(path))
    assert info.value.seq == 3


def extra_effect_loop() -> EffectGen[str]:
    yield from sample_loop("q")
    yield Effect(name="clock.now", data={})
    return "never"


def test_extra_effect_asked(tmp_path):
    path = tmp_path / "run.jsonl"
    record(sample_loop("q"), path)
    with pytest.raises(NondeterminismError) as info:
        replay(extra_effect_loop(), read_log(path))
    assert info.value.seq == 9  # after 6 top-level and 2 nested effects
    assert info.value.recorded is None
    assert info.value.asked == {"name": "clock.now", "data": {}}


def short_loop() -> EffectGen[str]:
    yield Effect(name="config.get", data={"key": "spaces"})
    yield Effect(name="clock.now", data={})
    return "short"


def test_effect_left_unasked(tmp_path):
    path = tmp_path / "run.jsonl"
    record(sample_loop("q"), path)
    with pytest.raises(NondeterminismError) as info:
        replay(short_loop(), read_log(path))
    assert info.value.seq == 3
    assert info.value.recorded["name"] == "http.post"
    assert info.value.asked is None


def test_run_stopped_without_result(tmp_path):
    path = tmp_path / "run.jsonl"
    record(sample_loop("q"), path, stop_at="cell.run")
    trace = read_log(path)
    with pytest.raises(RunStopped, match="run stopped at seq 4") as info:
        replay(sample_loop("q"), trace)
    assert isinstance(info.value, TraceError)
    assert info.value.seq == 4


def cancellable_loop() -> EffectGen[str]:
    result = yield Effect(name="http.post", data={"url": "u", "headers": {}})
    if result.cancelled:
        return "broken"
    return "answered"


def test_cancelled_result_is_served(tmp_path):
    path = tmp_path / "run.jsonl"
    with EffectLog.create(path, HEADER) as log:
        seq = log.intent(Effect(name="http.post", data={"url": "u", "headers": {}}))
        log.result(seq, "http.post", {"cancelled": "break_hard"})
    assert replay(cancellable_loop(), read_log(path)) == "broken"


def test_generator_closed_on_mismatch(tmp_path):
    path = tmp_path / "run.jsonl"
    record(sample_loop("q"), path)
    closed: list[bool] = []

    def loop() -> EffectGen[None]:
        try:
            yield Effect(name="clock.now", data={})
        finally:
            closed.append(True)

    with pytest.raises(NondeterminismError):
        replay(loop(), read_log(path))
    assert closed == [True]
