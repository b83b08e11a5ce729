"""Scenario tests of the loop + driver: fake model over loopback, a real agent kernel.

Every scenario's effect log must replay identically (no model, no kernel).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.exceptions import NondeterminismError
from jupyter_agent.trace.log import read_log
from jupyter_agent.trace.verify import replay_run, verify_run
from tests.runtime.harness import Harness, close_harness, final_text, make_harness

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def agent(tmp_path: Path, fake_provider: Any, kernel_manager: Any) -> AsyncIterator[Harness]:
    fake = fake_provider([])
    harness = await make_harness(tmp_path, fake, kernel_manager)
    yield harness
    await close_harness(harness)


def assert_replays(agent: Harness, turn: TurnRecord) -> None:
    outcome = verify_run(agent.manager.log_path(turn.run_id))
    assert outcome.identical, outcome.message


def effect_results(agent: Harness, run_id: str, name: str) -> list[Any]:
    trace = agent.trace(run_id)
    return [line.data for line in trace.lines if line.phase == "result" and line.name == name]


async def test_one_cell_answer(agent: Harness) -> None:
    agent.fake.load(
        [
            {"text": "Let me compute.", "cells": ["x = 6 * 7\nprint(x)"]},
            {"expect": {"last_user_contains": "42"}, "text": "The answer is **42**."},
        ]
    )
    chat = agent.new_chat()
    turn = await agent.ask(chat, "What is 6 times 7?")
    assert turn.llm.stop_reason == "done"
    assert turn.llm.end_cause == "done"
    assert [(r.text, r.done) for r in turn.replies] == [
        ("Let me compute.", False),
        ("The answer is **42**.", True),
    ]
    assert turn.llm.model_calls == 2
    assert turn.llm.cells == 1
    assert turn.user_text == "What is 6 times 7?"
    assert turn.llm.usage.output_tokens > 0
    assert turn.llm.fingerprints["system"]
    assert turn.llm.fingerprints["identity"]
    cell = effect_results(agent, turn.run_id, "cell.run")[0]
    assert cell["prints"][0]["text"].strip() == "42"
    events = agent.events.since(chat, 0)
    types = [e["type"] for e in events]
    assert types[0] == "run_start"
    assert events[0]["text"] == "What is 6 times 7?"
    assert types[-1] == "run_end"
    assert {"bubble", "cell_start", "cell_end", "reply"} <= set(types)
    assert_replays(agent, turn)


async def test_self_correction_after_an_error(agent: Harness) -> None:
    agent.fake.load(
        [
            {"cells": ["print(undefined_name)"]},
            {"expect": {"last_user_contains": "NameError"}, "cells": ["print('fixed')"]},
            {"expect": {"last_user_contains": "fixed"}, "text": "Fixed it."},
        ]
    )
    turn = await agent.ask(agent.new_chat(), "go")
    assert turn.llm.stop_reason == "done"
    assert turn.llm.cells == 2
    assert turn.llm.model_calls == 3
    tool_result = agent.fake.requests[1].json["messages"][-1]["content"][0]
    assert tool_result["type"] == "tool_result"
    assert tool_result["is_error"] is True
    assert_replays(agent, turn)


async def test_length_stop_wraps_up_without_tools(agent: Harness) -> None:
    agent.fake.load([{"text": "I was going to say", "stop": "length"}, {"text": "Summary."}])
    turn = await agent.ask(agent.new_chat(), "explain")
    assert (turn.llm.stop_reason, turn.llm.end_cause) == ("wrapup", "length")
    assert final_text(turn) == "Summary."
    wrap = agent.fake.requests[1].json
    assert "tools" not in wrap  # no tool in the history: none offered at all
    assert "Do not call any tool" in json.dumps(wrap["messages"][-1])
    assert_replays(agent, turn)


async def test_steering_message_reaches_the_next_model_call(agent: Harness) -> None:
    agent.fake.load(
        [
            {"cells": ["import time\ntime.sleep(1.5)\nprint('slept')"]},
            {"expect": {"last_user_contains": "also check y"}, "text": "Checked y too."},
        ]
    )
    chat = agent.new_chat()
    first = await agent.manager.send(chat, text="check x")
    await agent.wait_event(chat, "cell_start")
    second = await agent.manager.send(chat, text="also check y")
    assert second == {
        "run_id": first["run_id"],
        "routed": "mailbox",
        "message_id": second["message_id"],
    }
    assert second["message_id"].startswith("msg_")  # its identity in the events and steps
    turn = await agent.finish(first["run_id"])
    assert turn.llm.stop_reason == "done"
    assert [s.text for s in turn.steering] == ["also check y"]
    assert_replays(agent, turn)


async def test_message_during_the_last_model_call_joins_that_turn(agent: Harness) -> None:
    # The model is answering (its final reply, as it turns out) when "two" arrives: the
    # answer names this run, so this run's turn must hold "two" and answer it.
    agent.fake.load(
        [
            {"delay_s": 1.0, "text": "first answer"},
            {"expect": {"last_user_contains": "two"}, "text": "second answer"},
        ]
    )
    chat = agent.new_chat()
    first = await agent.manager.send(chat, text="one")
    await agent.wait_requests(1)
    second = await agent.manager.send(chat, text="two")
    assert second == {
        "run_id": first["run_id"],
        "routed": "mailbox",
        "message_id": second["message_id"],
    }
    assert second["message_id"].startswith("msg_")  # its identity in the events and steps
    turn = await agent.finish(first["run_id"])
    assert turn.user_text == "one"
    assert [s.text for s in turn.steering] == ["two"]
    assert [(r.text, r.done) for r in turn.replies] == [
        ("first answer", False),
        ("second answer", True),
    ]
    assert len(agent.store.list_turns(chat)) == 1  # shown once, in one turn
    assert agent.manager.active_run_id(chat) is None
    assert_replays(agent, turn)


async def test_message_after_the_final_reply_gets_the_next_runs_id(agent: Harness) -> None:
    agent.fake.load([{"text": "first answer"}, {"text": "second answer"}])
    chat = agent.new_chat()
    first = await agent.manager.send(chat, text="one")
    await agent.wait_event(chat, "reply")
    # The final reply is out; the run may still be writing its turn. "two" is not this
    # run's: the answer names the run that will hold it.
    second = await agent.manager.send(chat, text="two")
    if second["routed"] == "mailbox":  # only if the first run had not closed yet
        pytest.fail(f"a message after the final reply was routed to the ended run: {second}")
    assert second["routed"] == "run"
    assert second["run_id"] != first["run_id"]
    turn1 = await agent.finish(first["run_id"])
    turn2 = await agent.finish(second["run_id"])
    assert (turn1.user_text, final_text(turn1), turn1.steering) == ("one", "first answer", ())
    assert (turn2.user_text, final_text(turn2)) == ("two", "second answer")
    # the second prompt carries the first turn (boot window)
    assert "first answer" in json.dumps(agent.fake.requests[1].json["messages"])
    assert_replays(agent, turn1)
    assert_replays(agent, turn2)


async def test_messages_after_a_soft_break_open_the_next_run(agent: Harness) -> None:
    agent.fake.load(
        [
            {"cells": ["import time\ntime.sleep(1.0)"]},
            {"text": "Stopped."},
            {"expect": {"last_user_contains": "three"}, "text": "Both answered."},
        ]
    )
    chat = agent.new_chat()
    run = await agent.manager.send(chat, text="one")
    await agent.wait_event(chat, "cell_start")
    assert await agent.manager.break_run(run["run_id"], hard=False) == "breaking"
    two = await agent.manager.send(chat, text="two")
    three = await agent.manager.send(chat, text="three")
    assert two["routed"] == three["routed"] == "run"
    assert two["run_id"] == three["run_id"] != run["run_id"]
    turn1 = await agent.finish(run["run_id"])
    turn2 = await agent.finish(two["run_id"])
    assert turn1.llm.end_cause == "break_soft"
    assert turn1.steering == ()
    assert turn2.user_text == "two"
    assert [s.text for s in turn2.steering] == ["three"]
    assert_replays(agent, turn2)


async def test_message_queued_before_a_hard_break_opens_the_next_turn(
    agent: Harness,
) -> None:
    agent.fake.load([{"cells": ["import time\ntime.sleep(30)"]}, {"text": "unused"}])
    chat = agent.new_chat()
    run = await agent.manager.send(chat, text="one")
    await agent.wait_event(chat, "cell_start")
    queued = await agent.manager.send(chat, text="steer me")
    assert queued == {
        "run_id": run["run_id"],
        "routed": "mailbox",
        "message_id": queued["message_id"],
    }
    assert queued["message_id"].startswith("msg_")  # its identity in the events and steps
    assert await agent.manager.break_run(run["run_id"], hard=True) == "breaking"
    after = await agent.manager.send(chat, text="after the stop")
    assert after["routed"] == "run"
    assert after["run_id"] != run["run_id"]
    turn1 = await agent.finish(run["run_id"])
    assert turn1.llm.stop_reason == "break_hard"
    # toolcaller@v7: no model call read it, so it is not the broken turn's: it opens the
    # next run (the one "after the stop" was promised to), first, as it came first.
    assert turn1.steering == ()
    turn2 = await agent.finish(after["run_id"])
    assert turn2.user_text == "steer me"
    assert [s.text for s in turn2.steering] == ["after the stop"]
    assert_replays(agent, turn1)


async def test_in_cell_bubbles_join_the_turns_replies(agent: Harness) -> None:
    agent.fake.load(
        [
            {
                "text": "Working on it.",
                "cells": ["chat.post('step 1 of 2')\nchat.post('step 2 of 2')\nprint('ok')"],
            },
            {"text": "All done."},
        ]
    )
    turn = await agent.ask(agent.new_chat(), "go")
    assert [(r.text, r.done) for r in turn.replies] == [
        ("Working on it.", False),
        ("step 1 of 2", False),
        ("step 2 of 2", False),
        ("All done.", True),
    ]
    assert_replays(agent, turn)


async def test_a_hard_broken_cells_bubbles_stay_in_the_turn(agent: Harness) -> None:
    agent.fake.load([{"cells": ["chat.post('started')\nimport time\ntime.sleep(30)"]}])
    chat = agent.new_chat()
    run = await agent.manager.send(chat, text="go")
    deadline = time.monotonic() + 30
    while not any(e["type"] == "bubble" for e in agent.events.since(chat, 0)):
        assert time.monotonic() < deadline, "no bubble from the cell"
        await asyncio.sleep(0.02)
    await agent.manager.break_run(run["run_id"], hard=True)
    turn = await agent.finish(run["run_id"])
    assert turn.llm.stop_reason == "break_hard"
    assert [(r.text, r.done) for r in turn.replies] == [("started", False)]


async def test_soft_break_wraps_up_at_the_next_drain(agent: Harness) -> None:
    agent.fake.load(
        [
            {"cells": ["import time\ntime.sleep(1.0)\nprint('done sleeping')"]},
            {"expect": {"last_user_contains": "asked you to stop"}, "text": "Stopped; slept."},
        ]
    )
    chat = agent.new_chat()
    run = await agent.manager.send(chat, text="sleep")
    await agent.wait_event(chat, "cell_start")
    assert await agent.manager.break_run(run["run_id"], hard=False) == "breaking"
    turn = await agent.finish(run["run_id"])
    assert (turn.llm.stop_reason, turn.llm.end_cause) == ("wrapup", "break_soft")
    assert final_text(turn) == "Stopped; slept."
    assert_replays(agent, turn)


async def test_hard_break_during_a_slow_model_call(agent: Harness) -> None:
    agent.fake.load([{"delay_s": 30, "text": "too late"}])
    chat = agent.new_chat()
    run = await agent.manager.send(chat, text="slow please")
    await agent.wait_requests(1)
    started = time.monotonic()
    assert await agent.manager.break_run(run["run_id"], hard=True) == "breaking"
    turn = await agent.finish(run["run_id"], timeout_s=20)
    assert time.monotonic() - started < 10  # long before the 30 s reply
    assert (turn.llm.stop_reason, turn.llm.end_cause) == ("break_hard", "break_hard")
    assert turn.interrupted
    assert turn.user_text == "slow please"
    assert {"cancelled": "break_hard"} in effect_results(agent, turn.run_id, "http.post")
    assert agent.store.get_run(turn.run_id).status == "interrupted"
    assert await agent.manager.break_run(run["run_id"], hard=True) == "ended"
    assert_replays(agent, turn)


async def test_hard_break_during_a_long_cell(agent: Harness) -> None:
    agent.fake.load([{"cells": ["import time\nfor i in range(600):\n    time.sleep(0.1)"]}])
    chat = agent.new_chat()
    run = await agent.manager.send(chat, text="loop")
    await agent.wait_event(chat, "cell_start")
    await asyncio.sleep(0.3)
    started = time.monotonic()
    await agent.manager.break_run(run["run_id"], hard=True)
    turn = await agent.finish(run["run_id"], timeout_s=30)
    assert time.monotonic() - started < 15
    assert turn.llm.stop_reason == "break_hard"
    [cell] = effect_results(agent, turn.run_id, "cell.run")
    assert cell["cancelled"] == "break_hard"  # what the loop reads; the partial cell beside it
    assert cell["cell"]["cell_id"] == "c1"
    assert_replays(agent, turn)


@pytest.mark.parametrize(
    ("ceilings", "script", "cause"),
    [
        (
            {"max_model_calls": 1},
            [{"cells": ["print(1)"]}, {"text": "Summary after one call."}],
            "ceiling:model_calls",
        ),
        (
            {"max_cells": 1},
            [{"cells": ["print(1)", "print(2)"]}, {"text": "Summary after one cell."}],
            "ceiling:cells",
        ),
        (
            {"max_wall_s": 2.0},
            [{"cells": ["import time\ntime.sleep(3)"]}, {"text": "Summary: out of time."}],
            "ceiling:wall_s",
        ),
        (
            {"max_cost_usd": 0.01},
            [{"cells": ["print(1)"], "usage": {"in": 100000, "out": 10}}, {"text": "Costly."}],
            "ceiling:cost_usd",
        ),
    ],
)
async def test_ceilings_end_through_wrap_up(
    agent: Harness, ceilings: dict[str, Any], script: list[dict[str, Any]], cause: str
) -> None:
    agent.ceilings = ceilings
    agent.fake.load(script)
    turn = await agent.ask(agent.new_chat(), "work")
    assert (turn.llm.stop_reason, turn.llm.end_cause) == ("wrapup", cause)
    assert final_text(turn) == script[-1]["text"]
    assert agent.fake.remaining == 0
    # the wrap-up offers no tool: the history holds tool calls, so tool_choice is none
    assert agent.fake.requests[-1].json["tool_choice"] == {"type": "none"}
    if cause == "ceiling:cells":
        assert turn.llm.cells == 1
    assert_replays(agent, turn)


async def test_a_bad_tier_is_explained_in_the_chat(agent: Harness) -> None:
    agent.tier = {"provider": "nonesuch", "model": "m", "base_url": "http://127.0.0.1:9"}
    turn = await agent.ask(agent.new_chat(), "hello?")
    assert (turn.llm.stop_reason, turn.llm.end_cause) == ("error", "error")
    assert "nonesuch" in final_text(turn)
    assert turn.user_text == "hello?"
    assert agent.fake.requests == []
    assert_replays(agent, turn)


async def test_a_provider_error_ends_the_turn_with_a_clear_reply(agent: Harness) -> None:
    agent.fake.load([{"error": {"status": 401}}])
    turn = await agent.ask(agent.new_chat(), "hi")
    assert (turn.llm.stop_reason, turn.llm.end_cause) == ("error", "error")
    assert "HTTP 401" in final_text(turn)
    assert_replays(agent, turn)


async def test_fingerprints_follow_the_identity(agent: Harness) -> None:
    agent.fake.load([{"text": "one"}, {"text": "two"}, {"text": "three"}])
    chat = agent.new_chat()
    first = await agent.ask(chat, "a")
    second = await agent.ask(chat, "b")
    assert first.llm.fingerprints == second.llm.fingerprints
    files = dict(agent.spaces["files"])
    files["_soul"] = files["_soul"] + "\nYou answer in haiku."
    agent.spaces = {**agent.spaces, "files": files}
    third = await agent.ask(chat, "c")
    assert third.llm.fingerprints["identity"] != first.llm.fingerprints["identity"]
    assert third.llm.fingerprints["system"] != first.llm.fingerprints["system"]


async def test_crash_recovery_writes_a_minimal_turn(agent: Harness) -> None:
    from jupyter_agent.core.turns import RunSummary

    chat = agent.new_chat()
    agent.store.upsert_run(
        RunSummary(
            run_id="run_CRASHED",
            chat_id=chat,
            program="toolcaller@v1",
            status="running",
            started="2026-01-01T00:00:00.000Z",
        )
    )
    assert await agent.manager.recover() == ["run_CRASHED"]
    turn = agent.store.get_turn_by_run("run_CRASHED")
    assert turn is not None
    assert (turn.llm.stop_reason, turn.llm.end_cause) == ("error", "restart")
    assert turn.interrupted
    assert agent.store.get_run("run_CRASHED").status == "interrupted"
    assert await agent.manager.recover() == []


async def test_tampered_log_names_the_seq(agent: Harness) -> None:
    agent.fake.load([{"cells": ["print(1)"]}, {"text": "one"}])
    turn = await agent.ask(agent.new_chat(), "tamper")
    path = agent.manager.log_path(turn.run_id)
    lines = path.read_text().splitlines()
    target = None
    for i, raw in enumerate(lines):
        obj = json.loads(raw)
        if obj.get("phase") == "result" and obj.get("name") == "cell.run":
            # What the model read of the cell: its recorded digest (a log written before
            # digests were recorded: the result the loop digested, as the golden logs test).
            obj["data"]["digest"]["text"] = obj["data"]["digest"]["text"].replace("1", "2")
            lines[i] = json.dumps(obj)
            target = obj["seq"]
            break
    assert target is not None
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(NondeterminismError) as info:
        replay_run(read_log(path))
    # the changed digest changes the very next model call's request
    trace = read_log(path)
    next_post = min(
        ln.seq
        for ln in trace.lines
        if ln.name == "http.post" and ln.phase == "intent" and ln.seq > target
    )
    assert info.value.seq == next_post
    assert info.value.recorded["name"] == info.value.asked["name"] == "http.post"
    assert verify_run(path).identical is False


async def test_in_cell_apps_are_performed_and_logged_by_the_host(
    agent: Harness, fake_provider: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = "sk-ant-canary-" + "7f3e9a1c5b"
    monkeypatch.setenv("JA_TEST_CANARY_KEY", canary)
    batch_cell = (
        "rs = batch(*[llm.chat.spec('q%d' % i) for i in range(5)])\nprint([r.value for r in rs])"
    )
    agent.fake = fake_provider(
        [
            {"cells": ["chat.post('half way')\nprint(llm.chat('Say hi'))"]},
            {"text": "hi from classify"},
            {"expect": {"last_user_contains": "hi from classify"}, "cells": [batch_cell]},
            *[{"text": "b"} for _ in range(5)],
            {"expect": {"last_user_contains": "'b', 'b', 'b', 'b', 'b'"}, "text": "All done."},
        ],
        expect_key=canary,
    )
    agent.tier = {
        "provider": "fake",
        "model": "claude-sonnet-4-5",
        "base_url": agent.fake.base_url,
        "api_key_ref": "env:JA_TEST_CANARY_KEY",
    }
    chat = agent.new_chat()
    turn = await agent.ask(chat, "use your apps")
    assert final_text(turn) == "All done."
    assert turn.llm.model_calls == 3 + 1 + 5  # the loop's calls and the cells' llm.chat calls
    bubbles = [e["text"] for e in agent.events.since(chat, 0) if e["type"] == "bubble"]
    assert "half way" in bubbles
    trace = agent.trace(turn.run_id)
    cell_seqs = [ln.seq for ln in trace.lines if ln.phase == "intent" and ln.name == "cell.run"]
    app_calls = [ln for ln in trace.lines if ln.phase == "intent" and ln.name == "app.call"]
    assert [(a.data["app"], a.data["method"]) for a in app_calls] == [
        ("chat", "post"),
        ("llm", "chat"),
    ] + [("llm", "chat")] * 5
    assert {a.parent for a in app_calls[:2]} == {cell_seqs[0]}
    assert {a.parent for a in app_calls[2:]} == {cell_seqs[1]}
    nested_posts = [
        ln for ln in trace.lines if ln.phase == "intent" and ln.name == "http.post" and ln.parent
    ]
    assert {p.parent for p in nested_posts} <= {a.seq for a in app_calls}
    assert len(nested_posts) == 6
    cell = effect_results(agent, turn.run_id, "cell.run")[1]
    assert len({c["batch"] for c in cell["app_calls"]}) == 1  # one round trip
    log_text = agent.manager.log_path(turn.run_id).read_text()
    assert canary not in log_text
    assert canary not in (agent.root / "agent.sqlite").read_bytes().decode("latin-1")
    assert all(r.headers.get("x-api-key") == canary for r in agent.fake.requests)
    assert_replays(agent, turn)


async def test_bash_tool_binds_sh_last_for_the_next_cell(agent: Harness) -> None:
    agent.fake.load(
        [
            {"bash": ["echo hi-from-bash"]},
            {
                "expect": {"last_user_contains": "hi-from-bash"},
                "cells": ["print(sh.last.stdout.strip().upper())"],
            },
            {"expect": {"last_user_contains": "HI-FROM-BASH"}, "text": "ok"},
        ]
    )
    chat = agent.new_chat()
    turn = await agent.ask(chat, "shell")
    assert final_text(turn) == "ok"
    assert turn.llm.cells == 2
    kinds = [e["kind"] for e in agent.events.since(chat, 0) if e["type"] == "cell_start"]
    assert kinds == ["bash", "python"]
    assert_replays(agent, turn)


async def test_a_malformed_fenced_reply_is_shown_to_the_model(agent: Harness) -> None:
    from tests.runtime.harness import MODEL

    agent.profiles = {MODEL: {"tool_mode": "fenced"}}
    agent.fake.load(
        [
            {"text": "Let me run:\n```python\nprint(1)\n", "stop": "done"},
            {"expect": {"last_user_contains": "never closed"}, "text": "Sorry: no code this time."},
        ]
    )
    turn = await agent.ask(agent.new_chat(), "fenced")
    assert final_text(turn) == "Sorry: no code this time."
    assert turn.llm.model_calls == 2
    assert turn.llm.cells == 0
    assert_replays(agent, turn)


async def test_the_kernel_runs_in_the_viewed_notebooks_folder(agent: Harness) -> None:
    (agent.root / "sub").mkdir()
    agent.fake.load(
        [{"cells": ["import os\nprint(os.getcwd())"]}, {"text": "there"}, {"text": "again"}]
    )
    chat = agent.new_chat()
    turn = await agent.ask(chat, "where am I?", view={"path": "sub/nb.ipynb", "cell": 2})
    cell = effect_results(agent, turn.run_id, "cell.run")[0]
    assert cell["prints"][0]["text"].strip() == str(agent.root / "sub")
    assert "sub/nb.ipynb" in json.dumps(agent.fake.requests[0].json["messages"][-1])


def slow_turn_writes(agent: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hold each run between its final reply and its end (its turn write takes 1 s), so
    a message sent then meets a closed run that has not ended: the reserved-run path."""
    original = agent.store.append_turn

    def slow(turn: TurnRecord, **kw: Any) -> Any:
        time.sleep(1.0)
        return original(turn, **kw)

    monkeypatch.setattr(agent.store, "append_turn", slow)


