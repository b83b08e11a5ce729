"""Exporting effect logs as notebooks: cells, outputs, ids, metadata, broken runs, re-runs."""

from __future__ import annotations

import ast
import base64
import copy
import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.sign import NotebookNotary

from jupyter_agent.core.digest.cells import (
    AppCallRecord,
    BashResult,
    CellError,
    CellResult,
    LastValue,
    Value,
)
from jupyter_agent.core.digest.render import DigestOptions, digest_cell
from jupyter_agent.core.turns import Reply, Steering, TurnLLM, TurnRecord
from jupyter_agent.effects import Effect
from jupyter_agent.messages import Usage
from jupyter_agent.trace.log import PROGRAM, LogLine, TraceFile, read_log
from jupyter_agent.trace.notebook import (
    KERNELSPEC,
    chat_notebook,
    run_notebook,
    sh_source,
    write_notebook,
)
from tests.trace.logs_support import LogWriter, without_setup

PNG_1x1 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwAD"
    "hgGAWjR9awAAAABJRU5ErkJggg=="
)
HOME = "/home/ada-canary"
ENV = "/opt/env-canary"
TRICKY = 'echo "it\'s" \'a "b"\' \\ $HOME | grep -c \'\\n\'\nprintf \'%s\\n\' """x""" é'
MODEL = "claude-sonnet-4-5"


class Run(LogWriter):
    """Writes a realistic effect log, in the loop's order, one effect at a time."""

    def __init__(self, path: Path, run_id: str = "run_01NB", chat_id: str = "chat_01NB") -> None:
        super().__init__(path, run_id, chat_id)
        self.minute = 0

    def now(self) -> str:
        self.minute += 1
        return f"2025-03-01T10:{self.minute:02d}:00.000Z"

    def opening(self, drain: list[dict[str, Any]]) -> None:
        self.effect("clock.now", {}, self.now())
        ceilings = {"value_budget_tokens": 500, "total_budget_tokens": 2500, "cell_timeout_s": 120}
        self.effect("config.get", {"key": "ceilings"}, ceilings)
        spaces = {"agent_name": "ada", "env_prefix": ENV, "home": HOME}
        self.effect("config.get", {"key": "spaces"}, spaces)
        tier = {"provider": "anthropic", "model": MODEL}
        self.effect("config.get", {"key": "llm.tier.codegen"}, tier)
        self.effect("config.get", {"key": f"llm.profile.{MODEL}"}, None)
        self.effect("config.get", {"key": "history"}, [])
        self.effect("mailbox.drain", {}, drain)

    def model_call(self) -> int:
        self.effect("mailbox.drain", {}, [])
        self.effect("clock.now", {}, self.now())
        request = {"url": "https://api.anthropic.com/v1/messages", "headers": {}, "json": {}}
        return self.effect(
            "http.post", request, {"status": 200, "json": {"content": []}, "attempts": 1}
        )

    def cell(self, cell_id: str, code: str, result: CellResult) -> int:
        data = {"cell_id": cell_id, "code": code, "timeout_s": 120}
        return self.effect("cell.run", data, result.to_json())

    def finish(self, stop: str = "done", cause: str = "done", replies: int = 1) -> TurnRecord:
        ended = self.now()
        self.effect("clock.now", {}, ended)
        turn_id = f"turn_{self.run_id}"
        self.effect("id.new", {"kind": "turn"}, turn_id)
        turn = TurnRecord(
            id=turn_id,
            chat_id=self.chat_id,
            run_id=self.run_id,
            user_text="Plot the squares",
            created="2025-03-01T10:01:00.000Z",
            steering=(Steering(text="also the cubes", at="2025-03-01T10:05:00.000Z"),),
            replies=tuple(Reply(text=f"r{i}", done=True) for i in range(replies)),
            from_agent="ada",
            interrupted=stop in ("break_hard", "error"),
            duration_ms=60000,
            model=MODEL,
            llm=TurnLLM(
                stop_reason=stop,  # type: ignore[arg-type]
                end_cause=cause,  # type: ignore[arg-type]
                model_calls=3,
                cells=5,
                usage=Usage(input_tokens=1200, output_tokens=340, cache_read_tokens=800),
                cost=0.0123,
                fingerprints={"system": "sha256:aaa", "identity": "sha256:bbb"},
            ),
        )
        self.effect("turn.append", turn.to_json(), {"ok": True})
        self.log.close()
        return turn


