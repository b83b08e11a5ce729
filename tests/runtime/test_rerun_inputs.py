"""What a rerun is fed from the original's log (``RecordedInputs.of``), over a hand-written
effect log: the set-up answers by key, the drains, recall hits and approvals in order, the
opening message and its view; nested effects and failed results are not inputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jupyter_agent.runtime.loop.rerun import RecordedInputs
from jupyter_agent.trace.reader import read_log

T = "2026-01-01T00:00:00.000Z"


def _log(tmp_path: Path, effects: list[tuple[str, Any, Any, dict[str, Any]]]) -> Path:
    lines: list[dict[str, Any]] = [{"kind": "header", "run_id": "run_1", "chat_id": "chat_1"}]
    for seq, (name, intent, result, extra) in enumerate(effects, 1):
        lines.append({"seq": seq, "phase": "intent", "name": name, "data": intent, "t": T, **extra})
        out = {"seq": seq, "phase": "result", "name": name, "data": result, "t": T}
        if extra.get("error"):
            out["error"] = extra["error"]
        lines.append(out)
    path = tmp_path / "run_1.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_the_inputs_of_a_run(tmp_path: Path) -> None:
    message = {"kind": "message", "id": "m1", "text": "plot it", "view": {"path": "a.ipynb"}}
    steer = {"kind": "message", "id": "m2", "text": "in red"}
    path = _log(
        tmp_path,
        [
            ("config.get", {"key": "start", "tier": "codegen"}, {"history": {"turns": []}}, {}),
            ("mailbox.drain", {}, [message], {}),
            ("recall.search", {"query": "plot it"}, {"hits": [{"id": "h1"}]}, {}),
            ("approval.wait", {"approval_id": "a1", "kind": "cell"}, {"approve": True}, {}),
            ("app.call", {"app": "memory"}, {"ok": 1}, {"parent": 4}),
            ("config.get", {"key": "mcp"}, None, {"error": {"type": "X", "message": "no"}}),
            ("mailbox.drain", {}, [steer], {}),
        ],
    )
    inputs = RecordedInputs.of(read_log(path))
    assert inputs.config == {"start": [{"history": {"turns": []}}]}
    assert inputs.drains == [[message], [steer]]
    assert inputs.recalls == [{"hits": [{"id": "h1"}]}]
    assert inputs.approvals == [(("cell", None), {"approve": True})]
    assert (inputs.text, inputs.view, inputs.opened) == ("plot it", {"path": "a.ipynb"}, True)


def test_a_run_that_took_no_message_has_nothing_to_rerun(tmp_path: Path) -> None:
    path = _log(tmp_path, [("mailbox.drain", {}, [], {})])
    assert not RecordedInputs.of(read_log(path)).opened
