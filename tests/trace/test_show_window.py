"""``jupyter agent trace show`` prints what the turn's boot window held (``llm.window``)."""

from __future__ import annotations

from pathlib import Path

from jupyter_agent.cli.main import main
from jupyter_agent.core.turns import Reply, TurnLLM, TurnRecord, TurnWindow
from jupyter_agent.trace.log import read_log
from jupyter_agent.trace.show import show_run
from tests.trace.logs_support import LogWriter


def write_run(path: Path, window: TurnWindow | None) -> TurnRecord:
    log = LogWriter(path)
    log.opening("What did we find?")
    turn = TurnRecord(
        id="turn_1",
        chat_id=log.chat_id,
        run_id=log.run_id,
        user_text="What did we find?",
        created="2025-03-01T10:01:00.000Z",
        replies=(Reply(text="Forty-two.", done=True),),
        llm=TurnLLM(stop_reason="done", end_cause="done", model_calls=1, window=window),
    )
    log.effect("turn.append", turn.to_json(), {"ok": True})
    log.close()
    return turn


def test_trace_show_prints_the_window_line(tmp_path, capsys):
    path = tmp_path / "run.jsonl"
    window = TurnWindow(raw=12, l1=3, l2=1, omitted=40, tokens=1834)
    write_run(path, window)
    assert show_run(read_log(path))["turn"]["llm"]["window"] == window.to_json()
    assert main(["trace", "show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "history: 12 turns, 3 L1, 1 L2, 40 omitted, 1.8k tokens" in out


def test_a_turn_without_a_window_prints_no_window_line(tmp_path, capsys):
    path = tmp_path / "run.jsonl"
    write_run(path, None)
    assert main(["trace", "show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "calls 1" in out
    assert "history:" not in out