def _message(text: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "message", "text": text, "at": "2025-03-01T10:00:30.000Z", **extra}


C1 = CellResult(
    cell_id="c1",
    prints=(Value(text=f"42 {HOME}/data.csv\n"),),
    last=LastValue(repr=Value(text="22"), type_name="int"),
    outputs=(
        {"output_type": "stream", "name": "stdout", "text": f"42 {HOME}/data.csv\n"},
        {
            "output_type": "execute_result",
            "execution_count": 1,
            "data": {"text/plain": "22"},
            "metadata": {},
        },
    ),
    execution_count=1,
    duration_s=0.01,
)
C2_DISPLAY = {
    "output_type": "display_data",
    "data": {"image/png": PNG_1x1, "text/plain": "<Figure size 640x480 with 1 Axes>"},
    "metadata": {"image/png": {"width": 1, "height": 1}},
}
C2 = CellResult(
    cell_id="c2",
    displays=({"image/png": PNG_1x1, "text/plain": "<Figure>"},),
    outputs=(C2_DISPLAY,),
    execution_count=2,
)
C3 = CellResult(
    cell_id="c3",
    prints=(Value(text="a summary\n"),),
    outputs=({"output_type": "stream", "name": "stdout", "text": "a summary\n"},),
    execution_count=3,
    app_calls=(AppCallRecord(seq=0, app="llm", method="chat", args={"prompt": "sum"}),),
)
C5_ERROR = {
    "output_type": "error",
    "ename": "ZeroDivisionError",
    "evalue": "division by zero",
    "traceback": ["\x1b[0;31mZeroDivisionError\x1b[0m: division by zero"],
}
C5 = CellResult(
    cell_id="c5",
    error=CellError(
        ename="ZeroDivisionError", evalue="division by zero", traceback=tuple(C5_ERROR["traceback"])
    ),
    outputs=(C5_ERROR,),
    execution_count=5,
)


def write_full_run(path: Path, **ids: str) -> tuple[Run, TurnRecord, dict[str, int]]:
    """A finished run: bubble, 3 python cells (one with nested app calls), bash, error, reply."""
    run = Run(path, **ids)
    attachment = {
        "name": "data.csv",
        "media_type": "text/csv",
        "data": base64.b64encode(b"a,b").decode(),
    }
    view = {"path": "work/analysis.ipynb", "cell": 3, "selection": "df.head()"}
    run.opening([_message("Plot the squares", view=view, attachments=[attachment])])
    seqs: dict[str, int] = {}
    run.effect("clock.now", {}, run.now())
    run.effect(
        "http.post",
        {"url": "u", "headers": {}, "json": {}},
        {"status": 200, "json": {}, "attempts": 1},
    )
    run.effect("chat.post", {"text": "Let me compute.", "done": False}, "msg_1")
    seqs["c1"] = run.cell("c1", "x = 21\nprint(x * 2, '~/data.csv')\nx + 1", C1)
    run.model_call()
    seqs["c2"] = run.cell("c2", "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])", C2)
    run.model_call()
    code3 = 'r = llm.chat("sum")\nprint(r)'
    seqs["c3"] = c3 = run.log.intent(
        Effect(name="cell.run", data={"cell_id": "c3", "code": code3, "timeout_s": 120})
    )
    app = run.log.intent(
        Effect(name="app.call", data={"app": "llm", "method": "chat", "args": {}}, parent=c3)
    )
    inner_cfg = run.effect("config.get", {"key": "llm.tier.classify"}, {"model": "m"}, parent=app)
    inner_http = run.effect(
        "http.post", {"url": "u", "headers": {}, "json": {}}, {"status": 200}, parent=app
    )
    run.log.result(app, "app.call", {"value": "a summary"})
    c3_result = CellResult.from_json(
        {**C3.to_json(), "app_calls": [{**C3.app_calls[0].to_json(), "seq": app}]}
    )
    run.log.result(c3, "cell.run", c3_result.to_json())
    seqs.update(app=app, inner_cfg=inner_cfg, inner_http=inner_http)
    run.model_call()
    bash = BashResult(
        command=TRICKY, stdout=Value(text="1\nx\n"), stderr=Value(text="warn: é\n"), returncode=0
    )
    seqs["bash"] = run.effect("bash.run", {"command": TRICKY, "timeout_s": 120}, bash.to_json())
    run.model_call()
    seqs["c5"] = run.cell("c5", "1 / 0", C5)
    run.effect("mailbox.drain", {}, [_message("also the cubes", at="2025-03-01T10:05:00.000Z")])
    run.effect("clock.now", {}, run.now())
    run.effect(
        "http.post",
        {"url": "u", "headers": {}, "json": {}},
        {"status": 200, "json": {}, "attempts": 2},
    )
    run.effect("chat.post", {"text": "Done: **squares** plotted.", "done": True}, "msg_2")
    turn = run.finish()
    return run, turn, seqs


