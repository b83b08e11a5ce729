"""Symlinks out of the contents root, through every route that takes a path (issue 25).

The server's root holds links leading outside it: to a notebook file, to a folder, and two
dangling ones (a file, a folder). Jupyter's own contents manager follows them; every path
the agent reads or writes goes through ``runtime/notebook/safe_paths.py``, so each route answers
400 ``bad_path`` (``path_refused`` for the proposals, the notebook app's contract; a clear
error for in-cell calls), nothing is written outside the root, and nothing of the outside
file's text reaches the effect log, the store or the (fake) model provider.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.server.helpers import call, new_chat, refused, wait_turn

SECRET = "the text of a file outside the root, 7f3a9c"
LINKS = ("link_file.ipynb", "link_out/theirs.ipynb", "link_dangling.ipynb", "link_gone/x.ipynb")
SCRIPT = [{"text": "Hello."}]


@pytest.fixture
def fake(fake_provider: Any) -> Any:
    return fake_provider({"steps": SCRIPT, "repeat": True})


@pytest.fixture
def trace_dir() -> str:
    return "agent-traces"


@pytest.fixture
def agent_config(fake: Any, trace_dir: str) -> dict[str, Any]:
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": fake.base_url}
    return {
        "pool_size": 0,
        "tiers": {"codegen": tier},
        "trace_dir": trace_dir,
        "approval": "none",
    }


def _theirs() -> Any:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"print({SECRET!r})", id="theirs")]
    return nb


@pytest.fixture
def outside(tmp_path_factory: Any) -> Path:
    folder: Path = tmp_path_factory.mktemp("outside")
    (folder / "secret.txt").write_text(SECRET)
    nbformat.write(_theirs(), folder / "theirs.ipynb")
    return folder


@pytest.fixture
def links(jp_root_dir: Path, outside: Path) -> Path:
    """The root's links out: to a file, to a folder, dangling (a file's, a folder's)."""
    os.symlink(outside / "theirs.ipynb", jp_root_dir / "link_file.ipynb")
    os.symlink(outside, jp_root_dir / "link_out")
    os.symlink(outside / "gone.ipynb", jp_root_dir / "link_dangling.ipynb")
    os.symlink(outside / "gone", jp_root_dir / "link_gone")
    return jp_root_dir


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _no_leak(fetch: Any, fake: Any, agent_service: Any, outside: Path, chat_id: str) -> None:
    """Nothing of the outside text sent to the model, logged, stored or named."""
    for request in fake.requests:
        assert SECRET not in json.dumps(request.json)
    for name, data in _files(Path(agent_service.data_dir)).items():
        assert SECRET.encode() not in data, name  # effect logs, the SQLite file
    _, chat = call(fetch, "agent", "chats", chat_id)
    assert SECRET not in json.dumps(chat)
    assert not (outside / "gone.ipynb").exists()
    assert not (outside / "gone").exists()


def _bad_path(error: dict[str, Any], outside: Path, reason: str = "bad_path") -> None:
    assert error["reason"] == reason, error
    assert "is refused" in error["message"]
    assert str(outside) not in error["message"]  # never where a link leads
    assert outside.name not in error["message"]


def _one_run(fetch: Any, spin: Any) -> tuple[str, str]:
    chat_id = new_chat(fetch, "Links")
    code, answer = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": "hi"}
    )
    assert code == 202
    wait_turn(fetch, spin, chat_id, answer["run_id"])
    return chat_id, str(answer["run_id"])


def test_a_notebook_path_through_a_link_writes_nothing_outside(
    fetch: Any, spin: Any, links: Path, outside: Path, fake: Any, agent_service: Any
) -> None:
    chat_id, run_id = _one_run(fetch, spin)
    before = _files(outside)
    for path in LINKS:
        for extra in ({}, {"overwrite": True}, {"overwrite": False}):
            error = refused(
                fetch,
                "agent",
                "runs",
                run_id,
                "notebook",
                method="POST",
                body={"path": path, **extra},
                status=400,
            )
            _bad_path(error, outside)
            assert repr(path) in error["message"]  # the path as the person gave it
    assert _files(outside) == before
    # A path inside the root still works, and so does one through a link inside it.
    (links / "work").mkdir()
    os.symlink(links / "work", links / "alias")
    code, answer = call(
        fetch,
        "agent",
        "runs",
        run_id,
        "notebook",
        method="POST",
        body={"path": "alias/trace.ipynb"},
    )
    assert (code, answer) == (201, {"path": "alias/trace.ipynb", "created": True})
    assert (links / "work" / "trace.ipynb").is_file()
    _no_leak(fetch, fake, agent_service, outside, chat_id)