async def test_a_break_of_a_reserved_run_stops_it_holding_its_message(
    agent: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow_turn_writes(agent, monkeypatch)
    agent.fake.load([{"text": "first answer"}, {"text": "never asked"}])
    chat = agent.new_chat()
    first = await agent.manager.send(chat, text="one")
    await agent.wait_event(chat, "reply")
    second = await agent.manager.send(chat, text="two")
    assert agent.manager.active_run_id(chat) == first["run_id"]  # closed, not ended
    assert second["routed"] == "run"
    assert second["run_id"] != first["run_id"]
    # The panel's first Stop is soft: it must still stop the run it names.
    assert await agent.manager.break_run(second["run_id"], hard=False) == "breaking"
    await agent.finish(first["run_id"])
    turn2 = await agent.finish(second["run_id"])
    assert turn2.user_text == "two"
    assert turn2.llm.stop_reason == "break_hard"
    assert len(agent.fake.requests) == 1


async def test_stopping_a_chat_stops_the_run_reserved_after_its_run(
    agent: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    slow_turn_writes(agent, monkeypatch)
    agent.fake.load([{"text": "first answer"}, {"text": "never asked"}])
    chat = agent.new_chat()
    first = await agent.manager.send(chat, text="one")
    await agent.wait_event(chat, "reply")
    second = await agent.manager.send(chat, text="two")
    assert agent.manager.active_run_id(chat) == first["run_id"]  # closed, not ended
    assert second["run_id"] != first["run_id"]
    await asyncio.wait_for(agent.manager.stop_chat(chat), 30)
    assert agent.manager.active_run_id(chat) is None
    turns = {t.run_id: t for t in agent.store.list_turns(chat)}
    assert turns[second["run_id"]].llm.stop_reason == "break_hard"
    assert turns[second["run_id"]].user_text == "two"
    assert first["run_id"] in turns
    assert len(agent.fake.requests) == 1
