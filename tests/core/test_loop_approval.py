"""``toolcaller@v5``: approvals, notices and the view header, driven by hand (no I/O).

Each test answers the effects a host would. The approval path of a cell is ``clock.now``
(the wall time left), ``id.new {kind: approval}``, ``approval.wait`` and then, approved,
``cell.run``; v1..v4 never wait whatever the policy.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from jupyter_agent.core.digest.cells import BashResult, Value
from jupyter_agent.core.history.answer import HistoryWindow
from jupyter_agent.core.loop.approval import (
    BREAK_REFUSAL,
    REFUSAL,
    TIMEOUT_REFUSAL,
    Approvals,
    Decision,
    needs_wait,
    summary_of,
)
from jupyter_agent.core.loop.machine import Turn, end, program, setup, step
from jupyter_agent.core.turns import TurnRecord
from tests.core.test_loop_step import NOW, TIER, Stepper, reply, text

LATER = "2026-01-01T00:01:40.000Z"  # 100 s after NOW
LAYOUT = {"chunk_turns": 10, "l2_chunks": 5}
OFF = {"categories": [], "recall": {"enabled": False, "k": 5, "budget_tokens": 0, "threshold": 1}}
HELLO = {"kind": "message", "text": "hi", "at": NOW}


def call(code: str, *, id_: str = "t1", writes: bool | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"code": code}
    if writes is not None:
        args["writes"] = writes
    return {"type": "tool_use", "id": id_, "name": "run_cell", "input": args}


def bash(command: str, *, id_: str = "b1") -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": "bash", "input": {"command": command}}


def open_turn(
    policy: str | None = "every_cell",
    *,
    version: int = 5,
    drained: list[Any] | None = None,
    max_wall_s: float = 900,
) -> tuple[Turn, list[dict[str, Any]]]:
    """Set a turn up (v3+ setup answered by hand); returns it and the drains' intents."""
    ceilings: dict[str, Any] = {"max_wall_s": max_wall_s}
    if policy is not None:
        ceilings["approval"] = policy
    s = Stepper(setup("run_1", "chat_1", version=version))
    s.answer("clock.now", NOW)
    s.answer("config.get", ceilings)
    s.answer("config.get", {})  # spaces
    s.answer("config.get", TIER)
    s.answer("config.get", None)  # profile
    s.answer("config.get", HistoryWindow(turns=(), layout=LAYOUT, anchor=0).to_json())
    drain = s.answer("mailbox.drain", drained if drained is not None else [HELLO])
    if version >= 4:
        s.answer("config.get", OFF)  # memory, recall off: no search
    assert s.returned, s.effect
    assert isinstance(s.value, Turn)
    return s.value, [dict(drain.data)]


def model_says(turn: Turn, *content: dict[str, Any]) -> Stepper:
    s = Stepper(step(turn, drain_first=False))
    s.answer("clock.now", NOW)
    s.answer("http.post", reply(*content, stop="tool_use"))
    return s


def waits(s: Stepper, answer: dict[str, Any], *, now: str = LATER) -> dict[str, Any]:
    """Answer the approval path up to the wait; returns the wait's intent data."""
    s.answer("clock.now", now)
    assert s.answer("id.new", "appr_1").data == {"kind": "approval"}
    return dict(s.answer("approval.wait", answer).data)


def request(turn: Turn) -> dict[str, Any]:
    """The next model call's request body (Anthropic's wire)."""
    s = Stepper(step(turn, drain_first=False))
    s.answer("clock.now", NOW)
    return dict(s.asks("http.post").data["json"])


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    last = body["messages"][-1]["content"]
    return [b for b in last if b["type"] == "tool_result"]


APPROVE = {"approve": True, "rest": False, "by": "person"}
DENY = {"approve": False, "rest": False, "by": "person"}


# --- the pure policy -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "writes", "rest", "expected"),
    [
        ("none", True, False, False),
        ("writes", False, False, False),
        ("writes", True, False, True),
        ("every_cell", False, False, True),
        ("every_cell", True, True, False),
        ("bogus", True, False, False),
    ],
)
def test_which_calls_wait(policy: str, writes: bool, rest: bool, expected: bool) -> None:
    assert needs_wait(policy, writes=writes, rest=rest) is expected


def test_a_decision_reads_strictly_and_rest_needs_an_approval() -> None:
    assert Decision.from_json({"approve": "yes"}).approve is False
    assert Decision.from_json(None) == Decision(approve=False)
    state = Approvals(policy="every_cell")
    state.take(Decision(approve=False, rest=True))
    assert state.needs_wait(writes=False)
    state.take(Decision(approve=True, rest=True))
    assert not state.needs_wait(writes=True)
    assert summary_of("cell", "\n\nimport os\nos.remove('x')\n") == (
        "Run the cell: import os (+1 lines)"
    )
    assert summary_of("bash", "x" * 300).endswith("…")