@pytest.fixture
def full_run(tmp_path: Path) -> tuple[Path, TurnRecord, dict[str, int]]:
    path = tmp_path / "run_01NB.jsonl"
    _, turn, seqs = write_full_run(path)
    return path, turn, seqs


def _by_id(nb: Any) -> dict[str, Any]:
    return {cell.id: cell for cell in nb.cells}


def _agent(cell: Any) -> dict[str, Any]:
    meta: dict[str, Any] = cell.metadata["jupyter_agent"]
    return meta


def test_valid_notebook_with_cells_in_run_order(full_run):
    path, _, _ = full_run
    nb = without_setup(run_notebook(read_log(path)))
    nbformat.validate(nb)
    assert nb.nbformat == 4
    assert [(c.id, c.cell_type) for c in nb.cells] == [
        ("md1", "markdown"),  # the user's message
        ("md2", "markdown"),  # the progress bubble
        ("c1", "code"),
        ("c2", "code"),
        ("c3", "code"),
        ("c4", "code"),  # bash: the next c<n> of the run's counter
        ("c5", "code"),
        ("c5-md1", "markdown"),  # steering
        ("c5-md2", "markdown"),  # the final reply
    ]
    kinds = [_agent(c)["kind"] for c in nb.cells]
    assert kinds == [
        "user",
        "bubble",
        "python",
        "python",
        "python",
        "bash",
        "python",
        "steering",
        "reply",
    ]
    # The round trip through nbformat's own writer and reader keeps everything.
    again = nbformat.reads(nbformat.writes(nb), as_version=4)
    assert again == nb


def test_user_message_markdown(full_run):
    nb = without_setup(run_notebook(read_log(full_run[0])))
    user = nb.cells[0].source
    assert "**User** · 2025-03-01T10:00:30.000Z" in user
    assert "`work/analysis.ipynb`" in user
    assert "cell `3`" in user
    assert "`df.head()`" in user
    assert "Attachments: `data.csv`" in user
    assert user.endswith("Plot the squares")
    assert "YSxi" not in user  # the attachment's bytes are not copied
    assert "Let me compute." in nb.cells[1].source
    assert "**ada**" in nb.cells[1].source
    steering = _by_id(nb)["c5-md1"].source
    assert steering.startswith("**User (mid-run)** · 2025-03-01T10:05:00.000Z")
    assert steering.endswith("also the cubes")
    assert _by_id(nb)["c5-md2"].source.endswith("Done: **squares** plotted.")


