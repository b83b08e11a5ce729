"""Live output from a real agent kernel: iopub outputs while a cell or command runs.

The handle's result must not depend on whether anyone listens; a cell the kernel had to be
restarted for still keeps what it printed; ``sh.run``'s live mode returns what the plain
one does.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest

from jupyter_agent.kernel.sh import Sh
from jupyter_agent.runtime.kernels.pool import AgentKernelHandle

pytestmark = pytest.mark.timeout(90)

TICKS = "import time\nfor i in range(3):\n    print('tick', i)\n    time.sleep(0.4)\n"

RICH = (
    "import sys\n"
    "from IPython.display import HTML, display\n"
    "print('one')\n"
    "print('two', file=sys.stderr)\n"
    "display(HTML('<b>bold</b>'))\n"
    "sys.stdout.write('raw')\n"
    "sys.stdout.flush()\n"
    "1 / 0\n"
)


async def _wait_for(outputs: list[dict[str, Any]], n: int, task: asyncio.Task[Any]) -> None:
    while len(outputs) < n and not task.done():
        await asyncio.sleep(0.01)


async def test_outputs_arrive_while_the_cell_runs(agent_kernel: AgentKernelHandle) -> None:
    outputs: list[dict[str, Any]] = []
    task = asyncio.create_task(
        agent_kernel.run_cell("c1", TICKS, timeout_s=30, on_output=outputs.append)
    )
    await _wait_for(outputs, 1, task)
    # The first tick is there while the cell still sleeps before its next one.
    assert not task.done()
    assert outputs[0] == {"output_type": "stream", "name": "stdout", "text": "tick 0\n"}
    result = await task
    assert "".join(o["text"] for o in outputs) == "tick 0\ntick 1\ntick 2\n"
    assert [p.text for p in result.prints] == ["tick 0", "tick 1", "tick 2"]
    assert agent_kernel.collected is not None
    assert agent_kernel.collected.stream_text("stdout") == "tick 0\ntick 1\ntick 2\n"


def _comparable(result: Any) -> dict[str, Any]:
    data: dict[str, Any] = result.to_json()
    for key in ("cell_id", "duration_s", "execution_count"):
        data.pop(key)
    # The traceback names the execution count ("Cell In[2]"): compared apart from it.
    data["error"].pop("traceback")
    for output in data["outputs"]:
        output.pop("execution_count", None)
        output.pop("traceback", None)
    return data


async def test_live_output_never_changes_the_result(agent_kernel: AgentKernelHandle) -> None:
    quiet = await agent_kernel.run_cell("c1", RICH, timeout_s=30)
    seen: list[dict[str, Any]] = []
    live = await agent_kernel.run_cell("c2", RICH, timeout_s=30, on_output=seen.append)
    assert _comparable(live) == _comparable(quiet)
    kinds = {o["output_type"] for o in seen}
    assert {"stream", "display_data", "error"} <= kinds
    html = next(o for o in seen if o["output_type"] == "display_data")
    assert html["data"]["text/html"] == "<b>bold</b>"


async def test_a_failing_callback_does_not_break_the_cell(agent_kernel: AgentKernelHandle) -> None:
    def broken(output: dict[str, Any]) -> None:
        raise RuntimeError("display went wrong")

    result = await agent_kernel.run_cell("c1", "print('fine')", timeout_s=30, on_output=broken)
    assert [p.text for p in result.prints] == ["fine"]


async def test_bash_streams_stdout_and_stderr(agent_kernel: AgentKernelHandle) -> None:
    command = "echo one; sleep 0.5; echo two >&2; sleep 0.5; echo three"
    quiet = await agent_kernel.run_bash(command, timeout_s=30)
    seen: list[dict[str, Any]] = []
    task = asyncio.create_task(agent_kernel.run_bash(command, timeout_s=30, on_output=seen.append))
    await _wait_for(seen, 1, task)
    assert not task.done()
    assert seen[0] == {"output_type": "stream", "name": "stdout", "text": "one\n"}
    live = await task
    assert (live.stdout, live.stderr, live.returncode) == (quiet.stdout, quiet.stderr, 0)
    assert live.stdout.text == "one\nthree\n"
    assert [o["text"] for o in seen if o["name"] == "stderr"] == ["two\n"]


async def test_a_restarted_timed_out_cell_keeps_what_it_printed(
    agent_kernel: AgentKernelHandle,
) -> None:
    code = (
        "import signal, sys\n"
        "print('before the hang')\n"
        "print('a warning', file=sys.stderr)\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "while True: pass\n"
    )
    result = await agent_kernel.run_cell("c1", code, timeout_s=1)
    assert result.error is not None
    assert result.error.ename == "CellTimeout"
    assert "namespace is lost" in result.error.evalue
    # stdout and stderr flush on their own: either may come first.
    streams = [o for o in result.outputs if o.get("output_type") == "stream"]
    assert {"output_type": "stream", "name": "stdout", "text": "before the hang\n"} in streams
    assert result.outputs[-1]["ename"] == "CellTimeout"
    assert result.stderr is not None
    assert result.stderr.text == "a warning\n"


# --- sh.run's live mode, in process ------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "printf 'a\\nb\\n'; printf 'err' >&2; exit 3",
        "printf '\\303\\251t\\303\\251'",  # UTF-8 split across reads must decode the same
        f'{sys.executable} -c "import sys; sys.stdout.buffer.write(bytes(range(256)))"',
    ],
)
def test_sh_live_mode_returns_what_the_plain_mode_does(command: str) -> None:
    pieces: list[tuple[str, str]] = []
    plain = Sh().run(command, timeout=30)
    live = Sh().run(command, timeout=30, on_output=lambda n, t: pieces.append((n, t)))
    assert (live.stdout, live.stderr, live.returncode, live.timed_out) == (
        plain.stdout,
        plain.stderr,
        plain.returncode,
        plain.timed_out,
    )
    assert "".join(t for n, t in pieces if n == "stdout") == plain.stdout
    assert "".join(t for n, t in pieces if n == "stderr") == plain.stderr


def test_sh_live_mode_times_out_and_kills_the_group() -> None:
    pieces: list[str] = []
    result = Sh().run("echo start; sleep 30", timeout=0.5, on_output=lambda n, t: pieces.append(t))
    assert result.timed_out
    assert result.returncode is None
    assert result.stdout == "start\n"
    assert pieces == ["start\n"]


def test_sh_live_mode_survives_a_failing_callback() -> None:
    def broken(name: str, text: str) -> None:
        raise ValueError("no")

    result = Sh().run("echo fine", timeout=30, on_output=broken)
    assert result.stdout == "fine\n"
    assert result.ok
