"""``show_run``: a run's log as steps, effects and its turn, bounded unless ``full``."""

from __future__ import annotations

import json

from jupyter_agent.core.digest.cells import BashResult, Value
from jupyter_agent.effects import Effect
from jupyter_agent.trace.log import PROGRAM, read_log
from jupyter_agent.trace.show import CUT_MARK, MAX_ITEMS, MAX_STRING, bound, show_run
from tests.trace.logs_support import (
    LogWriter,
    anthropic_request,
    fixture,
    reply,
    simple_cell,
    write_stats_run,
)
from tests.trace.test_notebook import write_full_run


def test_steps_of_a_full_run(tmp_path):
    path = tmp_path / "run.jsonl"
    _, turn, seqs = write_full_run(path)
    body = show_run(read_log(path))
    assert json.loads(json.dumps(body)) == body
    assert body["run_id"] == "run_01NB"
    assert body["chat_id"] == "chat_01NB"
    assert body["program"] == PROGRAM
    assert body["turn"] == turn.to_json()  # from the log's turn.append
    types = [s["type"] for s in body["steps"]]
    assert [t for t in types if t not in ("model_call",)] == [
        "user",
        "bubble",
        "cell",
        "cell",
        "cell",
        "bash",
        "cell",
        "steering",
        "reply",
    ]
    cells = [s for s in body["steps"] if s["type"] == "cell"]
    c1 = cells[0]
    assert c1["cell_id"] == "c1"
    assert c1["seq"] == seqs["c1"]
    assert c1["status"] == "ok"
    assert c1["code"].startswith("x = 21")
    assert "Cell c1" in c1["digest"]
    # The cell's nbformat outputs, as its cell_end event carried them.
    assert c1["outputs"][0]["output_type"] == "stream"
    assert c1["outputs"][0]["name"] == "stdout"
    assert c1["outputs"][1]["output_type"] == "execute_result"
    assert sorted(c1["outputs"][1]["data"]) == ["text/plain"]
    c2 = cells[1]
    assert sorted(c2["outputs"][0]["data"]) == ["image/png", "text/plain"]
    full_c2 = [s for s in show_run(read_log(path), full=True)["steps"] if s["type"] == "cell"][1]
    png = full_c2["outputs"][0]["data"]["image/png"]
    assert png.startswith("iVBOR")  # the whole image with full=1, cut (marked) without
    assert c2["outputs"][0]["data"]["image/png"] == bound(png)
    c3 = cells[2]
    assert c3["app_calls"] == 1
    assert c3["seqs"] == [seqs["c3"], seqs["app"], seqs["inner_cfg"], seqs["inner_http"]]
    c5 = cells[3]
    assert c5["failed"] is True
    assert [(o["output_type"], o["ename"], o["evalue"]) for o in c5["outputs"]] == [
        ("error", "ZeroDivisionError", "division by zero")
    ]
    assert c5["end_status"] == "error"
    assert c1["end_status"] == "ok"
    bash = next(s for s in body["steps"] if s["type"] == "bash")
    assert bash["cell_id"] == "c4"
    assert bash["returncode"] == 0
    assert bash["stdout"] == "1\nx\n"
    assert bash["digest"].startswith("$ ")
    reply_step = body["steps"][-1]
    assert reply_step["text"] == "Done: **squares** plotted."


def test_effects_pair_intents_and_results(tmp_path):
    path = tmp_path / "run.jsonl"
    _, _, seqs = write_full_run(path)
    body = show_run(read_log(path))
    effects = body["effects"]
    assert [e["seq"] for e in effects] == list(range(1, len(effects) + 1))
    app = effects[seqs["app"] - 1]
    assert app["name"] == "app.call"
    assert app["parent"] == seqs["c3"]
    assert app["intent"] == {"app": "llm", "method": "chat", "args": {}}
    assert app["result"] == {"value": "a summary"}
    assert app["error"] is None
    assert app["t_intent"] <= app["t_result"]


def test_given_turn_wins_over_the_log(tmp_path):
    path = tmp_path / "run.jsonl"
    write_full_run(path)
    body = show_run(read_log(path), {"id": "turn_db", "canary": 1})
    assert body["turn"] == {"id": "turn_db", "canary": 1}