# --- the loop ----------------------------------------------------------------------------------


def test_every_cell_waits_then_runs_the_approved_cell() -> None:
    turn, drains = open_turn("every_cell")
    assert drains == [{"notices": True}]
    s = model_says(turn, call("print(1)"))
    wait = waits(s, APPROVE)
    assert wait == {
        "approval_id": "appr_1",
        "kind": "cell",
        "code": "print(1)",
        "summary": "Run the cell: print(1)",
        "timeout_s": 800.0,  # the wall time left: 900 s less the 100 s gone
    }
    run = s.answer("cell.run", {"cell_id": "c1", "prints": [{"text": "1"}]})
    assert run.data["code"] == "print(1)"
    assert (s.returned, s.value) == (True, None)
    assert turn.state.cells == 1


def test_a_denied_cell_never_runs_and_the_model_reads_the_refusal() -> None:
    turn, _ = open_turn("every_cell")
    s = model_says(turn, call("rm_everything()"))
    waits(s, DENY)
    assert (s.returned, s.value) == (True, None)  # no cell.run
    assert turn.state.cells == 0
    [result] = tool_results(request(turn))
    assert result["is_error"] is True
    assert result["content"][0]["text"] == REFUSAL


def test_approve_the_rest_skips_every_later_wait_of_the_turn() -> None:
    turn, _ = open_turn("every_cell")
    s = model_says(turn, call("a = 1"), bash("ls", id_="b1"))
    waits(s, {"approve": True, "rest": True, "by": "person"})
    s.answer("cell.run", {"cell_id": "c1"})
    done = BashResult(command="ls", stdout=Value(text="x"), stderr=Value(text=""), returncode=0)
    bash_run = s.answer("bash.run", done.to_json())
    assert bash_run.data["command"] == "ls"
    assert s.returned
    s = model_says(turn, call("b = 2", id_="t2"))
    s.answer("cell.run", {"cell_id": "c3"})  # straight to the cell
    assert s.returned
    assert turn.state.cells == 3


def test_the_writes_policy_waits_only_for_cells_that_say_they_write() -> None:
    turn, _ = open_turn("writes")
    s = model_says(turn, call("x = 1", writes=False), call("open('f', 'w')", id_="t2", writes=True))
    s.answer("cell.run", {"cell_id": "c1"})  # writes=false: no wait
    assert waits(s, APPROVE)["code"] == "open('f', 'w')"
    s.answer("cell.run", {"cell_id": "c2"})
    assert s.returned


def test_v5_tools_take_writes_and_older_versions_never_wait() -> None:
    turn, _ = open_turn("writes")
    tools = {t["name"]: t for t in request(turn)["tools"]}
    assert tools["run_cell"]["input_schema"]["properties"]["writes"]["type"] == "boolean"
    assert tools["bash"]["input_schema"]["properties"]["writes"]["type"] == "boolean"
    old, drains = open_turn("every_cell", version=4)
    assert drains == [{}]  # v4's drains ask for no notices
    assert old.approvals is None
    tools = {t["name"]: t for t in request(old)["tools"]}
    assert "writes" not in tools["run_cell"]["input_schema"]["properties"]
    s = model_says(old, call("print(1)", writes=True))
    s.answer("cell.run", {"cell_id": "c1"})  # no wait in v4
    assert s.returned


def test_a_policy_absent_from_the_config_waits_for_nothing() -> None:
    turn, _ = open_turn(None)
    s = model_says(turn, call("print(1)", writes=True))
    s.answer("cell.run", {"cell_id": "c1"})
    assert s.returned


def test_a_soft_break_during_a_wait_runs_nothing_more_and_ends_at_the_drain() -> None:
    turn, _ = open_turn("every_cell")
    s = model_says(turn, call("a()"), call("b()", id_="t2"))
    waits(s, {"approve": False, "rest": False, "by": "break"})
    assert (s.returned, s.value) == (True, None)  # neither call ran
    assert turn.state.cells == 0
    texts = [r.content[0].text for r in turn.messages[-1].parts]  # type: ignore[union-attr]
    assert texts == [BREAK_REFUSAL, BREAK_REFUSAL]
    s = Stepper(step(turn, drain_first=True))
    s.answer("mailbox.drain", [{"kind": "break", "hard": False, "at": NOW}])
    assert (s.returned, s.value) == (True, "break_soft")


