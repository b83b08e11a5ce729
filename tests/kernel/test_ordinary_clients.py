"""The agent kernel under ordinary clients: a plain jupyter_client execute, nbclient."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
from jupyter_client.multikernelmanager import AsyncMultiKernelManager
from nbclient import NotebookClient


async def _plain_execute(km: AsyncMultiKernelManager, code: str) -> list[dict]:
    kernel_id = await km.start_kernel(kernel_name="jupyter-agent")
    kc = km.get_kernel(kernel_id).client()
    kc.start_channels()
    try:
        await kc.wait_for_ready(timeout=60)
        outputs: list[dict] = []
        reply = await kc.execute_interactive(
            code, allow_stdin=False, timeout=30, output_hook=lambda msg: outputs.append(msg)
        )
        return [reply, *outputs]
    finally:
        kc.stop_channels()


async def test_app_call_without_agent_host_is_clear(kernel_manager: AsyncMultiKernelManager):
    reply, *_outputs = await _plain_execute(kernel_manager, 'llm.chat("hello")')
    content = reply["content"]
    assert content["status"] == "error"
    assert content["ename"] == "AppCallError"
    assert "needs the agent host" in content["evalue"]
    assert "jupyter_agent" not in content  # an unnamed cell: an ordinary reply


async def test_unnamed_cell_has_helpers_and_ordinary_outputs(
    kernel_manager: AsyncMultiKernelManager,
):
    reply, *outputs = await _plain_execute(
        kernel_manager, 'print("hi")\nprint(type(values).__name__, sh("echo x").stdout)\n1 + 1'
    )
    assert reply["content"]["status"] == "ok"
    streams = "".join(m["content"]["text"] for m in outputs if m["msg_type"] == "stream")
    assert streams == "hi\nValues x\n\n"
    results = [m for m in outputs if m["msg_type"] == "execute_result"]
    assert results[0]["content"]["data"]["text/plain"] == "2"


def test_nbclient_runs_an_ordinary_notebook(agent_kernelspec: str, tmp_path: Path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell('print("hello")\nx = 21'),
        nbformat.v4.new_code_cell("x * 2"),
    ]
    NotebookClient(
        nb, kernel_name="jupyter-agent", timeout=60, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    assert nb.cells[0].outputs == [nbformat.v4.new_output("stream", name="stdout", text="hello\n")]
    (result,) = nb.cells[1].outputs
    assert result.output_type == "execute_result"
    assert result.data == {"text/plain": "42"}
    assert result.execution_count == 2
    nbformat.validate(nb)


def test_jupyter_agent_kernel_install_prefix(tmp_path: Path):
    proc = subprocess.run(
        ["jupyter", "agent", "kernel", "install", "--prefix", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    spec = tmp_path / "share" / "jupyter" / "kernels" / "jupyter-agent" / "kernel.json"
    import json

    data = json.loads(spec.read_text())
    assert data["argv"][1:] == ["-m", "jupyter_agent.kernel", "-f", "{connection_file}"]
    assert data["display_name"] == "Python (agent)"
    assert data["language"] == "python"


def test_cli_requires_a_verb():
    proc = subprocess.run(
        [sys.executable, "-m", "jupyter_agent.cli.main"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "kernel" in proc.stderr