def test_failed_cancelled_and_unfinished_effects(tmp_path):
    path = tmp_path / "run.jsonl"
    seqs = write_stats_run(path)
    w_path = tmp_path / "crash.jsonl"
    w = LogWriter(w_path)
    w.opening()
    w.effect("http.post", anthropic_request(), reply(fixture("anthropic_tool_use.json")))
    w.log.intent(Effect(name="cell.run", data={"cell_id": "c1", "code": "while 1: pass"}))
    w.close()
    body = show_run(read_log(path))
    calls = {s["seq"]: s for s in body["steps"] if s["type"] == "model_call"}
    assert calls[seqs["failed"]]["status"] == "failed"
    assert calls[seqs["failed"]]["attempts"] == 3  # from the recorded error's attempts list
    assert calls[seqs["after"]]["attempts"] == 2
    assert calls[seqs["cancelled"]]["status"] == "cancelled"
    failed = body["effects"][seqs["failed"] - 1]
    assert failed["error"]["status"] == 529
    crashed = show_run(read_log(w_path))
    cell = crashed["steps"][-1]
    assert (cell["type"], cell["status"], cell["digest"], cell["outputs"]) == (
        "cell",
        "unfinished",
        None,
        [],
    )
    assert crashed["effects"][-1]["result"] is None
    assert crashed["effects"][-1]["t_result"] is None
    assert crashed["turn"] is None


def test_large_fields_are_cut_with_a_marker_unless_full(tmp_path):
    path = tmp_path / "run.jsonl"
    w = LogWriter(path)
    w.opening()
    history = [{"role": "user", "content": f"m{i}"} for i in range(MAX_ITEMS + 7)]
    request = {**anthropic_request(), "json": {"messages": history}}
    w.effect("http.post", request, reply(fixture("anthropic_tool_use.json")))
    big = "x" * (MAX_STRING + 123)
    w.cell("c1", "print('x' * 5000)", simple_cell("c1", big))
    bash = BashResult(
        command="yes | head", stdout=Value(text=big), stderr=Value(text=""), returncode=0
    )
    w.effect("bash.run", {"command": "yes | head", "timeout_s": 10}, bash.to_json())
    w.close()
    trace = read_log(path)
    cut = show_run(trace)
    http = next(e for e in cut["effects"] if e["name"] == "http.post")
    messages = http["intent"]["json"]["messages"]
    assert len(messages) == MAX_ITEMS + 1
    assert messages[-1] == f"{CUT_MARK}7 more items]"
    cell = next(s for s in cut["steps"] if s["type"] == "cell")
    assert cell["outputs"][0]["text"].endswith(f"{CUT_MARK}123 more chars]")
    assert len(json.dumps(cut)) < len(json.dumps(show_run(trace, full=True)))
    full = show_run(trace, full=True)
    http_full = next(e for e in full["effects"] if e["name"] == "http.post")
    assert len(http_full["intent"]["json"]["messages"]) == MAX_ITEMS + 7
    bash_full = next(s for s in full["steps"] if s["type"] == "bash")
    assert bash_full["stdout"] == big


def test_bound_depth_and_scalars():
    deep: object = 1
    for _ in range(30):
        deep = [deep]
    out = json.dumps(bound(deep))
    assert "deeper data" in out
    assert bound({"a": 1, "b": None, "c": 2.5, "d": True}) == {
        "a": 1,
        "b": None,
        "c": 2.5,
        "d": True,
    }
    assert bound("short") == "short"


def test_steps_carry_ids_the_recorded_digest_and_where_steering_was_taken(tmp_path):
    path = tmp_path / "run.jsonl"
    w = LogWriter(path)
    w.opening()
    cell = simple_cell("c1").to_json()
    cell["digest"] = {"text": "the digest the model read", "is_error": False}
    w.effect("cell.run", {"cell_id": "c1", "code": "print(42)", "timeout_s": 120}, cell)
    steer = {"kind": "message", "text": "and plot it", "at": "t2", "id": "msg_2"}
    # A final reply the host held back for mail: no reply step, the message instead.
    w.effect("chat.post", {"text": "42", "done": True}, {"deferred": [steer]})
    w.effect("chat.post", {"text": "42", "done": False}, "msg_b")
    w.effect("chat.post", {"text": "Plotted.", "done": True}, "msg_r")
    w.close()
    steps = show_run(read_log(path))["steps"]
    assert [s["type"] for s in steps] == ["user", "cell", "steering", "bubble", "reply"]
    assert steps[1]["digest"] == "the digest the model read"  # recorded, not rebuilt
    assert steps[1]["end_status"] == "ok"
    assert (steps[2]["message_id"], steps[2]["text"]) == ("msg_2", "and plot it")
    assert (steps[3]["message_id"], steps[4]["message_id"]) == ("msg_b", "msg_r")
