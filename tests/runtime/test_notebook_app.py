"""The in-cell ``notebook`` app through the run manager: a real agent kernel, a real
contents manager over the run's root, the real proposal service, the fake model.

Cells call ``notebook.read`` / ``notebook.propose``; the host performs each as an
``app.call`` effect under the cell's seq (its result bounded and scrubbed in the log); the
viewed notebook is the default; refused paths are the cell's ``AppCallError``; nothing in
the file changes on a propose under the ``writes`` policy; every run replays identically.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import struct
import zlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_server.services.contents.filemanager import AsyncFileContentsManager
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from jupyter_agent.runtime.notebook.app import NotebookReader
from jupyter_agent.runtime.notebook.contents import Contents
from jupyter_agent.runtime.notebook.live_docs import LiveDocs
from jupyter_agent.runtime.notebook.proposals import ProposalService
from jupyter_agent.runtime.secrets import Scrubber
from jupyter_agent.trace.verify import verify_run
from tests.runtime.harness import Harness, close_harness, final_text, make_harness

pytestmark = pytest.mark.timeout(120)

KEY = "configured-key-" + secrets.token_hex(10)
BIG = "".join(f"{i:06d} {'x' * 40}\n" for i in range(700))  # ~33 KB of stdout
HUGE = "y" * 120_000  # over the per-output cap


def _png(width: int, height: int) -> str:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    raw = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(rows))
    return base64.b64encode(raw + chunk(b"IEND", b"")).decode()


PNG = _png(300, 200)


def write_sales(root: Path) -> Path:
    nb = new_notebook()
    nb.cells = [
        new_markdown_cell("# Sales\nQuarterly numbers.", id="intro"),
        new_code_cell(
            "rows = load()\nprint(rows)",
            id="load",
            execution_count=1,
            outputs=[new_output("stream", name="stdout", text=BIG)],
        ),
        new_code_cell(
            "plot(rows)",
            id="plot",
            execution_count=2,
            outputs=[
                new_output(
                    "display_data",
                    data={"image/png": PNG, "text/plain": "<Figure size 640x480 with 1 Axes>"},
                ),
                new_output("stream", name="stdout", text=f"token={KEY}\n"),
            ],
        ),
        new_code_cell(
            "dump()",
            id="dump",
            execution_count=3,
            outputs=[new_output("stream", name="stdout", text=HUGE)],
        ),
    ]
    path = root / "work" / "sales.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


@pytest.fixture
async def agent(tmp_path: Path, fake_provider: Any, kernel_manager: Any) -> AsyncIterator[Harness]:
    harness = await make_harness(tmp_path, fake_provider([]), kernel_manager)
    services = harness.manager.services
    contents = Contents(AsyncFileContentsManager(root_dir=str(tmp_path)))
    live = LiveDocs()  # no RTC extension here: every read goes to the contents manager
    services.scrubber = Scrubber({KEY: "ANTHROPIC_API_KEY"})
    services.notebooks = NotebookReader(contents, live=live)
    services.proposals = ProposalService(
        store=harness.store,
        contents=contents,
        events=harness.events,
        live=live,
        root_dir=str(tmp_path),
        notify=harness.manager.notify,  # as the assembly wires it
    )
    write_sales(tmp_path)
    yield harness
    await close_harness(harness)


def lines_of(agent: Harness, run_id: str, name: str, phase: str) -> list[Any]:
    return [ln for ln in agent.trace(run_id).lines if ln.name == name and ln.phase == phase]


def cell_results(agent: Harness, run_id: str) -> list[dict[str, Any]]:
    return [ln.data for ln in lines_of(agent, run_id, "cell.run", "result")]


def assert_replays(agent: Harness, run_id: str) -> None:
    outcome = verify_run(agent.manager.log_path(run_id))
    assert outcome.identical, outcome.message


VIEW = {"path": "work/sales.ipynb", "cell": 2, "cell_id": "plot"}
READ = (
    "nb = notebook.read()\nprint(nb.path, nb.via, len(nb.cells), [c['id'] for c in nb.cells])\nnb"
)
WHOLE = (
    "whole = nb.output('load', 1)\n"
    "print(len(whole), whole.splitlines()[0])\n"
    "print(nb.output('plot', 1))\n"
    "print(nb.output('dump', 1)[-60:])\n"
    "try:\n"
    "    nb.output('load', 9)\n"
    "except LookupError as err:\n"
    "    print('lookup:', err)"
)


async def test_read_of_the_viewed_notebook_digest_stubs_and_whole_outputs(agent: Harness) -> None:
    agent.fake.load(
        [
            {"cells": [READ]},
            {"expect": {"last_user_contains": "work/sales.ipynb contents 4"}, "cells": [WHOLE]},
            {"text": "Read it."},
        ]
    )
    chat = agent.new_chat()
    turn = await agent.ask(chat, "look at my notebook", view=VIEW)
    assert final_text(turn) == "Read it."
    run_id = turn.run_id
    first, second = cell_results(agent, run_id)

    # The call: one app.call under the first cell, args as the model wrote them.
    [call] = lines_of(agent, run_id, "app.call", "intent")
    assert call.parent == lines_of(agent, run_id, "cell.run", "intent")[0].seq
    assert call.data == {"app": "notebook", "method": "read", "args": {"path": None}}

    # The digest the model read: whole (not a stub of the view), centred on the person's cell.
    digest = first["digest"]["text"]
    assert "Last value (NotebookView):" in digest
    assert "  Notebook work/sales.ipynb (4 cells: 3 code, 1 markdown; revision " in digest
    assert "[2] code id=plot In[2]  <- the person's cell" in digest
    assert f"{len(BIG):,} chars" in digest
    assert 'get it whole with nb.output("load", 1)>' in digest
    assert "[out 1] display_data\n" in digest
    assert "<image/png 300x200 " in digest
    assert KEY not in digest
    assert "values.get" not in digest  # the view is never stubbed
    assert "['intro', 'load', 'plot', 'dump']" in digest

    # .output() gives the whole text back; images are placeholders; the cap is marked.
    printed = [p["text"] for p in second["prints"]]
    assert printed[0].startswith(f"{len(BIG)} ")
    assert printed[1].splitlines()[0].startswith("<image/png 300x200 ")
    assert printed[1].splitlines()[1] == "<Figure size 640x480 with 1 Axes>"
    assert printed[2].endswith(f"[cut by the host: {len(HUGE):,} chars in all]")
    assert printed[3].startswith("lookup: cell 'load' has 1 output(s)")

    # The logged result is bounded and clean: no image data, no secret, the huge output cut.
    [result] = lines_of(agent, run_id, "app.call", "result")
    value = result.data["value"]
    logged = json.dumps(result.data)
    assert PNG[:200] not in logged
    assert KEY not in logged
    assert "[redacted" in value["cells"][2]["outputs"][1]
    assert len(logged) < 120_000
    assert value["cells"][1]["outputs"] == [BIG]
    assert value["path"] == "work/sales.ipynb"
    assert value["via"] == "contents"
    assert KEY not in agent.manager.log_path(run_id).read_text(encoding="utf-8")
    assert_replays(agent, run_id)


async def test_read_by_path_and_without_a_view(agent: Harness) -> None:
    other = new_notebook()
    other.cells = [new_code_cell("print(1)", id="only")]
    nbformat.write(other, agent.root / "other.ipynb")
    code = (
        "nb = notebook.read('/other.ipynb')\n"
        "print(nb.path, [c['source'] for c in nb.cells])\n"
        "try:\n"
        "    notebook.read()\n"
        "except AppCallError as err:\n"
        "    print('error:', err)\n"
        "try:\n"
        "    notebook.read('missing.ipynb')\n"
        "except AppCallError as err:\n"
        "    print('error:', err)"
    )
    agent.fake.load([{"cells": [code]}, {"text": "ok"}])
    turn = await agent.ask(agent.new_chat(), "read other")  # no view
    [result] = cell_results(agent, turn.run_id)
    printed = [p["text"] for p in result["prints"]]
    assert printed[0] == "other.ipynb ['print(1)']"
    assert printed[1].startswith(
        "error: no notebook is open in the person's view: name one with path="
    )
    assert printed[2] == "error: no notebook 'missing.ipynb' under the server's root"
    assert_replays(agent, turn.run_id)


async def test_refused_paths_are_the_cells_errors(agent: Harness, tmp_path: Path) -> None:
    outside = tmp_path.parent / f"outside-{secrets.token_hex(4)}.ipynb"
    nbformat.write(new_notebook(), outside)
    os.symlink(outside, agent.root / "link.ipynb")
    (agent.root / ".secret").mkdir()
    nbformat.write(new_notebook(), agent.root / ".secret" / "a.ipynb")
    (agent.root / "notes.txt").write_text("hello")
    code = (
        "for p in ['../x.ipynb', '.secret/a.ipynb', 'link.ipynb', 'notes.txt', 'a\\\\b.ipynb']:\n"
        "    try:\n"
        "        notebook.read(p)\n"
        "    except AppCallError as err:\n"
        "        print('refused:', err)"
    )
    agent.fake.load([{"cells": [code]}, {"text": "ok"}])
    turn = await agent.ask(agent.new_chat(), "read odd paths")
    [result] = cell_results(agent, turn.run_id)
    printed = [p["text"] for p in result["prints"]]
    why = [p.split(" is refused: ", 1) for p in printed]
    assert why == [
        ["refused: notebook path '../x.ipynb'", "it points outside the server's root ('..')"],
        ["refused: notebook path '.secret/a.ipynb'", "it is hidden (a name starting with '.')"],
        ["refused: notebook path 'link.ipynb'", "it leads outside the server's root (a symlink)"],
        ["refused: notebook path 'notes.txt'", "it is not a notebook (a .ipynb file)"],
        [
            "refused: notebook path 'a\\\\b.ipynb'",
            "it is not a clean contents path (no backslash, NUL or '//')",
        ],
    ]
    results = lines_of(agent, turn.run_id, "app.call", "result")
    assert [r.data["ok"] for r in results] == [False] * 5
    assert_replays(agent, turn.run_id)


EDITS = (
    "edits = [\n"
    "    {'op': 'replace', 'cell_id': 'plot', 'source': 'plot(rows, kind=\"bar\")',\n"
    "     'reason': 'a bar chart reads better'},\n"
    "    {'op': 'insert', 'after': 'intro', 'source': 'import plots', 'reason': 'needed'},\n"
    "]\n"
    "pid = notebook.propose('work/sales.ipynb', edits)\n"
    "print(pid)"
)


async def test_propose_returns_an_id_at_once_and_writes_nothing_under_writes(
    agent: Harness,
) -> None:
    agent.ceilings["approval"] = "writes"
    path = agent.root / "work" / "sales.ipynb"
    before = path.read_bytes()
    agent.fake.load([{"cells": [EDITS]}, {"text": "Proposed."}])
    chat = agent.new_chat()
    turn = await agent.ask(chat, "make it a bar chart", view=VIEW)
    assert final_text(turn) == "Proposed."
    [result] = cell_results(agent, turn.run_id)
    [pid] = [p["text"] for p in result["prints"]]
    assert pid.startswith("p")
    assert path.read_bytes() == before  # nothing changed: the person decides

    row = agent.store.get_proposal(pid)
    assert row is not None
    assert (row.status, row.path, row.chat_id, row.run_id, row.cell_id) == (
        "pending",
        "work/sales.ipynb",
        chat,
        turn.run_id,
        "c1",
    )
    assert [e["op"] for e in row.edits] == ["replace", "insert"]
    event = await agent.wait_event(chat, "proposal")
    assert event["proposal_id"] == pid
    [call] = lines_of(agent, turn.run_id, "app.call", "result")
    assert call.data["value"] == pid
    assert f"#{call.seq} notebook.propose (mutation)" in result["digest"]["text"]
    assert_replays(agent, turn.run_id)

    # The person applies it later: the file changes, ids of inserted cells are seeded.
    assert await agent.manager.services.proposals.decide(pid, owner="", apply=True) == "applied"
    after = nbformat.read(path, as_version=4)
    assert [c.source for c in after.cells][:3] == [
        "# Sales\nQuarterly numbers.",
        "import plots",
        "rows = load()\nprint(rows)",
    ]
    assert after.cells[3].source == 'plot(rows, kind="bar")'


async def test_with_approval_none_a_proposal_is_applied_at_once(agent: Harness) -> None:
    agent.fake.load(
        [{"cells": [EDITS]}, {"expect": {"last_user_contains": "[notice]"}, "text": "Done."}]
    )
    turn = await agent.ask(agent.new_chat(), "make it a bar chart", view=VIEW)
    assert final_text(turn) == "Done."
    header = agent.trace(turn.run_id).header
    assert "toolcaller@v8" in json.dumps(header)
    [result] = cell_results(agent, turn.run_id)
    [pid] = [p["text"] for p in result["prints"]]
    row = agent.store.get_proposal(pid)
    assert row is not None
    assert row.status == "applied"
    after = nbformat.read(agent.root / "work" / "sales.ipynb", as_version=4)
    assert after.cells[3].source == 'plot(rows, kind="bar")'
    # The outcome reached the model as a notice at its next drain (toolcaller@v5 and later).
    told = json.dumps(agent.fake.requests[-1].json)
    assert f"Proposal {pid} (work/sales.ipynb) was applied by the host at once" in told
    assert "by the person" not in told  # nobody but the policy decided
    assert_replays(agent, turn.run_id)


BAD = (
    "for edits in (\n"
    "    [{'op': 'replace', 'cell_id': 'nope', 'source': 'x', 'reason': 'r'}],\n"
    "    [{'op': 'delete', 'cell_id': 'plot'}],\n"
    "    [{'op': 'move', 'cell_id': 'plot', 'after': 'plot', 'reason': 'r'}],\n"
    "    [],\n"
    "):\n"
    "    try:\n"
    "        notebook.propose('work/sales.ipynb', edits)\n"
    "    except AppCallError as err:\n"
    "        print('error:', err)\n"
    "try:\n"
    "    notebook.propose('../sales.ipynb', [{'op': 'delete', 'cell_id': 'x', 'reason': 'r'}])\n"
    "except AppCallError as err:\n"
    "    print('error:', err)"
)


async def test_bad_edits_give_the_model_a_clear_error_and_store_nothing(agent: Harness) -> None:
    agent.ceilings["approval"] = "writes"
    before = (agent.root / "work" / "sales.ipynb").read_bytes()
    agent.fake.load([{"cells": [BAD]}, {"text": "ok"}])
    turn = await agent.ask(agent.new_chat(), "edit badly", view=VIEW)
    [result] = cell_results(agent, turn.run_id)
    printed = [p["text"] for p in result["prints"]]
    assert len(printed) == 5
    assert printed[0].startswith("error: edit 0: 'cell_id' 'nope' is not a cell of it")
    assert printed[1].startswith("error: edit 0: 'reason' must be a string")
    assert printed[2].startswith("error: edit 0:")
    assert printed[3].startswith("error: edits must be a non-empty list of edit dicts")
    assert "outside the server's root" in printed[4]
    assert agent.store.list_proposals(chat_id=turn.chat_id) == []
    assert (agent.root / "work" / "sales.ipynb").read_bytes() == before
    assert_replays(agent, turn.run_id)


SECRET_EDITS = (
    "for src in ({marked!r}, {half!r} + {rest!r}):\n"
    "    try:\n"
    "        notebook.propose('work/sales.ipynb', [{{'op': 'replace', 'cell_id': 'plot',\n"
    "            'source': 'key = ' + repr(src), 'reason': 'tidy'}}])\n"
    "    except Exception as err:\n"
    "        print('error:', err)"
)


async def test_a_proposal_never_carries_a_secret_nor_writes_back_a_redaction(
    agent: Harness,
) -> None:
    """The model reads scrubbed cells: writing ``[redacted: NAME]`` back would replace the
    person's key with the marker; a source holding a known secret would put it in the
    ``proposal`` event and the store row. Both are refused, nothing is stored."""
    agent.ceilings["approval"] = "writes"
    code = SECRET_EDITS.format(marked="[redacted: ANTHROPIC_API_KEY]", half=KEY[:10], rest=KEY[10:])
    agent.fake.load([{"cells": [code]}, {"text": "ok"}])
    turn = await agent.ask(agent.new_chat(), "tidy", view=VIEW)
    [result] = cell_results(agent, turn.run_id)
    printed = [p["text"] for p in result["prints"]]
    assert len(printed) == 2, printed
    assert "redacted" in printed[0]
    assert "secret" in printed[0]
    assert "secret" in printed[1]
    assert agent.store.list_proposals(chat_id=turn.chat_id) == []
    assert KEY not in json.dumps(agent.events.since(turn.chat_id, 0))
    assert_replays(agent, turn.run_id)


STALE = (
    "import nbformat\n"
    "nb = notebook.read()\n"
    "on_disk = nbformat.read('sales.ipynb', as_version=4)\n"  # the kernel's cwd: work/
    "on_disk.cells[0].source = '# Sales (the person edited this)'\n"
    "nbformat.write(on_disk, 'sales.ipynb')\n"
    "edits = [{'op': 'replace', 'cell_id': 'plot', 'source': 'plot(rows)', 'reason': 'r'}]\n"
    "try:\n"
    "    notebook.propose(nb.path, edits)\n"
    "except Exception as err:\n"
    "    print('error:', err)\n"
    "nb = notebook.read()\n"
    "print('again', notebook.propose(nb.path, edits))"
)


async def test_a_proposal_made_against_an_older_read_is_refused(agent: Harness) -> None:
    # The person edits the notebook between the agent's read and its propose: the edits
    # were written against the old text, so the call is refused until the agent reads again.
    agent.ceilings["approval"] = "none"  # nobody would review it: the case that matters
    agent.fake.load([{"cells": [STALE]}, {"text": "ok"}])
    turn = await agent.ask(agent.new_chat(), "tidy the plot", view=VIEW)
    [result] = cell_results(agent, turn.run_id)
    printed = [p["text"] for p in result["prints"]]
    assert printed[0].startswith("error: work/sales.ipynb changed since you read it")
    assert printed[1].startswith("again p")
    [row] = agent.store.list_proposals(chat_id=turn.chat_id)
    assert row.status == "applied"
    after = nbformat.read(agent.root / "work" / "sales.ipynb", as_version=4)
    assert after.cells[0].source == "# Sales (the person edited this)"  # theirs is kept
    assert_replays(agent, turn.run_id)


SECRET_CELL = (
    "for op in ('replace', 'delete'):\n"
    "    edit = {'op': op, 'cell_id': 'creds', 'source': 'key = os.environ[\"K\"]',\n"
    "            'reason': 'no keys in notebooks'}\n"
    "    try:\n"
    "        notebook.propose('work/sales.ipynb', [edit])\n"
    "    except Exception as err:\n"
    "        print('error:', err)\n"
    "print(notebook.propose('work/sales.ipynb', [{'op': 'move', 'cell_id': 'creds',\n"
    "    'after': None, 'reason': 'settings first'}]))"
)


async def test_a_cell_holding_a_secret_cannot_be_replaced_or_deleted_by_a_proposal(
    agent: Harness,
) -> None:
    # The proposal keeps the replaced cell's old source (diff, undo) in the event and the
    # store row: a cell with a known secret in it is the person's to edit.
    agent.ceilings["approval"] = "writes"
    path = agent.root / "work" / "sales.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(f"key = {KEY!r}", id="creds"))
    nbformat.write(nb, path)
    agent.fake.load([{"cells": [SECRET_CELL]}, {"text": "ok"}])
    turn = await agent.ask(agent.new_chat(), "take the key out", view=VIEW)
    [result] = cell_results(agent, turn.run_id)
    printed = [p["text"] for p in result["prints"]]
    assert printed[0].startswith("error: edit 0: cell 'creds' holds a secret"), printed
    assert printed[1].startswith("error: edit 0: cell 'creds' holds a secret"), printed
    assert printed[2].startswith("p")  # a move keeps no source: allowed
    [row] = agent.store.list_proposals(chat_id=turn.chat_id)
    assert [e["op"] for e in row.edits] == ["move"]
    assert KEY not in json.dumps(agent.events.since(turn.chat_id, 0))
    assert KEY not in json.dumps([e for e in row.edits]) + json.dumps(row.undo)
    assert_replays(agent, turn.run_id)
