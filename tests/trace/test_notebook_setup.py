"""The export's setup cell: the record of the cells' app calls (replies rebuilt from the
log, fetched copies carried or refused) and cell names; the nbclient tags of cells."""

from __future__ import annotations

import ast
import base64
import hashlib
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_agent.core.digest.cells import CellResult
from jupyter_agent.effects import Effect
from jupyter_agent.trace import notebook_setup
from jupyter_agent.trace.log import read_log
from jupyter_agent.trace.notebook import chat_notebook, run_notebook
from tests.trace.logs_support import LogWriter, simple_cell


def _record(nb: Any, at: int = 0) -> dict[str, Any]:
    """The literal the setup cell hands ``play_recorded``."""
    source = nb.cells[at].source
    call = ast.parse(source).body[-1]
    assert isinstance(call, ast.Expr)
    assert isinstance(call.value, ast.Call)
    record: dict[str, Any] = ast.literal_eval(call.value.args[0])
    return record


def _cell_with_calls(
    w: LogWriter, cell_id: str, code: str, calls: list[tuple[dict[str, Any], Any]], *, done=True
) -> int:
    cell_seq = w.log.intent(Effect(name="cell.run", data={"cell_id": cell_id, "code": code}))
    for data, answer in calls:
        seq = w.log.intent(Effect(name="app.call", data=data, parent=cell_seq))
        if answer is not None:
            w.log.result(seq, "app.call", answer)
    if done:
        w.log.result(cell_seq, "cell.run", simple_cell(cell_id).to_json())
    return cell_seq


def _fetch(name: str) -> dict[str, Any]:
    return {"app": "notebook", "method": "fetch", "args": {"name": name, "path": None}}


def _fetched(name: str, blob: bytes) -> dict[str, Any]:
    digest = hashlib.sha256(blob).hexdigest()
    value = {"name": name, "bytes": len(blob), "sha256": digest, "blob": f"blobs/{digest}.pickle"}
    return {"ok": True, "value": value, "error": None}


def _write_blob(folder: Path, data: bytes) -> None:
    (folder / "blobs").mkdir(exist_ok=True)
    (folder / "blobs" / f"{hashlib.sha256(data).hexdigest()}.pickle").write_bytes(data)


def test_replies_are_rebuilt_from_the_log(tmp_path: Path) -> None:
    w = LogWriter(tmp_path / "run.jsonl")
    w.opening()
    post = {"app": "chat", "method": "post", "args": {"text": "hi"}}
    read = {"app": "notebook", "method": "read", "args": {"path": "a.ipynb"}}
    tool = {"app": "mcp", "method": "fs.list", "args": {}}
    code = "chat.post('hi'); notebook.read('a.ipynb'); mcp.fs.list()"
    _cell_with_calls(
        w,
        "c1",
        code,
        [
            (post, {"ok": True, "value": "msg_1", "error": None}),
            (read, {"ok": False, "value": None, "error": "no such notebook"}),
            (tool, None),  # the run stopped before its answer
        ],
    )
    w.effect("app.call", post, {"ok": True, "value": "x", "error": None})  # no cell's
    w.close()
    nb = run_notebook(read_log(tmp_path / "run.jsonl"))
    nbformat.validate(nb)
    record = _record(nb)
    assert [(c["app"], c["method"]) for c in record["calls"]] == [
        ("chat", "post"),
        ("notebook", "read"),
        ("mcp", "fs.list"),
    ]
    replies = [c["reply"] for c in record["calls"]]
    assert replies[0] == {"ok": True, "value": "msg_1", "error": None, "seq": 9, "mutation": True}
    assert (replies[1]["ok"], replies[1]["error"], replies[1]["mutation"]) == (
        False,
        "no such notebook",
        False,
    )
    assert replies[2]["ok"] is False
    assert "the recorded run has no answer" in replies[2]["error"]
    assert record["cells"] == [{"code": code, "name": "c1"}]


def test_fetched_copies_are_carried_up_to_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small, big = b"small pickle", b"x" * 64
    _write_blob(tmp_path, small)
    _write_blob(tmp_path, big)
    w = LogWriter(tmp_path / "run.jsonl")
    w.opening()
    calls = [
        (_fetch("df"), _fetched("df", small)),
        (_fetch("big"), _fetched("big", big)),
        (_fetch("gone"), _fetched("gone", b"never written")),
    ]
    _cell_with_calls(w, "c1", "df = notebook.fetch('df')", calls)
    w.close()
    monkeypatch.setattr(notebook_setup, "MAX_PAYLOAD_BYTES", 32)
    trace = read_log(tmp_path / "run.jsonl")
    df, over, gone = (c["reply"] for c in _record(run_notebook(trace, blobs_dir=tmp_path))["calls"])
    assert df["ok"] is True
    assert base64.b64decode(df["payload"]) == small
    assert over["ok"] is False
    assert "the copy of big" in over["error"]
    assert "not carried in this export: it is 64 bytes, over the export's 32" in over["error"]
    assert gone["ok"] is False
    assert "not found beside the run's log" in gone["error"]
    # no folder given: nothing is carried
    (df_nowhere, _, _) = (c["reply"] for c in _record(run_notebook(trace))["calls"])
    assert df_nowhere["ok"] is False
    assert "payload" not in df_nowhere


def test_tags_for_nbclient(tmp_path: Path) -> None:
    w = LogWriter(tmp_path / "run.jsonl")
    w.opening()
    w.cell("c1", "x = 1", simple_cell("c1"))
    raised = CellResult.from_json(
        {
            **simple_cell("c2").to_json(),
            "error": {"ename": "ZeroDivisionError", "evalue": "division by zero", "traceback": []},
        }
    )
    w.cell("c2", "1 / 0", raised)
    _cell_with_calls(w, "c3", "while True: pass", [], done=False)
    w.close()
    nb = run_notebook(read_log(tmp_path / "run.jsonl"))
    tags = {c.id: c.metadata.get("tags") for c in nb.cells if c.cell_type == "code"}
    assert tags == {
        "replay-setup": ["raises-exception"],  # another kernel says why and runs on
        "c1": None,
        "c2": ["raises-exception"],
        "c3": ["skip-execution"],
    }
    assert nb.cells[0].metadata["jupyter"] == {"source_hidden": True}


def test_a_chat_has_one_setup_cell_with_every_runs_record(tmp_path: Path) -> None:
    traces = []
    for k in (1, 2):
        w = LogWriter(tmp_path / f"run{k}.jsonl", run_id=f"run_{k}")
        w.opening()
        post = {"app": "chat", "method": "post", "args": {"text": f"turn {k}"}}
        _cell_with_calls(w, "c1", f"chat.post('turn {k}')", [(post, {"ok": True, "value": k})])
        w.close()
        traces.append((read_log(tmp_path / f"run{k}.jsonl"), None))
    nb = chat_notebook(traces, title="Two")
    assert [c.id for c in nb.cells[:2]] == ["title", "replay-setup"]
    assert [c.id for c in nb.cells].count("replay-setup") == 1
    record = _record(nb, at=1)
    assert [c["args"]["text"] for c in record["calls"]] == ["turn 1", "turn 2"]
    assert record["cells"] == [
        {"code": "chat.post('turn 1')", "name": "c1"},
        {"code": "chat.post('turn 2')", "name": "c1"},
    ]
