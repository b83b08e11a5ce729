"""Proposals on a notebook open with real-time collaboration: a real Jupyter Server with the
``jupyter_server_ydoc`` extension, two y-websocket clients (pycrdt docs syncing over the
room's WebSocket with the y protocol). Applying changes the shared document in ONE
transaction, the other client sees it, the room saves a valid file; undo likewise."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import nbformat
import pytest

pytest.importorskip("jupyter_server_ydoc")
from jupyter_ydoc import YNotebook
from pycrdt import Doc, Provider
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

PATH = "work/live.ipynb"


@pytest.fixture
def jp_server_config(jp_root_dir: Path) -> dict[str, Any]:
    """The agent and the collaboration extension (and its file ids); a short save delay."""
    return {
        "ServerApp": {
            "jpserver_extensions": {
                "jupyter_agent": True,
                "jupyter_server_ydoc": True,
                "jupyter_server_fileid": True,
            },
        },
        "KernelPool": {"size": 0},
        "SQLiteYStore": {"db_path": str(jp_root_dir.parent / "ystore.db")},
        "BaseFileIdManager": {
            "root_dir": str(jp_root_dir),
            "db_path": str(jp_root_dir.parent / "fileid.db"),
            "db_journal_mode": "OFF",
        },
        "YDocExtension": {"document_save_delay": 0.2, "file_poll_interval": 0.2},
    }


class TornadoChannel:
    """A pycrdt ``Channel`` over tornado's WebSocket client (binary y-protocol frames)."""

    def __init__(self, conn: Any, path: str) -> None:
        self._conn = conn
        self._path = path

    @property
    def path(self) -> str:
        return self._path

    def __aiter__(self) -> TornadoChannel:
        return self

    async def __anext__(self) -> bytes:
        message = await self._conn.read_message()
        if message is None:
            raise StopAsyncIteration
        return bytes(message)

    async def send(self, message: bytes) -> None:
        await self._conn.write_message(message, binary=True)

    async def recv(self) -> bytes:
        return await self.__anext__()


async def _until(check: Callable[[], bool], what: str, timeout: float = 10) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


@pytest.fixture
def client(
    jp_fetch: Any, jp_auth_header: Any, jp_http_port: int, jp_base_url: str
) -> Callable[[], Any]:
    """``async with client() as nb``: a YNotebook synced with the notebook's room."""

    @asynccontextmanager
    async def connect() -> AsyncIterator[YNotebook]:
        answer = await jp_fetch(
            "api",
            "collaboration",
            "session",
            PATH,
            method="PUT",
            body=json.dumps({"format": "json", "type": "notebook"}),
        )
        session = json.loads(answer.body)
        room = f"{session['format']}:{session['type']}:{session['fileId']}"
        # As a browser asks it (jp_ws_fetch would escape the room id's colons).
        url = (
            f"ws://localhost:{jp_http_port}{jp_base_url}api/collaboration/room/{room}"
            f"?sessionId={session['sessionId']}"
        )
        request = HTTPRequest(url, headers=dict(jp_auth_header))
        conn = await websocket_connect(request)
        doc = Doc()
        async with Provider(doc, TornadoChannel(conn, room)) as provider:
            await asyncio.wait_for(provider.synced.wait(), 10)
            notebook = YNotebook(doc)
            await _until(lambda: notebook.cell_number == 3, "the room's cells")
            try:
                yield notebook
            finally:
                conn.close()

    return connect


def _write(root: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Live", id="intro"),
        nbformat.v4.new_code_cell("x = 1", id="calc"),
        nbformat.v4.new_code_cell("print(x)", id="show"),
    ]
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", text="one\n")]
    path = root / PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def _file_cells(path: Path) -> list[Any]:
    """The file's cells; none while the room is writing it (a read may meet it half done)."""
    try:
        return list(nbformat.read(path, as_version=4).cells)
    except (ValueError, nbformat.reader.NotJSONError):
        return []


def _sources(notebook: YNotebook) -> list[tuple[str, str]]:
    return [(c["id"], c["source"]) for c in (notebook.get_cell(i) for i in range(3))]