def test_outputs_are_the_recorded_ones(full_run):
    cells = _by_id(run_notebook(read_log(full_run[0])))
    assert [dict(o) for o in cells["c1"].outputs] == [json.loads(json.dumps(o)) for o in C1.outputs]
    # Outputs are kept as recorded: the home path is not rewritten there ...
    assert cells["c1"].outputs[0].text == f"42 {HOME}/data.csv\n"
    assert cells["c1"].execution_count == 1
    assert cells["c2"].outputs == [C2_DISPLAY]
    assert cells["c2"].outputs[0].data["image/png"] == PNG_1x1
    assert cells["c5"].outputs == [C5_ERROR]
    assert cells["c5"].execution_count == 5
    assert cells["c3"].outputs == [
        {"output_type": "stream", "name": "stdout", "text": "a summary\n"}
    ]
    assert cells["c4"].outputs == [
        {"output_type": "stream", "name": "stdout", "text": "1\nx\n"},
        {"output_type": "stream", "name": "stderr", "text": "warn: é\n"},
    ]
    assert cells["c4"].execution_count is None


def test_digest_is_the_one_the_model_saw(full_run):
    cells = _by_id(run_notebook(read_log(full_run[0])))
    options = DigestOptions(
        value_budget_tokens=500, total_budget_tokens=2500, env_prefix=ENV, home=HOME, vision=True
    )
    assert _agent(cells["c1"])["digest"] == digest_cell(C1, options).text
    # ... but the digest shows it as ~ (DESIGN: paths in digests only).
    assert "~/data.csv" in _agent(cells["c1"])["digest"]
    assert HOME not in _agent(cells["c1"])["digest"]
    assert "ZeroDivisionError" in _agent(cells["c5"])["digest"]
    assert _agent(cells["c4"])["digest"].startswith("$ echo")


def test_bash_source_round_trips_tricky_quoting(full_run):
    cell = _by_id(run_notebook(read_log(full_run[0])))["c4"]
    call = ast.parse(cell.source, mode="eval").body
    assert isinstance(call, ast.Call)
    assert isinstance(call.func, ast.Name)
    assert call.func.id == "sh"
    assert ast.literal_eval(call.args[0]) == TRICKY
    assert [(k.arg, ast.literal_eval(k.value)) for k in call.keywords] == [("timeout", 120)]


@pytest.mark.parametrize(
    "command",
    [
        'echo "a"',
        "echo 'a'",
        "a\\b\\\\c",
        "x = \"\"\"; '''",
        "line1\nline2\r\n\t",
        "naïve ✓ \x00 \udcff",
    ],
)
def test_sh_source_literal(command):
    source = sh_source(command, 2.5)
    call = ast.parse(source, mode="eval").body
    assert isinstance(call, ast.Call)
    assert ast.literal_eval(call.args[0]) == command
    assert ast.literal_eval(call.keywords[0].value) == 2.5
    assert sh_source(command) == f"sh({command!r})"


def test_deterministic_flags_and_seqs(full_run):
    _, _, seqs = full_run
    cells = _by_id(without_setup(run_notebook(read_log(full_run[0]))))
    flags = {cid: _agent(cells[cid])["deterministic"] for cid in ("c1", "c2", "c3", "c4", "c5")}
    assert flags == {"c1": True, "c2": True, "c3": False, "c4": False, "c5": True}
    assert _agent(cells["c3"])["seqs"] == [
        seqs["c3"],
        seqs["app"],
        seqs["inner_cfg"],
        seqs["inner_http"],
    ]
    assert _agent(cells["c1"])["seqs"] == [seqs["c1"]]
    assert _agent(cells["c4"])["seqs"] == [seqs["bash"]]
    assert _agent(cells["c4"])["cell_id"] == "c4"
    assert _agent(cells["c4"])["returncode"] == 0
    assert all(_agent(c)["run_id"] == "run_01NB" for c in cells.values())