def test_a_hard_break_during_a_wait_ends_the_turn_break_hard() -> None:
    s = Stepper(program("toolcaller@v5", "run_1", "chat_1"))
    answers: dict[str, Any] = {
        "clock.now": NOW,
        "config.get": None,
        "id.new": "appr_1",
        "http.post": reply(call("go()"), stop="tool_use"),
    }
    late = {"kind": "message", "text": "stop!", "at": NOW}
    while s.effect is not None and s.effect.name != "approval.wait":
        name, data = s.effect.name, s.effect.data
        if name == "config.get" and data.get("key") == "ceilings":
            s.send({"approval": "every_cell"})
        elif name == "config.get" and data.get("key") == "llm.tier.codegen":
            s.send(TIER)
        elif name == "config.get" and data.get("key") == "history":
            s.send(HistoryWindow(turns=(), layout=LAYOUT, anchor=0).to_json())
        elif name == "config.get" and data.get("key") == "memory":
            s.send(OFF)
        elif name == "mailbox.drain":
            s.send([HELLO])
        else:
            s.send(answers.get(name))
    s.answer("approval.wait", {"cancelled": "break_hard", "deferred": [late]})
    s.answer("clock.now", NOW)
    s.answer("id.new", "turn_1")
    s.answer("turn.append", {"ok": True})
    assert isinstance(s.value, TurnRecord)
    assert (s.value.llm.stop_reason, s.value.llm.end_cause) == ("break_hard", "break_hard")
    assert [m.text for m in s.value.steering] == ["stop!"]
    assert s.value.llm.cells == 0


def test_a_wait_counts_against_wall_time() -> None:
    turn, _ = open_turn("every_cell", max_wall_s=10)
    s = model_says(turn, call("slow()"))
    wait = waits(s, {"approve": False, "rest": False, "by": "timeout"}, now=NOW)
    assert wait["timeout_s"] == 10.0
    assert s.returned
    # The person never answered: the refusal says so, and the ceiling ends the turn.
    assert TIMEOUT_REFUSAL in str(turn.messages[-1])
    s = Stepper(step(turn, drain_first=True))
    s.answer("mailbox.drain", [])
    s.answer("clock.now", "2026-01-01T00:00:10.000Z")
    assert (s.returned, s.value) == (True, "ceiling:wall_s")
    # With no wall time left the call does not even wait.
    turn, _ = open_turn("every_cell", max_wall_s=10)
    s = model_says(turn, call("more()"))
    s.answer("clock.now", "2026-01-01T00:00:11.000Z")
    assert s.returned
    assert TIMEOUT_REFUSAL in str(turn.messages[-1])


# --- notices and the view ------------------------------------------------------------------


def test_notices_reach_the_model_and_the_turn_in_v5() -> None:
    notice = {"kind": "notice", "text": "Proposal p1 was applied.", "at": NOW, "id": "ntc_1"}
    turn, _ = open_turn("none", drained=[notice, HELLO])
    body = request(turn)
    texts = [b["text"] for b in body["messages"][-1]["content"] if b["type"] == "text"]
    assert texts[0] == "[notice] Proposal p1 was applied."  # before the message it preceded
    assert texts[1].endswith("\nhi")
    assert turn.user_text == "hi"
    assert [m.text for m in turn.state.steering] == ["[notice] Proposal p1 was applied."]
    # A notice mid-run: the next drain's, in the next model call.
    s = Stepper(step(turn, drain_first=True))
    assert s.asks("mailbox.drain").data == {"notices": True}
    s.send([{"kind": "notice", "text": "Proposal p2 was discarded.", "at": NOW}])
    s.answer("clock.now", NOW)
    sent = s.asks("http.post").data["json"]["messages"][-1]
    assert "[notice] Proposal p2 was discarded." in json.dumps(sent)
    assert [m.text for m in turn.state.steering][-1] == "[notice] Proposal p2 was discarded."


def test_a_deferred_final_reply_keeps_its_notices() -> None:
    turn, _ = open_turn("none")
    s = Stepper(end(turn, "break_soft"))
    s.answer("http.post", reply(text("Stopped.")))
    notice = {"kind": "notice", "text": "applied", "at": NOW}
    s.answer("chat.post", {"deferred": [notice]})
    s.answer("chat.post", "msg_2")
    s.answer("clock.now", NOW)
    s.answer("id.new", "turn_1")
    s.answer("turn.append", {"ok": True})
    assert isinstance(s.value, TurnRecord)
    assert [m.text for m in s.value.steering] == ["[notice] applied"]


def test_the_v5_header_names_the_viewed_cell_by_id() -> None:
    view = {"path": "work/a.ipynb", "cell": 3, "cell_id": "9f1c"}
    message = {**HELLO, "view": view}
    turn, _ = open_turn("none", drained=[message])
    head = request(turn)["messages"][-1]["content"][0]["text"].splitlines()[0]
    assert head == (
        f"[sent {NOW}; the person has `work/a.ipynb` open, at cell 3 (id `9f1c`);"
        " notebook.read() shows it]"
    )
    old, _ = open_turn("none", version=4, drained=[message])
    head = request(old)["messages"][-1]["content"][0]["text"].splitlines()[0]
    assert head == f"[sent {NOW}; the person has `work/a.ipynb` open, at cell 3]"
