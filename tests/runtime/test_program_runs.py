"""Runs of resolved programs through the real run manager, driver and kernel (issue 16):
what runs record (header, summary, turn), deployed programs stepping in threads, programs
that fail ending their runs visibly, and replay finding the recorded versions."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.exceptions import ProgramFault, ProgramMissing
from jupyter_agent.programs.builtin import run_refs
from jupyter_agent.trace.verify import ReplayedFailure, replay_run, verify_run
from tests.runtime import program_support as ps
from tests.runtime.harness import Harness, close_harness, final_text, make_harness

pytestmark = pytest.mark.timeout(120)

FAILED = "(the run ended; the server is fine)"


@pytest.fixture
async def agent(tmp_path: Path, fake_provider: Any, kernel_manager: Any) -> AsyncIterator[Harness]:
    harness = await make_harness(tmp_path, fake_provider([]), kernel_manager)
    yield harness
    await close_harness(harness)


def use(agent: Harness, registry: ps.FakeRegistry) -> ps.FakeRegistry:
    agent.manager.services.programs = registry
    return registry


def last_line(agent: Harness, run_id: str) -> dict[str, Any]:

    lines = agent.manager.log_path(run_id).read_text().splitlines()
    return dict(json.loads(lines[-1]))


async def test_a_builtin_run_records_its_hashed_programs_and_agent(agent: Harness) -> None:
    agent.fake.load([{"text": "Hello."}])
    turn = await agent.ask(agent.new_chat(), "hi")
    refs = tuple(r.text for r in run_refs("toolcaller@v8"))
    assert refs[0].startswith("toolcaller@v8#")
    assert len(refs) == 4
    trace = agent.trace(turn.run_id)
    assert trace.header["program"] == "toolcaller@v8"
    assert tuple(trace.header["programs"]) == refs
    assert trace.header["agent"] == "agent"
    summary = agent.store.get_run(turn.run_id)
    assert summary is not None
    assert summary.programs == refs
    assert summary.agent == "agent"
    assert turn.programs == refs
    assert turn.from_agent == "agent"
    assert "step_timeout_s" not in trace.header  # built-ins step inline
    assert verify_run(trace).identical


async def test_a_deployed_version_runs_records_and_replays(agent: Harness) -> None:
    v5 = ps.deployed(9, ps.echo)
    registry = use(agent, ps.FakeRegistry())
    registry.activate(v5)
    turn = await agent.ask(agent.new_chat(), "ping")
    assert final_text(turn) == "echo: ping"
    trace = agent.trace(turn.run_id)
    assert trace.header["program"] == "toolcaller@v9"
    assert trace.header["programs"][0] == v5.ref.text
    assert trace.header["step_timeout_s"] == 10.0
    summary = agent.store.get_run(turn.run_id)
    assert summary is not None
    assert summary.program == "toolcaller@v9"
    assert summary.programs == v5.programs
    assert summary.status == "done"
    assert turn.programs == v5.programs
    # replay finds it through the loader; with built-ins only it is missing
    assert verify_run(trace, registry.load).identical
    with pytest.raises(ProgramMissing, match="toolcaller@v9"):
        verify_run(trace)


@pytest.mark.parametrize(
    ("program", "said"),
    [
        (ps.boom, "ValueError: boom"),
        (ps.unknown_effect, "it yielded an unknown effect 'foo.bar'"),
        (ps.not_an_effect, "it yielded a int, not an effect"),
    ],
)
async def test_a_failing_program_ends_its_run_visibly(
    agent: Harness, program: ps.Factory, said: str, caplog: pytest.LogCaptureFixture
) -> None:
    bad = ps.deployed(9, program)
    registry = use(agent, ps.FakeRegistry())
    registry.activate(bad)
    chat = agent.new_chat()
    turn = await agent.ask(chat, "go")
    assert (turn.llm.stop_reason, turn.llm.end_cause) == ("error", "error")
    assert final_text(turn) == f"The program {bad.ref.text} failed: {said} {FAILED}"
    assert turn.user_text == "go"
    assert turn.programs == bad.programs
    assert turn.from_agent == "agent"
    reply = await agent.wait_event(chat, "reply")
    assert reply["text"] == final_text(turn)
    summary = agent.store.get_run(turn.run_id)
    assert summary is not None
    assert (summary.status, summary.end_cause) == ("error", "error")
    line = last_line(agent, turn.run_id)
    assert line["kind"] == "program_error"
    assert line["program"] == bad.ref.text
    assert line["after_seq"] == agent.trace(turn.run_id).lines[-1].seq
    # the traceback is logged (its text scrubbed of known secrets)
    assert any("failed" in r.getMessage() and "Traceback" in r.getMessage() for r in caplog.records)
    # replay reproduces the failure at the same point: identical
    trace = agent.trace(turn.run_id)
    assert trace.program_error is not None
    outcome = verify_run(trace, registry.load)
    assert outcome.identical
    assert outcome.failure is not None
    # another version that does not fail there is not identical, and says so
    registry.versions["toolcaller@v9"] = ps.Deployed(bad.ref, ps.echo)
    other = verify_run(trace, registry.load)
    assert not other.identical
    # the chat's next message starts a normal run
    registry.activate(None)
    agent.fake.load([{"text": "Fine."}])
    again = await agent.ask(chat, "again")
    assert final_text(again) == "Fine."
    assert again.llm.stop_reason == "done"


async def test_the_model_call_backstop_ends_a_deployed_run(agent: Harness) -> None:
    agent.ceilings = {"max_model_calls": 1}
    bad = ps.deployed(9, ps.model_calls)
    use(agent, ps.FakeRegistry()).activate(bad)
    turn = await agent.ask(agent.new_chat(), "go")
    assert turn.llm.end_cause == "error"
    assert "it went past 3 model calls (max_model_calls + 2)" in final_text(turn)
    trace = agent.trace(turn.run_id)
    assert sum(1 for x in trace.lines if x.phase == "intent" and x.name == "http.post") == 3
    loader = agent.manager.services.programs.load
    assert verify_run(trace, loader).identical


async def test_a_program_that_does_not_load_ends_its_run(agent: Harness) -> None:
    registry = use(agent, ps.FakeRegistry())
    ref = "toolcaller@v9#abcdefabcdef"
    registry.fault = ProgramFault(
        f"{ref} cannot be loaded: ImportError: no module named 'nonesuch'", program=ref
    )
    turn = await agent.ask(agent.new_chat(), "go")
    assert final_text(turn) == (
        f"The program {ref} failed: it cannot be loaded: ImportError: no module named "
        f"'nonesuch' {FAILED}"
    )
    assert turn.llm.end_cause == "error"
    assert last_line(agent, turn.run_id)["after_seq"] == 0


async def test_a_stuck_program_ends_while_other_chats_go_on(agent: Harness) -> None:
    agent.manager.program_step_timeout_s = 0.5
    stuck = ps.deployed(9, ps.spin)
    registry = use(agent, ps.FakeRegistry())
    registry.activate(stuck)
    chat = agent.new_chat()
    run = await agent.manager.send(chat, text="go")
    registry.activate(None)  # the other chat runs the built-in meanwhile
    agent.fake.load([{"text": "Quick."}])
    lags: list[float] = []

    async def probe() -> None:  # the event loop stays free while the program spins
        while True:
            t = time.perf_counter()
            await asyncio.sleep(0.01)
            lags.append(time.perf_counter() - t - 0.01)

    probing = asyncio.ensure_future(probe())
    try:
        started = time.perf_counter()
        other = await agent.ask(agent.new_chat(), "hi")
        other_s = time.perf_counter() - started
        turn = await agent.finish(run["run_id"], timeout_s=30)
    finally:
        probing.cancel()
    assert final_text(other) == "Quick."
    assert other_s < 2.0
    # A stuck program on the loop would stall it for its whole deadline (seconds); 1 s
    # leaves room for a loaded 2-core machine's scheduling.
    assert max(lags) < 1.0
    assert final_text(turn) == (
        f"The program {stuck.ref.text} failed: it yielded no effect within 0.5 s "
        f"(its step deadline) {FAILED}"
    )
    assert last_line(agent, turn.run_id)["error"]["type"] == "ProgramStuck"


async def test_a_deploy_during_a_run_applies_to_the_next_one(agent: Harness) -> None:
    v5, v6 = ps.deployed(9, ps.slow_then_echo), ps.deployed(10, ps.echo6)
    registry = use(agent, ps.FakeRegistry())
    registry.activate(v5)

    def slow(run_id: str, chat_id: str) -> Any:
        return ps.slow_then_echo(run_id, chat_id, hold_s=0.5)

    slow.__name__ = "slow_then_echo"
    v5.factory = slow
    first = await agent.manager.send(agent.new_chat(), text="one")
    await asyncio.sleep(0.1)
    registry.activate(v6)  # lands while v5's run is in flight
    second = await agent.ask(agent.new_chat(), "two")
    turn = await agent.finish(first["run_id"])
    assert final_text(turn) == "echo: one"
    assert turn.programs == v5.programs
    assert final_text(second) == "echo6: two"
    assert second.programs == v6.programs
    for run_id in (turn.run_id, second.run_id):
        assert verify_run(agent.trace(run_id), registry.load).identical


def test_replaying_a_failure_returns_it(tmp_path: Path) -> None:
    """replay_run's value for a reproduced failure (pure: a hand-written log)."""
    from jupyter_agent.effects import Effect
    from jupyter_agent.trace.log import EffectLog, read_log

    path = tmp_path / "run_x.jsonl"
    v5 = ps.deployed(9, ps.boom)
    header = {
        "run_id": "run_x",
        "chat_id": "chat_x",
        "program": "toolcaller@v9",
        "programs": list(v5.programs),
        "created": "2025-01-01T00:00:00.000Z",
    }
    with EffectLog.create(path, header) as log:
        for name, data, result in (
            ("clock.now", {}, "2025-01-01T00:00:00.000Z"),
            ("mailbox.drain", {}, []),
        ):
            seq = log.intent(Effect(name=name, data=data))
            log.result(seq, name, result)
        log.program_error(v5.ref.text, {"type": "ValueError", "message": "boom"})
    produced = replay_run(read_log(path), lambda ref: v5)
    assert produced == ReplayedFailure(
        program=v5.ref.text, error={"type": "ValueError", "message": "boom"}, after_seq=2
    )