def test_notebook_metadata_from_log_and_from_given_turn(full_run):
    path, turn, _ = full_run
    nb = run_notebook(read_log(path))
    assert nb.metadata.kernelspec == KERNELSPEC
    assert nb.metadata.language_info.name == "python"
    meta = nb.metadata.jupyter_agent
    assert meta == {
        "run_id": "run_01NB",
        "chat_id": "chat_01NB",
        "program": PROGRAM,
        "model": MODEL,
        "turn_id": turn.id,
        "created": turn.created,
        "stopReason": "done",
        "endCause": "done",
        "usage": {"in": 1200, "out": 340, "cacheRead": 800, "cacheWrite": 0, "reasoning": 0},
        "cost": 0.0123,
        "fingerprints": {"system": "sha256:aaa", "identity": "sha256:bbb"},
    }
    stored = TurnRecord.from_json({**turn.to_json(), "llm": {**turn.llm.to_json(), "cost": 0.5}})
    assert run_notebook(read_log(path), turn=stored).metadata.jupyter_agent.cost == 0.5


def test_write_notebook_validates_and_does_not_sign(full_run, tmp_path):
    nb = run_notebook(read_log(full_run[0]))
    target = tmp_path / "out.ipynb"
    write_notebook(nb, target)
    back = nbformat.read(target, as_version=4)
    assert back == nb
    (tmp_path / "notary").mkdir()
    notary = NotebookNotary(data_dir=str(tmp_path / "notary"), db_file=":memory:")
    assert not notary.check_signature(back)
    assert "signature" not in back.metadata
    bad = copy.deepcopy(nb)
    bad.cells[2].id = "no spaces allowed"
    with pytest.raises(nbformat.ValidationError):
        write_notebook(bad, tmp_path / "bad.ipynb")
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix in (".ipynb", ".tmp")) == [
        "out.ipynb"
    ]


def test_whole_chat_notebook(tmp_path):
    _, t1, _ = write_full_run(tmp_path / "a.jsonl", run_id="run_A", chat_id="chat_X")
    write_full_run(tmp_path / "b.jsonl", run_id="run_B", chat_id="chat_X")
    nb = chat_notebook(
        [(read_log(tmp_path / "a.jsonl"), t1), (read_log(tmp_path / "b.jsonl"), None)],
        title="Squares",
    )
    nbformat.validate(nb)
    without_setup(nb, at=1)  # after the title cell
    ids = [c.id for c in nb.cells]
    assert len(ids) == len(set(ids))
    assert ids[:4] == ["title", "t1-md1", "t1-md2", "t1-c1"]
    assert "t2-c1" in ids
    assert "t2-c4" in ids
    assert "t2-c5-md2" in ids
    assert ids.index("t1-c5-md2") < ids.index("t2-md1")
    cells = _by_id(nb)
    assert _agent(cells["t2-c1"])["cell_id"] == "c1"
    assert _agent(cells["t2-c1"])["run_id"] == "run_B"
    meta = nb.metadata.jupyter_agent
    assert meta.chat_id == "chat_X"
    assert meta.title == "Squares"
    assert [r["run_id"] for r in meta.runs] == ["run_A", "run_B"]
    assert nb.metadata.kernelspec.name == "jupyter-agent"


def test_crashed_run_exports_what_there_is(tmp_path):
    path = tmp_path / "crash.jsonl"
    run = Run(path)
    run.opening([_message("go")])
    run.model_call()
    run.cell("c1", "x = 1\nx", CellResult(cell_id="c1", outputs=(), execution_count=1))
    seq = run.log.intent(
        Effect(
            name="cell.run", data={"cell_id": "c2", "code": "while True: pass", "timeout_s": 120}
        )
    )
    run.log.close()
    # The crash cut the next line in half.
    with open(path, "ab") as fh:
        fh.write(b'{"seq": %d, "phase": "result", "na' % seq)
    trace = read_log(path)
    assert trace.truncated
    nb = without_setup(run_notebook(trace))
    nbformat.validate(nb)
    assert [c.id for c in nb.cells] == ["md1", "c1", "c2", "c2-md1", "c2-md2", "c2-md3"]
    assert nb.cells[2].source == "while True: pass"
    assert nb.cells[2].outputs == []
    assert _agent(nb.cells[2])["status"] == "unfinished"
    assert _agent(nb.cells[2])["deterministic"] is False
    assert "no result was recorded" in nb.cells[3].source
    assert "cut short" in nb.cells[4].source
    assert f"#{seq} (cell.run)" in nb.cells[5].source
    assert "no turn record" in nb.cells[5].source
    meta = nb.metadata.jupyter_agent
    assert meta.run_id == "run_01NB"
    assert meta.model == MODEL
    assert meta.stopReason is None
    assert meta.usage is None
    assert meta.cost is None


