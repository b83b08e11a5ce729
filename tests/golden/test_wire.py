"""The wire does not move: logs and REST JSON written before the codec change read back and
encode to the same bytes, and the old logs still replay identically.

The golden files were written by the hand-written codec (see ``make_golden.py``); every
type that owns a piece of them must decode it and encode it again byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.core.digest.cells import BashResult, CellResult
from jupyter_agent.core.turns import RunSummary, TurnRecord
from jupyter_agent.llm.chat import ADAPTERS, provider_error_from_json
from jupyter_agent.llm.spec import HttpReply, RequestSpec
from jupyter_agent.messages import from_json, to_json
from jupyter_agent.store.repo import Store
from jupyter_agent.trace.verify import verify_run

HERE = Path(__file__).parent
LOGS = sorted(HERE.glob("run_*.jsonl"))
REST = json.loads((HERE / "rest.json").read_text())
MESSAGES = json.loads((HERE / "messages.json").read_text())


def line_bytes(obj: Any) -> str:
    """The effect log's line encoding (trace/log.py)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def reencode(line: dict[str, Any], intents: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """The line with every piece a type owns decoded and encoded again by that type."""
    name, data, phase = line["name"], line["data"], line["phase"]
    out = dict(line)
    if name == "http.post" and phase == "intent":
        out["data"] = RequestSpec.from_intent(data).to_intent()
    elif name == "http.post" and "error" in line:
        error = line["error"]
        out["error"] = {"type": error["type"], **provider_error_from_json(error).to_json()}
    elif name == "http.post" and isinstance(data, dict) and "status" in data:
        out["data"] = HttpReply.from_json(data).to_json()
    elif name == "turn.append" and phase == "intent":
        out["data"] = TurnRecord.from_json(data).to_json()
    elif name == "config.get" and phase == "result" and intents[line["seq"]] == {"key": "history"}:
        out["data"] = [TurnRecord.from_json(t).to_json() for t in data]
    elif name == "cell.run" and phase == "result" and "cancelled" not in data:
        out["data"] = _with_extras(CellResult.from_json(data).to_json(), data)
    elif name == "bash.run" and phase == "result" and "cancelled" not in data:
        out["data"] = _with_extras(BashResult.from_json(data).to_json(), data)
    else:
        return line
    return out


def _with_extras(encoded: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """The driver adds keys after a cell's own (``bubbles``): keep them where they were."""
    return {**encoded, **{k: v for k, v in data.items() if k not in encoded}}


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_log_lines_encode_to_the_same_bytes(path: Path) -> None:
    raw_lines = path.read_text(encoding="utf-8").splitlines()
    intents: dict[int, dict[str, Any]] = {}
    owned = 0  # lines some type decoded and encoded again
    for raw in raw_lines[1:]:
        line = json.loads(raw)
        assert line_bytes(line) == raw  # the golden file is in the log's own encoding
        if line["phase"] == "intent":
            intents[line["seq"]] = line["data"]
        again = reencode(line, intents)
        owned += again is not line
        assert line_bytes(again) == raw, f"{path.name} seq {line['seq']} {line['name']}"
    assert owned >= 4


def test_the_logs_cover_the_wire() -> None:
    text = "".join(p.read_text() for p in LOGS)
    for needle in (
        '"signature"',
        "image/png",
        '"steering":[{',
        '"error":{"type":"Provider',
        '"name":"bash.run"',
        '"name":"app.call"',
        '"cacheRead":900',
        "break_hard",
    ):
        assert needle in text, needle


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_old_logs_replay_identically(path: Path) -> None:
    outcome = verify_run(path)
    assert outcome.identical, outcome.message


def test_rest_json_encodes_to_the_same_bytes() -> None:
    again = {
        "logs": REST["logs"],
        "chat": {
            **{k: v for k, v in REST["chat"].items() if k != "turns"},
            "turns": [TurnRecord.from_json(t).to_json() for t in REST["chat"]["turns"]],
        },
        "turns": [TurnRecord.from_json(t).to_json() for t in REST["turns"]],
        "runs": [RunSummary.from_json(r).to_json() for r in REST["runs"]],
    }
    text = (HERE / "rest.json").read_text(encoding="utf-8")
    assert json.dumps(again, indent=1, ensure_ascii=False) + "\n" == text


def test_the_store_gives_back_the_same_json(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'agent.sqlite'}")
    try:
        chat = REST["chat"]
        store.create_chat(chat_id=chat["id"], title=chat["title"], now=chat["created"])
        for turn in REST["turns"]:
            assert store.append_turn(TurnRecord.from_json(turn))
        for run in REST["runs"]:
            store.upsert_run(RunSummary.from_json(run))
        assert [t.to_json() for t in store.list_turns(chat["id"])] == chat["turns"]
        for turn in REST["turns"]:
            got = store.get_turn_by_run(turn["run_id"])
            assert got is not None
            assert line_bytes(got.to_json()) == line_bytes(turn)
        for run in REST["runs"]:
            summary = store.get_run(run["run_id"])
            assert summary is not None
            assert line_bytes(summary.to_json()) == line_bytes(run)
        page, _ = store.list_runs(limit=10)
        assert sorted(line_bytes(s.to_json()) for s in page) == sorted(
            line_bytes(r) for r in REST["runs"]
        )
    finally:
        store.close()


@pytest.mark.parametrize("group", ["log_replies", "fixture_replies", "samples"])
def test_message_json_encodes_to_the_same_bytes(group: str) -> None:
    for data in MESSAGES[group]:
        if set(data) == {"in", "out", "cacheRead", "cacheWrite", "reasoning"}:
            continue  # a bare Usage: from_json does not decode those (see test_messages)
        assert line_bytes(to_json(from_json(data))) == line_bytes(data)


def test_log_replies_parse_to_the_same_message_json() -> None:
    replies: list[dict[str, Any]] = []
    for path in LOGS:
        wires: dict[int, str] = {}
        for raw in path.read_text().splitlines()[1:]:
            line = json.loads(raw)
            if line["name"] != "http.post":
                continue
            if line["phase"] == "intent":
                wires[line["seq"]] = line["data"]["wire"]
            elif isinstance(line["data"], dict) and line["data"].get("status") == 200:
                provider = "anthropic" if wires[line["seq"]] == "anthropic" else "openai"
                replies.append(to_json(ADAPTERS[provider].parse_reply(line["data"]["json"])))
    assert [line_bytes(r) for r in replies] == [line_bytes(r) for r in MESSAGES["log_replies"]]


def test_the_golden_files_hold_no_path_of_the_machine_that_made_them() -> None:
    # make_golden.py runs in a temp dir and a venv: their paths are replaced by neutral
    # ones (consistently, so the logs still replay), never committed as they were.
    for path in sorted(Path(__file__).parent.glob("*.json*")):
        text = path.read_text(encoding="utf-8")
        for mark in ("/work/", "/root/", "pytest-of-", "/home/"):
            assert mark not in text, (path.name, mark)
