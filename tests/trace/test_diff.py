"""The diff of two effect logs (pure, ``trace.diff``), over hand-written logs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jupyter_agent.trace.compare.diff import diff_runs, normalised
from jupyter_agent.trace.reader import read_log

T = "2026-01-01T00:00:00.000Z"


def _request(model: str, system: str, user: str) -> dict[str, Any]:
    return {"url": "http://x/v1/messages", "wire": "anthropic", "json": {
        "model": model, "system": system, "messages": [{"role": "user", "content": user}],
    }}  # fmt: skip


def _reply(text: str, msg_id: str) -> dict[str, Any]:
    content = [{"type": "text", "text": text}]
    return {"status": 200, "json": {"id": msg_id, "content": content}, "attempts": [{"wait_s": 1}]}


def _log(tmp_path: Path, name: str, effects: list[tuple[str, Any, Any]], **header: Any) -> Any:
    lines: list[dict[str, Any]] = [{"kind": "header", "run_id": name, "created": T, **header}]
    for seq, (effect, intent, result) in enumerate(effects, 1):
        lines.append({"seq": seq, "phase": "intent", "name": effect, "data": intent, "t": T})
        lines.append({"seq": seq, "phase": "result", "name": effect, "data": result, "t": T})
    path = tmp_path / f"{name}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return read_log(path)


def _turn(tmp_path: Path, name: str, *, model: str = "m1", system: str = "You help.\nBe brief.",
          reply: str = "Hi.", code: str = "print(1)", output: str = "Cell c1 (In[1], 0.01s)\n1",
          sent: str = T, ids: str = "0123456789") -> Any:  # fmt: skip
    return _log(tmp_path, name, [
        ("mailbox.drain", {}, [{"kind": "message", "id": f"msg_{ids}", "text": "hi"}]),
        ("http.post", _request(model, system, f"[sent {sent}]\nhi"), _reply(reply, f"msg_{ids}")),
        ("cell.run", {"code": code}, {"digest": {"text": output}, "duration_s": 0.5}),
        ("turn.append", {"id": f"turn_{ids}", "durationMs": 12,
                         "llm": {"stopReason": "end_turn"}}, {"ok": True}),
    ])  # fmt: skip


def test_ids_times_and_timings_are_not_compared(tmp_path: Path) -> None:
    a = _turn(tmp_path, "a")
    b = _turn(tmp_path, "b", sent="2026-02-03T04:05:06.789Z", ids="ABCDEFGHJK",
              output="Cell c1 (In[1], 2.50s)\n1")  # fmt: skip
    body = diff_runs(a, b)
    assert body["identical"] is True
    assert body["divergence"] is None
    assert body["summary"]["a"]["cells"] == 1
    assert body["summary"]["a"]["stop_reason"] == "end_turn"
    assert normalised({"t": 1, "x": "run_0123456789 at 2026-01-01T00:00:00Z"}) == {
        "x": "<id> at <time>"
    }


def test_another_system_prompt_is_shown_as_a_diff(tmp_path: Path) -> None:
    body = diff_runs(_turn(tmp_path, "a"), _turn(tmp_path, "b", system="You help.\nBe thorough."))
    divergence = body["divergence"]
    assert (divergence["index"], divergence["effect_a"], divergence["part"]) == (
        1,
        "http.post",
        "intent",
    )
    assert "-Be brief." in divergence["system_diff"]
    assert "+Be thorough." in divergence["system_diff"]
    assert divergence["conversation_diff"] == ""
    assert divergence["what"] == "the request differs: system"


def test_another_model_reply_code_and_output(tmp_path: Path) -> None:
    d = diff_runs(_turn(tmp_path, "a"), _turn(tmp_path, "b", model="m2"))["divergence"]
    assert d["model"] == {"a": "m1", "b": "m2"}
    d = diff_runs(_turn(tmp_path, "a"), _turn(tmp_path, "b", reply="Hello."))["divergence"]
    assert (d["part"], d["what"]) == ("result", "the model answered differently")
    assert "+Hello." in d["reply_diff"]
    d = diff_runs(_turn(tmp_path, "a"), _turn(tmp_path, "b", code="print(2)"))["divergence"]
    assert "+print(2)" in d["code_diff"]
    d = diff_runs(_turn(tmp_path, "a"), _turn(tmp_path, "b", output="Cell c1 (In[1], 0.01s)\n2"))[
        "divergence"
    ]
    assert "+2" in d["output_diff"]


def test_a_run_that_ended_early(tmp_path: Path) -> None:
    a = _turn(tmp_path, "a")
    b = _log(
        tmp_path,
        "b",
        [("mailbox.drain", {}, [{"kind": "message", "id": "msg_0123456789", "text": "hi"}])],
    )
    d = diff_runs(a, b)["divergence"]
    assert (d["index"], d["part"], d["effect_b"]) == (1, "effect", None)
    assert d["what"] == "run b ended here; the other went on"


def test_runs_on_other_tiers_part_at_their_first_call(tmp_path: Path) -> None:
    start = ("config.get", {"key": "start"}, {"tier": {"model": "m1"}, "history": None})
    other = ("config.get", {"key": "start"}, {"tier": {"model": "m2"}, "history": None})
    call_1 = ("http.post", _request("m1", "s", "hi"), _reply("x", "msg_0123456789"))
    call_2 = ("http.post", _request("m2", "s", "hi"), _reply("x", "msg_0123456789"))
    a = _log(tmp_path, "a", [start, call_1], tiers={"codegen": {"model": "m1"}})
    b = _log(tmp_path, "b", [other, call_2], tiers={"codegen": {"model": "m2"}})
    body = diff_runs(a, b)
    assert (body["identical"], body["tiers_differ"]) == (False, True)
    assert (body["divergence"]["effect_a"], body["divergence"]["part"]) == ("http.post", "intent")
    assert (body["a"]["model"], body["b"]["model"]) == ("m1", "m2")