def test_hard_broken_run_has_notes(tmp_path):
    path = tmp_path / "hard.jsonl"
    run = Run(path)
    run.opening([_message("go")])
    run.model_call()
    seq = run.effect(
        "cell.run",
        {"cell_id": "c1", "code": "import time; time.sleep(99)", "timeout_s": 120},
        {"cancelled": "break_hard"},
    )
    run.finish(stop="break_hard", cause="break_hard", replies=0)
    nb = without_setup(run_notebook(read_log(path)))
    nbformat.validate(nb)
    assert [c.id for c in nb.cells] == ["md1", "c1", "c1-md1", "c1-md2"]
    assert nb.cells[1].outputs == []
    assert _agent(nb.cells[1])["status"] == "cancelled"
    assert f"hard stop cancelled this cell while it ran (#{seq})" in nb.cells[2].source
    assert "stopped by a hard stop" in nb.cells[3].source
    assert nb.metadata.jupyter_agent.stopReason == "break_hard"


def test_wrapup_and_failed_effects_get_notes(tmp_path):
    path = tmp_path / "wrap.jsonl"
    run = Run(path)
    run.opening([_message("go")])
    run.model_call()
    run.effect(
        "cell.run",
        {"cell_id": "c1", "code": "1", "timeout_s": 120},
        None,
        error={"type": "KernelDied", "message": "the kernel died"},
    )
    run.effect("bash.run", {"command": "ls", "timeout_s": 5}, {"not": "a bash result"})
    run.effect("chat.post", {"text": "Summary so far.", "done": True}, "m")
    run.finish(stop="wrapup", cause="ceiling:cells")
    nb = without_setup(run_notebook(read_log(path)))
    nbformat.validate(nb)
    sources = [c.source for c in nb.cells]
    assert "could not run (#" in sources[2]
    assert "the kernel died" in sources[2]
    assert nb.cells[3].source == "sh('ls', timeout=5)"
    assert _agent(nb.cells[3])["status"] == "unreadable"
    assert "could not be read" in sources[4]
    assert "wrapped up early" in sources[-1]
    assert "ceiling:cells" in sources[-1]


def test_unknown_effects_and_odd_outputs_are_tolerated(tmp_path):
    path = tmp_path / "odd.jsonl"
    run = Run(path)
    run.opening([_message("go"), {"kind": "future-thing"}, _message("and more")])
    odd = CellResult(
        cell_id="c1",
        outputs=(
            {"output_type": "bogus"},
            {"output_type": "stream", "name": "stdout", "text": "ok\n"},
        ),
    )
    run.cell("c1", "print('ok')", odd)
    run.finish()
    trace = read_log(path)
    extra = LogLine(
        seq=999, phase="intent", name="future.effect", data={"x": 1}, t="2025-01-01T00:00:00Z"
    )
    trace = TraceFile(header=trace.header, lines=[*trace.lines, extra])
    nb = without_setup(run_notebook(trace))
    nbformat.validate(nb)
    assert [_agent(c)["kind"] for c in nb.cells] == ["user", "steering", "python"]
    assert nb.cells[2].outputs[0].name == "stderr"
    assert "bogus" in nb.cells[2].outputs[0].text
    assert nb.cells[2].outputs[1].text == "ok\n"


# --- re-running an exported notebook --------------------------------------------------

EXEC_CELLS = [
    ("c1", "x = 21\nprint(x * 2)", ["42\n"], None),
    ("c2", "x + 1", [], "22"),
    ("c3", "for i in range(3):\n    print(i, i ** 2)\n'done'", ["0 0\n1 1\n2 4\n"], "'done'"),
]


