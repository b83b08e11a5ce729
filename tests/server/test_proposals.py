"""Notebook proposals through a real Jupyter Server and its real contents manager (no RTC):
read, propose, apply (all, some), discard, conflict, undo, refused paths, other owners."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.server.helpers import call, new_chat, refused
from tests.store.factories import make_turn


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    """No warm kernels (nothing here runs a cell)."""
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_agent": True}},
        "KernelPool": {"size": 0},
    }


def _notebook() -> Any:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Sales", id="intro"),
        nbformat.v4.new_code_cell("df = load()", id="load"),
        nbformat.v4.new_code_cell("df.plot()", id="plot"),
    ]
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", text="loaded\n")]
    nb.cells[1].execution_count = 1
    return nb


@pytest.fixture
def notebook(jp_root_dir: Path) -> Path:
    path = jp_root_dir / "work" / "sales.ipynb"
    path.parent.mkdir()
    nbformat.write(_notebook(), path)
    return path


class Harness:
    """The proposal service of the test server, run on its loop, with recorded notices."""

    def __init__(self, service: Any, loop: Any) -> None:
        self.service = service
        self.proposals = service.proposals
        self.loop = loop
        self.notices: list[tuple[str, str]] = []
        self.proposals.notify = lambda chat_id, text: self.notices.append((chat_id, text))

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def propose(self, chat_id: str, edits: list[dict[str, Any]], *, run_id: str = "") -> Any:
        nb = self.run(self.proposals.read_notebook("work/sales.ipynb"))
        return self.run(
            self.proposals.create(
                owner="",
                chat_id=chat_id,
                run_id=run_id or "run_000001",
                cell_id="c1",
                path="work/sales.ipynb",
                edits=edits,
                cells_at_read=nb["cells"],
            )
        )

    def events(self, chat_id: str) -> list[dict[str, Any]]:
        return [e for e in self.service.events.since(chat_id, 0) if "proposal" in e["type"]]


@pytest.fixture
def harness(agent_service: Any, jp_asyncio_loop: Any) -> Harness:
    return Harness(agent_service, jp_asyncio_loop)


REPLACE = {"op": "replace", "cell_id": "plot", "source": "df.plot(kind='bar')", "reason": "bars"}
INSERT = {"op": "insert", "after": "load", "source": "df.info()", "reason": "look first"}


def _cells(path: Path) -> list[Any]:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    return list(nb.cells)


def _decide(fetch: Any, row: Any, body: dict[str, Any]) -> Any:
    return call(fetch, "agent", "runs", row.run_id, "proposals", row.id, method="POST", body=body)


def test_read_prefers_the_file_and_gives_ids(harness: Harness, notebook: Path) -> None:
    nb = harness.run(harness.proposals.read_notebook("/work/./sales.ipynb"))
    assert [c["id"] for c in nb["cells"]] == ["intro", "load", "plot"]
    assert nb["cells"][1]["outputs"][0]["text"] == "loaded\n"
    old = nbformat.v4.new_notebook()
    old.nbformat_minor = 4
    old.cells = [nbformat.v4.new_code_cell("x = 1")]
    del old.cells[0]["id"]
    nbformat.write(old, notebook.parent / "old.ipynb")
    legacy = harness.run(harness.proposals.read_notebook("work/old.ipynb"))
    assert legacy["cells"][0]["id"] == "cell-0"
    assert legacy["nbformat_minor"] == 5


def test_propose_then_apply_changes_the_file_as_asked(
    fetch: Any, harness: Harness, notebook: Path
) -> None:
    chat_id = new_chat(fetch)
    before = notebook.read_bytes()
    row = harness.propose(chat_id, [REPLACE, INSERT])
    assert notebook.read_bytes() == before  # nothing changes before the person applies
    proposal_event = harness.events(chat_id)[0]
    assert proposal_event["type"] == "proposal"
    assert proposal_event["proposal_id"] == row.id
    assert [e["op"] for e in proposal_event["edits"]] == ["replace", "insert"]
    assert "+df.plot(kind='bar')" in proposal_event["edits"][0]["diff"]

    assert _decide(fetch, row, {"apply": True}) == (200, {"outcome": "applied"})
    cells = _cells(notebook)
    inserted = row.edits[1]["cell_id"]
    assert [c.id for c in cells] == ["intro", "load", inserted, "plot"]
    assert cells[3].source == "df.plot(kind='bar')"
    assert cells[1].outputs[0]["text"] == "loaded\n"  # untouched cells keep their outputs
    assert harness.events(chat_id)[-1]["outcome"] == "applied"
    assert harness.notices == [
        (chat_id, f"Proposal {row.id} (work/sales.ipynb) was applied by the person: all 2 edit(s).")
    ]
    listed = call(fetch, "agent", "proposals", params={"chat_id": chat_id})[1]["proposals"]
    assert [(p["proposal_id"], p["status"], p["via"], p["undoable"]) for p in listed] == [
        (row.id, "applied", "contents", True)
    ]
    again = refused(
        fetch,
        "agent",
        "runs",
        row.run_id,
        "proposals",
        row.id,
        method="POST",
        body={"apply": True},
        status=409,
    )
    assert again["reason"] == "proposal_decided"


def test_apply_some_is_partly_and_discard_changes_nothing(
    fetch: Any, harness: Harness, notebook: Path
) -> None:
    chat_id = new_chat(fetch)
    row = harness.propose(chat_id, [REPLACE, INSERT])
    inserted = row.edits[1]["cell_id"]
    assert _decide(fetch, row, {"apply": True, "cells": [inserted]}) == (
        200,
        {"outcome": "partly"},
    )
    cells = _cells(notebook)
    assert [c.id for c in cells] == ["intro", "load", inserted, "plot"]
    assert cells[3].source == "df.plot()"
    stored = harness.run(harness.proposals.get(row.id, owner=""))
    assert stored.applied == [inserted]

    other = harness.propose(chat_id, [{"op": "delete", "cell_id": "intro", "reason": "noise"}])
    before = notebook.read_bytes()
    assert _decide(fetch, other, {"apply": False}) == (200, {"outcome": "discarded"})
    assert notebook.read_bytes() == before
    assert "discarded" in harness.notices[-1][1]
    bad = refused(
        fetch,
        "agent",
        "runs",
        row.run_id,
        "proposals",
        row.id,
        method="POST",
        body={"apply": "yes"},
        status=400,
    )
    assert bad["reason"] == "bad_decision"


def test_a_file_changed_in_between_is_a_conflict_and_nothing_is_written(
    fetch: Any, harness: Harness, notebook: Path
) -> None:
    chat_id = new_chat(fetch)
    row = harness.propose(chat_id, [REPLACE])
    nb = nbformat.read(notebook, as_version=4)
    nb.cells[2].source = "df.plot(title='mine')"  # the person edits the cell meanwhile
    nbformat.write(nb, notebook)
    theirs = notebook.read_bytes()
    error = refused(
        fetch,
        "agent",
        "runs",
        row.run_id,
        "proposals",
        row.id,
        method="POST",
        body={"apply": True},
        status=409,
    )
    assert error["reason"] == "proposal_conflict"
    assert "cell 'plot' changed" in error["message"]
    assert notebook.read_bytes() == theirs
    assert harness.events(chat_id)[-1]["outcome"] == "conflict"
    assert harness.run(harness.proposals.get(row.id, owner="")).status == "conflict"
    assert "could not be applied" in harness.notices[-1][1]


def test_undo_restores_the_file_and_a_later_change_is_a_conflict(
    fetch: Any, harness: Harness, notebook: Path
) -> None:
    chat_id = new_chat(fetch)
    original = [dict(c) for c in _cells(notebook)]
    row = harness.propose(
        chat_id, [REPLACE, {"op": "delete", "cell_id": "load", "reason": "redundant"}]
    )
    assert _decide(fetch, row, {"apply": True})[1] == {"outcome": "applied"}
    assert [c.id for c in _cells(notebook)] == ["intro", "plot"]
    assert call(fetch, "agent", "proposals", row.id, "undo", method="POST") == (
        200,
        {"outcome": "undone"},
    )
    assert [dict(c) for c in _cells(notebook)] == original  # outputs of the deleted cell too
    assert harness.events(chat_id)[-1]["outcome"] == "undone"
    twice = refused(fetch, "agent", "proposals", row.id, "undo", method="POST", status=409)
    assert twice["reason"] == "proposal_decided"

    second = harness.propose(chat_id, [REPLACE])
    _decide(fetch, second, {"apply": True})
    nb = nbformat.read(notebook, as_version=4)
    nb.cells[2].source = "df.plot(title='edited after')"
    nbformat.write(nb, notebook)
    theirs = notebook.read_bytes()
    error = refused(fetch, "agent", "proposals", second.id, "undo", method="POST", status=409)
    assert error["reason"] == "proposal_conflict"
    assert "since the proposal was applied" in error["message"]
    assert notebook.read_bytes() == theirs
    assert harness.run(harness.proposals.get(second.id, owner="")).status == "applied"


@pytest.mark.parametrize(
    "path", ["../outside.ipynb", ".hidden/x.ipynb", "work/.secret.ipynb", "work/data.csv"]
)
def test_a_path_outside_the_root_or_hidden_is_refused(
    harness: Harness, notebook: Path, path: str
) -> None:
    from jupyter_agent.exceptions import PathRefused

    with pytest.raises(PathRefused) as caught:
        harness.run(
            harness.proposals.create(
                owner="",
                chat_id="chat_x",
                run_id="run_x",
                cell_id="c1",
                path=path,
                edits=[REPLACE],
                cells_at_read=[],
            )
        )
    assert caught.value.reason == "path_refused"
    assert harness.run(harness.proposals.list(owner="")) == []


def test_a_symlink_out_of_the_root_is_refused(
    harness: Harness, notebook: Path, tmp_path_factory: Any
) -> None:
    from jupyter_agent.exceptions import PathRefused

    outside = tmp_path_factory.mktemp("outside") / "x.ipynb"
    nbformat.write(_notebook(), outside)
    (notebook.parent / "link.ipynb").symlink_to(outside)
    with pytest.raises(PathRefused):
        harness.run(harness.proposals.read_notebook("work/link.ipynb"))


def test_another_owners_proposal_is_not_found(fetch: Any, harness: Harness, notebook: Path) -> None:
    nb = harness.run(harness.proposals.read_notebook("work/sales.ipynb"))
    theirs = harness.run(
        harness.proposals.create(
            owner="someone-else",
            chat_id="chat_x",
            run_id="run_x",
            cell_id="c1",
            path="work/sales.ipynb",
            edits=[REPLACE],
            cells_at_read=nb["cells"],
        )
    )
    for parts in (("runs", "run_x", "proposals", theirs.id), ("proposals", theirs.id, "undo")):
        body = {"apply": True} if parts[0] == "runs" else None
        refused(fetch, "agent", *parts, method="POST", body=body, status=404)
    assert call(fetch, "agent", "proposals")[1] == {"proposals": []}
    mine = harness.propose("chat_y", [REPLACE], run_id="run_y")
    refused(
        fetch,
        "agent",
        "runs",
        "run_other",
        "proposals",
        mine.id,
        method="POST",
        body={"apply": True},
        status=404,
    )


def test_the_chat_turns_carry_their_proposals(fetch: Any, harness: Harness, notebook: Path) -> None:
    chat_id = new_chat(fetch)
    harness.service.store.append_turn(make_turn(1, chat_id=chat_id, run_id="run_000001"))
    row = harness.propose(chat_id, [REPLACE], run_id="run_000001")
    _decide(fetch, row, {"apply": True})
    turns = call(fetch, "agent", "chats", chat_id)[1]["turns"]
    assert turns[0]["proposals"] == [
        {
            "proposal_id": row.id,
            "path": "work/sales.ipynb",
            "status": "applied",
            "applied": ["plot"],
        }
    ]
    assert json.dumps(turns)  # JSON as served


def test_an_unknown_cell_or_edit_is_a_clear_error(harness: Harness, notebook: Path) -> None:
    from jupyter_agent.exceptions import BadRequest

    with pytest.raises(BadRequest, match="edit 0: 'cell_id' 'nope' is not a cell of it"):
        harness.propose("chat_z", [{"op": "delete", "cell_id": "nope", "reason": "r"}])
    row = harness.propose("chat_z", [REPLACE])
    with pytest.raises(BadRequest, match="no edit of this proposal is for cell 'zzz'"):
        harness.run(harness.proposals.decide(row.id, owner="", apply=True, cells=["zzz"]))


def test_a_file_changed_between_the_read_and_the_save_is_refused(
    harness: Harness, notebook: Path
) -> None:
    """Another writer saves the file while the edits are being checked (after the read):
    the last_modified re-check refuses the save; the other writer's file stays."""
    import os

    from jupyter_agent.exceptions import ProposalConflict

    row = harness.propose("chat_r", [REPLACE])
    manager = harness.proposals.contents.writer()
    real_get = manager.get
    theirs: list[bytes] = []

    async def get_then_someone_saves(path: str, content: bool = True, **kw: Any) -> Any:
        if not content and not theirs:  # the re-check before the save: someone saved first
            nb = nbformat.read(notebook, as_version=4)
            nb.cells[0].source = "# Sales (theirs)"
            nbformat.write(nb, notebook)
            stat = notebook.stat()
            os.utime(notebook, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
            theirs.append(notebook.read_bytes())
        return await real_get(path, content=content, **kw)

    manager.get = get_then_someone_saves
    try:
        with pytest.raises(ProposalConflict, match="changed while the edits were applied"):
            harness.run(harness.proposals.decide(row.id, owner="", apply=True))
    finally:
        del manager.get
    assert notebook.read_bytes() == theirs[0]
    assert harness.run(harness.proposals.get(row.id, owner="")).status == "conflict"


def test_the_outcome_is_a_durable_notice_for_the_chat(
    fetch: Any, agent_service: Any, jp_asyncio_loop: Any, notebook: Path
) -> None:
    """Wired as the server wires it: the run manager's notify queues a ``notice`` mailbox
    item (stored first), and starts no run."""
    proposals = agent_service.proposals
    assert proposals.notify == agent_service.manager.notify
    chat_id = new_chat(fetch)
    nb = jp_asyncio_loop.run_until_complete(proposals.read_notebook("work/sales.ipynb"))
    row = jp_asyncio_loop.run_until_complete(
        proposals.create(
            owner="",
            chat_id=chat_id,
            run_id="run_n",
            cell_id="c1",
            path="work/sales.ipynb",
            edits=[REPLACE],
            cells_at_read=nb["cells"],
        )
    )
    assert _decide(fetch, row, {"apply": False}) == (200, {"outcome": "discarded"})
    queued = agent_service.store.queued_mail(chat_id)
    assert [(q["kind"], q["text"]) for q in queued] == [
        (
            "notice",
            f"Proposal {row.id} (work/sales.ipynb) was discarded by the person: nothing changed.",
        )
    ]
    assert agent_service.manager.active_run_id(chat_id) is None


def test_apply_and_undo_recheck_the_path_a_symlink_swapped_in_is_refused(
    fetch: Any, harness: Harness, notebook: Path, tmp_path_factory: Any
) -> None:
    """The agent's kernel shares the file system: after proposing it could swap the notebook
    for a symlink out of the root. Apply (and undo) check the path again: nothing outside
    is written."""
    outside = tmp_path_factory.mktemp("outside") / "theirs.ipynb"
    nbformat.write(_notebook(), outside)
    before = outside.read_bytes()
    row = harness.propose("chat_s", [REPLACE])
    notebook.unlink()
    notebook.symlink_to(outside)
    error = refused(
        fetch,
        "agent",
        "runs",
        row.run_id,
        "proposals",
        row.id,
        method="POST",
        body={"apply": True},
        status=400,
    )
    assert error["reason"] == "path_refused"
    assert outside.read_bytes() == before
    assert harness.run(harness.proposals.get(row.id, owner="")).status == "pending"
    # undo: applied while the path was sound, then swapped
    notebook.unlink()
    nbformat.write(_notebook(), notebook)
    assert _decide(fetch, row, {"apply": True}) == (200, {"outcome": "applied"})
    applied = notebook.read_bytes()
    notebook.unlink()
    nbformat.write(nbformat.reads(applied.decode(), as_version=4), outside)
    after_apply = outside.read_bytes()
    notebook.symlink_to(outside)
    error = refused(fetch, "agent", "proposals", row.id, "undo", method="POST", status=400)
    assert error["reason"] == "path_refused"
    assert outside.read_bytes() == after_apply
    assert harness.run(harness.proposals.get(row.id, owner="")).status == "applied"


def test_create_checks_and_diffs_the_edits_off_the_event_loop(
    harness: Harness, notebook: Path, monkeypatch: Any
) -> None:
    """normalize_edits diffs whole cell sources (difflib): a huge cell must not stall the
    server's event loop, so it runs in a worker thread."""
    import threading

    from jupyter_agent.runtime.notebook import proposals as module

    threads: list[threading.Thread] = []
    real = module.normalize_edits

    def recording(*args: Any, **kw: Any) -> Any:
        threads.append(threading.current_thread())
        return real(*args, **kw)

    monkeypatch.setattr(module, "normalize_edits", recording)
    row = harness.propose("chat_t", [REPLACE])
    assert row.status == "pending"
    assert threads
    assert threads[0] is not threading.main_thread()


@pytest.mark.parametrize("apply_first", [True, False])
def test_two_decisions_at_once_exactly_one_applies(
    harness: Harness, notebook: Path, apply_first: bool
) -> None:
    """Two decisions race: either may take the path lock first (each reads the row in a
    worker thread before it), so the test holds whichever won to the one outcome."""
    import asyncio

    from jupyter_agent.exceptions import ProposalDecided

    row = harness.propose("chat_2", [REPLACE, INSERT])
    order = [True, False] if apply_first else [False, True]

    async def both() -> list[Any]:
        return await asyncio.gather(
            *(harness.proposals.decide(row.id, owner="", apply=a) for a in order),
            return_exceptions=True,
        )

    results = harness.run(both())
    won = [r for r in results if isinstance(r, str)]
    lost = [r for r in results if not isinstance(r, str)]
    assert len(won) == 1
    assert len(lost) == 1
    assert isinstance(lost[0], ProposalDecided)
    assert won[0] in ("applied", "discarded")
    inserted = [c.id for c in _cells(notebook)].count(row.edits[1]["cell_id"])
    assert inserted == (1 if won[0] == "applied" else 0)
    assert [e["outcome"] for e in harness.events("chat_2") if e["type"] == "proposal_end"] == won
    assert len(harness.notices) == 1
