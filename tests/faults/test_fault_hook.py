"""The fault hook of the effect log (``JUPYTER_AGENT_FAULT``, docs/fault-injection.md).

A child process writes a small log with the hook set; it must die by SIGKILL exactly at
the named boundary, with every line up to and including that one on disk and nothing after.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from jupyter_agent.trace.fault_hook import FAULT_ENV
from jupyter_agent.trace.fault_hook import Fault as _Fault
from jupyter_agent.trace.fault_hook import parse_fault as _parse_fault
from jupyter_agent.trace.log import read_log

pytestmark = pytest.mark.timeout(60)

WRITER = """
import sys
from jupyter_agent.effects import Effect
from jupyter_agent.trace.log import EffectLog

with EffectLog.create(sys.argv[1], {"run_id": "run_1", "chat_id": "chat_1"}) as log:
    for i in range(3):
        seq = log.intent(Effect(name="cell.run", data={"cell_id": f"c{i + 1}"}))
        log.result(seq, "cell.run", {"n": i + 1})
        seq = log.intent(Effect(name="chat.post", data={"text": "t", "done": False}))
        log.result(seq, "chat.post", "m")
print("finished")
"""


def _write(tmp_path: Path, fault: str | None) -> tuple[subprocess.CompletedProcess[str], Path]:
    path = tmp_path / "run.jsonl"
    env = {k: v for k, v in os.environ.items() if k != FAULT_ENV}
    if fault is not None:
        env[FAULT_ENV] = fault
    proc = subprocess.run(
        [sys.executable, "-c", WRITER, str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=50,
    )
    return proc, path


def _lines(path: Path) -> list[tuple[int, str, str]]:
    return [(ln.seq, ln.phase, ln.name) for ln in read_log(path).lines]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("kill:before:cell.run", _Fault("before", "cell.run", 1)),
        ("kill:after:turn.append:3", _Fault("after", "turn.append", 3)),
        (" kill:after:http.post ", _Fault("after", "http.post", 1)),
        ("", None),
        (None, None),
    ],
)
def test_the_spec_is_parsed(spec: str | None, expected: _Fault | None) -> None:
    assert _parse_fault(spec) == expected


@pytest.mark.parametrize(
    "spec",
    [
        "kill",
        "kill:during:cell.run",
        "stop:before:cell.run",
        "kill:before:llm.chat",
        "kill:before:cell.run:0",
        "kill:before:cell.run:x",
        "kill:before:cell.run:1:2",
    ],
)
def test_a_bad_spec_is_refused_naming_the_variable(spec: str) -> None:
    with pytest.raises(ValueError, match=FAULT_ENV):
        _parse_fault(spec)


def test_unset_the_log_is_written_whole(tmp_path: Path) -> None:
    proc, path = _write(tmp_path, None)
    assert proc.returncode == 0, proc.stderr
    assert len(_lines(path)) == 12


@pytest.mark.parametrize(
    ("spec", "last"),
    [
        ("kill:before:cell.run", (1, "intent", "cell.run")),
        ("kill:after:cell.run", (1, "result", "cell.run")),
        ("kill:before:cell.run:2", (3, "intent", "cell.run")),
        ("kill:after:chat.post:3", (6, "result", "chat.post")),
    ],
)
def test_the_process_dies_at_the_boundary(
    tmp_path: Path, spec: str, last: tuple[int, str, str]
) -> None:
    proc, path = _write(tmp_path, spec)
    assert proc.returncode == -signal.SIGKILL
    assert "finished" not in proc.stdout
    lines = _lines(path)
    assert lines[-1] == last
    assert not read_log(path).truncated
    # The file ends with a whole line: nothing was cut mid-write.
    assert path.read_bytes().endswith(b"\n")
    assert json.loads(path.read_bytes().splitlines()[0])["kind"] == "header"