def _exec_log(path: Path) -> None:
    run = Run(path)
    run.opening([_message("compute")])
    for n, (cid, code, streams, last) in enumerate(EXEC_CELLS, start=1):
        run.model_call()
        outputs: list[dict[str, Any]] = [
            {"output_type": "stream", "name": "stdout", "text": s} for s in streams
        ]
        if last is not None:
            outputs.append(
                {
                    "output_type": "execute_result",
                    "execution_count": n,
                    "data": {"text/plain": last},
                    "metadata": {},
                }
            )
        run.cell(cid, code, CellResult(cell_id=cid, outputs=tuple(outputs), execution_count=n))
    run.model_call()
    run.effect("chat.post", {"text": "x is 21", "done": True}, "m")
    run.finish()


def _texts(outputs: Any) -> list[tuple[str, str]]:
    """What a re-run must reproduce: stream texts (joined per name) and text/plain results."""
    out: list[tuple[str, str]] = []
    for o in outputs:
        if o.output_type == "stream":
            text = o.text if isinstance(o.text, str) else "".join(o.text)
            if out and out[-1][0] == o.name:
                out[-1] = (o.name, out[-1][1] + text)
            else:
                out.append((o.name, text))
        elif o.output_type == "execute_result":
            out.append(("result", o.data["text/plain"]))
    return out


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kernel", ["jupyter-agent", "python3"])
def test_exported_notebook_reruns_to_the_recorded_outputs(tmp_path, request, kernel):
    from nbclient import NotebookClient

    if kernel == "jupyter-agent":
        request.getfixturevalue("agent_kernelspec")  # installs it into the isolated data dir
    _exec_log(tmp_path / "exec.jsonl")
    recorded = run_notebook(read_log(tmp_path / "exec.jsonl"))
    write_notebook(recorded, tmp_path / "exec.ipynb")
    nb = nbformat.read(tmp_path / "exec.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    NotebookClient(
        nb, kernel_name=kernel, timeout=60, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    setup = nb.cells[0]
    assert _agent(setup)["kind"] == "setup"
    if kernel == "jupyter-agent":  # the record installed, silently
        assert setup.outputs == []
    else:  # another kernel says why (raises-exception) and runs the cells needing no host
        assert [o.ename for o in setup.outputs] == ["NotAnAgentKernel"]
    compared = 0
    for old, new in zip(recorded.cells[1:], nb.cells[1:], strict=True):
        if old.cell_type == "code" and _agent(old)["deterministic"]:
            assert _texts(new.outputs) == _texts(old.outputs), old.id
            compared += 1
    assert compared == len(EXEC_CELLS)


def test_schema_breaking_outputs_and_ids_are_repaired(tmp_path):
    path = tmp_path / "repair.jsonl"
    run = Run(path)
    run.opening([_message("go")])
    nameless = {"output_type": "stream", "text": "no name\n"}  # "name" is required
    good = {"output_type": "stream", "name": "stdout", "text": "fine\n"}
    run.cell("c1", "a", CellResult(cell_id="c1", outputs=(nameless, good)))
    run.cell("c1", "b", CellResult(cell_id="c1", outputs=()))  # a duplicate id
    run.cell("bad id!", "c", CellResult(cell_id="bad id!", outputs=()))
    run.finish()
    nb = without_setup(run_notebook(read_log(path)))
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code[0].outputs[0].name == "stderr"
    assert "unrecognised output 'stream'" in code[0].outputs[0].text
    assert code[0].outputs[1] == good
    assert [c.id for c in code] == ["c1", "x1", "x2"]
    assert [_agent(c)["cell_id"] for c in code] == ["c1", "c1", "bad id!"]


def test_cells_have_the_builders_shape(full_run):
    nb = run_notebook(read_log(full_run[0]))
    shapes = {
        "code": set(nbformat.v4.new_code_cell().keys()),
        "markdown": set(nbformat.v4.new_markdown_cell().keys()),
    }
    for cell in nb.cells:
        assert set(cell.keys()) == shapes[cell.cell_type], cell.id
        assert isinstance(cell.metadata, nbformat.NotebookNode)
