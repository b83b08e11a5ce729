"""An exported chat re-runs top to bottom in a fresh agent kernel with no server and no
model (issue 31, item 5): real runs through a real Jupyter Server with the fake provider,
exported by ``GET agent/chats/{id}/notebook``, then executed by nbclient in a kernel of
its own (the fake provider stopped first).

The cells call apps (``chat.post``, ``notebook.read``), read an earlier cell's value with
``values.get`` and raise: the re-run answers the app calls from the setup cell's record,
keeps the named cells' values, shows the error and goes on.
"""

from __future__ import annotations

import concurrent.futures
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.server.helpers import call, new_chat, wait_turn

pytestmark = pytest.mark.timeout(240)

APPS = "print(chat.post('halfway'))\nprint(6 * 7)\nprint(notebook.read('data.ipynb').path)"
VALUE = "values.get('c1', 2)"
RAISES = "print('before')\n1 / 0"
PLAIN = "print(sum(range(5)))"


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    steps: list[dict[str, Any]] = [{"cells": [code]} for code in (APPS, VALUE, RAISES, PLAIN)]
    return fake_provider([*steps, {"text": "All done."}])


@pytest.fixture
def agent_config(fake: Any) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {"pool_size": 0, "tiers": {"codegen": tier}}


def _texts(outputs: Any) -> list[tuple[str, str]]:
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
        elif o.output_type == "error":
            out.append(("error", f"{o.ename}: {o.evalue}"))
    return out


def _execute(nb: Any, kernel_name: str, cwd: Path) -> None:
    from nbclient import NotebookClient

    client = NotebookClient(
        nb, kernel_name=kernel_name, timeout=60, resources={"metadata": {"path": str(cwd)}}
    )
    # its own thread: nbclient runs its own event loop, the server's is not running now
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(client.execute).result()


@pytest.mark.usefixtures("server_kernelspec")
def test_the_exported_chat_reruns_with_no_server_and_no_model(
    fetch: Any, spin: Any, fake: Any, jp_root_dir: Path, tmp_path: Path
) -> None:
    nbformat.write(nbformat.v4.new_notebook(), jp_root_dir / "data.ipynb")
    chat_id = new_chat(fetch, "rerun me")
    code, answer = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": "go"}
    )
    assert code == 202
    turn = wait_turn(fetch, spin, chat_id, answer["run_id"])
    assert turn["llm"]["stopReason"] == "done"
    _, exported = call(fetch, "agent", "chats", chat_id, "notebook")
    recorded = nbformat.from_dict(exported)
    nbformat.validate(recorded)
    setup = recorded.cells[1]  # after the title
    assert (setup.id, setup.metadata["jupyter_agent"]) == ("replay-setup", {"kind": "setup"})
    code_cells = {c.source: c for c in recorded.cells if c.cell_type == "code"}
    assert code_cells[RAISES].metadata["tags"] == ["raises-exception"]
    assert "tags" not in code_cells[APPS].metadata
    recorded_out = {c.id: _texts(c.outputs) for c in recorded.cells if c.cell_type == "code"}
    assert recorded_out["t1-c2"] == [("result", "'42'")]

    fake.stop()  # no model from here on, and the kernel below is no server's
    nb = nbformat.from_dict(exported)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    _execute(nb, nb.metadata.kernelspec.name, tmp_path)
    rerun = {c.id: c for c in nb.cells if c.cell_type == "code"}
    assert rerun["replay-setup"].outputs == []
    for cell_id in ("t1-c1", "t1-c2", "t1-c4"):  # app calls, values.get, plain: as recorded
        assert _texts(rerun[cell_id].outputs) == recorded_out[cell_id], cell_id
    printed = _texts(rerun["t1-c1"].outputs)[0][1]
    assert printed.endswith("\n42\ndata.ipynb\n")  # the recorded notebook.read answered
    assert _texts(rerun["t1-c3"].outputs) == [
        ("stdout", "before\n"),
        ("error", "ZeroDivisionError: division by zero"),
    ]
    assert [r[0] for r in recorded_out["t1-c3"]] == ["stdout", "error"]