def _append_twice(run_id: str, chat_id: str) -> Any:
    """Echoes, then yields its turn.append a second time and returns what that got."""
    from jupyter_agent.effects import TURN_APPEND, Effect

    turn = yield from ps.echo(run_id, chat_id)
    second = yield Effect(name=TURN_APPEND, data=turn.to_json())
    return turn if second.error is not None else None


async def test_a_second_turn_append_is_refused_and_stores_nothing(agent: Harness) -> None:
    use(agent, ps.FakeRegistry()).activate(ps.deployed(9, _append_twice))
    chat = agent.new_chat()
    turn = await agent.ask(chat, "go")
    assert final_text(turn) == "echo: go"
    assert len(agent.store.list_turns(chat)) == 1
    lines = agent.trace(turn.run_id).lines
    [second] = [x for x in lines if x.name == "turn.append" and x.phase == "result"][1:]
    assert second.error == {"type": "ProgramFault", "message": "this run's turn is already stored"}


SECRET = "sk-program-secret-0123456789abcdef"


def _quotes_a_secret(run_id: str, chat_id: str) -> Any:
    """Takes the message, then raises quoting a known secret (read from the server)."""
    from jupyter_agent.effects import CLOCK_NOW, MAILBOX_DRAIN, Effect

    yield Effect(name=CLOCK_NOW, data={})
    yield Effect(name=MAILBOX_DRAIN, data={})
    raise ValueError(f"the key was {SECRET}")


async def test_a_failed_programs_text_holds_no_known_secret(
    agent: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    from jupyter_agent.runtime.secrets import Scrubber

    agent.manager.services.scrubber = Scrubber({SECRET: "A_KEY"})
    use(agent, ps.FakeRegistry()).activate(ps.deployed(9, _quotes_a_secret))
    turn = await agent.ask(agent.new_chat(), "go")
    assert SECRET not in final_text(turn)
    assert "[redacted: A_KEY]" in final_text(turn)
    assert SECRET not in agent.manager.log_path(turn.run_id).read_text()
    assert SECRET not in caplog.text
    assert "[redacted: A_KEY]" in caplog.text