def test_applying_to_an_open_notebook_is_one_transaction_every_client_sees(
    jp_root_dir: Path, agent_service: Any, client: Callable[[], Any], jp_asyncio_loop: Any
) -> None:
    path = _write(jp_root_dir)
    proposals = agent_service.proposals

    async def scenario() -> None:
        async with client() as first, client() as second:
            live = await proposals.live.get(PATH)
            assert live is not None, "the room is open: its live document is found"
            nb = await proposals.read_notebook(PATH)
            assert [c["id"] for c in nb["cells"]] == ["intro", "calc", "show"]
            row = await proposals.create(
                owner="",
                chat_id="chat_live",
                run_id="run_live",
                cell_id="c1",
                path=PATH,
                cells_at_read=nb["cells"],
                edits=[
                    {"op": "replace", "cell_id": "calc", "source": "x = 2", "reason": "two"},
                    {"op": "insert", "after": "calc", "source": "y = x", "reason": "more"},
                    {"op": "delete", "cell_id": "intro", "reason": "noise"},
                ],
            )
            server_updates: list[Any] = []
            seen: list[bytes] = []
            subscription = live.doc.ydoc.observe(server_updates.append)
            before = second.ydoc.get_update()
            second.ydoc.observe(lambda event: seen.append(event.update))
            outcome = await proposals.decide(row.id, owner="", apply=True)
            live.doc.ydoc.unobserve(subscription)
            assert outcome == "applied"
            assert len(server_updates) == 1  # ONE transaction on the shared document
            inserted = row.edits[1]["cell_id"]
            expected = [("calc", "x = 2"), (inserted, "y = x"), ("show", "print(x)")]
            await _until(lambda: bool(seen), "the second client's update")
            replay = Doc()  # the second client as it was, plus its first update only
            replay.apply_update(before)
            replay.apply_update(seen[0])
            assert _sources(YNotebook(replay)) == expected  # all of it in one update
            assert _sources(second) == expected
            assert _sources(first) == expected
            assert second.get_cell(0)["outputs"] == []  # a replaced code cell is cleared
            stored = await proposals.get(row.id, owner="")
            assert stored.via == "live"

            def saved() -> bool:
                return [c.source for c in _file_cells(path)] == ["x = 2", "y = x", "print(x)"]

            await _until(saved, "the room's save of the file")
            nbformat.validate(nbformat.read(path, as_version=4))

            assert await proposals.undo(row.id, owner="") == "undone"
            await _until(
                lambda: second.cell_number == 3 and _sources(second)[0][0] == "intro",
                "the undo on the second client",
            )
            assert _sources(second) == [
                ("intro", "# Live"),
                ("calc", "x = 1"),
                ("show", "print(x)"),
            ]
            assert second.get_cell(1)["outputs"][0]["text"] == "one\n"  # restored whole

            def restored() -> bool:
                return [c.id for c in _file_cells(path)] == ["intro", "calc", "show"]

            await _until(restored, "the room's save of the undo")
            nbformat.validate(nbformat.read(path, as_version=4))

    jp_asyncio_loop.run_until_complete(asyncio.wait_for(scenario(), 60))


def test_a_collaborators_change_makes_a_live_conflict(
    jp_root_dir: Path, agent_service: Any, client: Callable[[], Any], jp_asyncio_loop: Any
) -> None:
    _write(jp_root_dir)
    proposals = agent_service.proposals

    async def scenario() -> None:
        async with client() as other:
            nb = await proposals.read_notebook(PATH)
            row = await proposals.create(
                owner="",
                chat_id="chat_live",
                run_id="run_live",
                cell_id="c1",
                path=PATH,
                cells_at_read=nb["cells"],
                edits=[{"op": "replace", "cell_id": "show", "source": "x", "reason": "r"}],
            )
            other.set_cell(2, source="print(x, 'theirs')")  # a collaborator types
            live = await proposals.live.get(PATH)
            assert live is not None
            await _until(lambda: live.cells()[2]["source"].endswith("'theirs')"), "their edit")
            from jupyter_agent.exceptions import ProposalConflict

            with pytest.raises(ProposalConflict, match="cell 'show' changed"):
                await proposals.decide(row.id, owner="", apply=True)
            assert live.cells()[2]["source"] == "print(x, 'theirs')"
            assert (await proposals.get(row.id, owner="")).status == "conflict"

    jp_asyncio_loop.run_until_complete(asyncio.wait_for(scenario(), 60))
