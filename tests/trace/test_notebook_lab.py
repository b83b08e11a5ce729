"""An exported notebook opens in JupyterLab unmodified: its kernelspec and language_info are
what JupyterLab's NotebookPanel writes from a running agent kernel (``_updateSpec`` and
``_updateLanguage``, which change the notebook, so mark it dirty, only on a different value).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jupyter_client.kernelspec import KernelSpecManager

from jupyter_agent.trace.log import read_log
from jupyter_agent.trace.notebook import chat_notebook, run_notebook
from tests.cli_support import record_run


@pytest.fixture
def notebooks(tmp_path: Path) -> list[Any]:
    path = tmp_path / "run_01LAB.jsonl"
    turn = record_run(path, run_id="run_01LAB", chat_id="chat_01LAB")
    trace = read_log(path)
    return [run_notebook(trace), chat_notebook([(trace, turn)], title="Lab")]


@pytest.mark.timeout(60)
async def test_metadata_is_what_a_running_agent_kernel_sets(kernel_manager: Any, notebooks):
    kernel_id = await kernel_manager.start_kernel(kernel_name="jupyter-agent")
    client = kernel_manager.get_kernel(kernel_id).client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=30)
        reply = await client.kernel_info(reply=True, timeout=30)
    finally:
        client.stop_channels()
    language_info = reply["content"]["language_info"]
    spec = KernelSpecManager().get_kernel_spec("jupyter-agent")
    # NotebookPanel._updateSpec writes {name, display_name, language} of the kernel's spec.
    lab_spec = {"name": "jupyter-agent", "display_name": spec.display_name, "language": "python"}
    for nb in notebooks:
        assert nb.metadata.language_info == language_info
        assert nb.metadata.kernelspec == lab_spec
        assert (nb.nbformat, nb.nbformat_minor) == (4, 5)  # JupyterLab's: no conversion
        assert all(cell.get("id") for cell in nb.cells)  # 4.5 needs ids: none added on load