@pytest.mark.parametrize("trace_dir", ["link_out", "link_out/traces", "link_gone"])
def test_a_trace_folder_through_a_link_writes_nothing_outside(
    fetch: Any, spin: Any, links: Path, outside: Path, fake: Any, agent_service: Any
) -> None:
    chat_id, run_id = _one_run(fetch, spin)
    before = _files(outside)
    error = refused(
        fetch, "agent", "chats", chat_id, "notebook", method="POST", body={}, status=400
    )
    _bad_path(error, outside)
    assert "the trace folder" in error["message"]
    error = refused(fetch, "agent", "runs", run_id, "notebook", method="POST", body={}, status=400)
    _bad_path(error, outside)
    assert _files(outside) == before
    assert not (outside / "traces").exists()
    _no_leak(fetch, fake, agent_service, outside, chat_id)


def test_attachments_and_view_paths_through_links_are_refused(
    fetch: Any, links: Path, outside: Path, fake: Any, agent_service: Any
) -> None:
    chat_id = new_chat(fetch, "Links")
    paths = (*LINKS, "link_out/secret.txt", "link_out", "link_gone")
    for path in paths:
        for body in (
            {"text": "read this", "attachments": [path]},
            {"text": "look", "view": {"path": path}},
        ):
            error = refused(
                fetch, "agent", "chats", chat_id, "messages", method="POST", body=body, status=400
            )
            _bad_path(error, outside)
            assert SECRET not in error["message"]
    assert fake.requests == []  # no run started: nothing sent to the model
    _, chat = call(fetch, "agent", "chats", chat_id)
    assert chat["turns"] == []
    assert agent_service.store.queued_mail(chat_id) == []
    _no_leak(fetch, fake, agent_service, outside, chat_id)


READ_AND_PROPOSE = """\
edit = [{"op": "insert", "after": None, "source": "x = 1", "reason": "r"}]
for p in %r:
    for call in (lambda: notebook.read(p), lambda: notebook.propose(p, edit)):
        try:
            call()
            print("READ" + "-OK", p)
        except AppCallError as err:
            print("refused:", err)
"""


@pytest.mark.usefixtures("server_kernelspec")
def test_notebook_read_and_propose_in_a_cell_refuse_links(
    fetch: Any, spin: Any, links: Path, outside: Path, fake: Any, agent_service: Any
) -> None:
    before = _files(outside)
    fake.load([{"cells": [READ_AND_PROPOSE % (LINKS,)]}, {"text": "done"}])
    chat_id = new_chat(fetch, "Links")
    code, answer = call(
        fetch, "agent", "chats", chat_id, "messages", method="POST", body={"text": "read them"}
    )
    assert code == 202
    run_id = answer["run_id"]
    wait_turn(fetch, spin, chat_id, run_id, timeout_s=120)
    log_text = agent_service.manager.log_path(run_id).read_text()
    for path in LINKS:
        said = (
            f"refused: notebook path {path!r} is refused: "
            "it leads outside the server's root (a symlink)"
        )
        assert log_text.count(json.dumps(said)[1:-1]) >= 2, path  # read and propose
    assert "READ-OK" not in log_text  # no call answered
    assert len(fake.requests) == 2  # the cell's digest went back to the model: no secret
    assert agent_service.store.list_proposals(owner="", chat_id=chat_id) == []
    assert _files(outside) == before
    _no_leak(fetch, fake, agent_service, outside, chat_id)


def test_a_proposal_applied_after_its_folder_became_a_link_writes_nothing_outside(
    fetch: Any, links: Path, outside: Path, agent_service: Any, jp_asyncio_loop: Any
) -> None:
    work = links / "work"
    work.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("df.plot()", id="plot")]
    nbformat.write(nb, work / "sales.ipynb")
    nbformat.write(nb, outside / "sales.ipynb")
    proposals = agent_service.proposals
    read = jp_asyncio_loop.run_until_complete(proposals.read_notebook("work/sales.ipynb"))
    chat_id = new_chat(fetch)
    row = jp_asyncio_loop.run_until_complete(
        proposals.create(
            owner="",
            chat_id=chat_id,
            run_id="run_links",
            cell_id="c1",
            path="work/sales.ipynb",
            edits=[{"op": "replace", "cell_id": "plot", "source": "bars()", "reason": "r"}],
            cells_at_read=read["cells"],
        )
    )
    (work / "sales.ipynb").unlink()
    work.rmdir()
    os.symlink(outside, work)  # the folder, swapped for a link out, after the proposal
    before = _files(outside)
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
    _bad_path(error, outside, reason="path_refused")
    assert _files(outside) == before
    stored = jp_asyncio_loop.run_until_complete(proposals.get(row.id, owner=""))
    assert stored.status == "pending"
