"""The agent's services (chats, runs, settings) called directly, with typed arguments:
refusals are domain errors (no HTTP status anywhere), raised before anything is written or
started.

The services are assembled as the server assembles them, over a real SQLite store and Jupyter's
real file contents manager; its pool has no kernel manager, so a run that started would
fail loudly (none may start here).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_server.services.contents.filemanager import AsyncFileContentsManager

from jupyter_agent.exceptions import (
    BadRequest,
    NotFound,
    NotSupported,
    RequestError,
    SettingsError,
)
from jupyter_agent.runtime.assembly import AdminConfig, Parts, assemble
from jupyter_agent.runtime.kernels.pool import KernelPool
from jupyter_agent.runtime.runs.chat_service import MAX_ATTACHMENTS, Control, View

LIMIT = 1000


def _parts(tmp_path: Path, contents: bool = True) -> Parts:
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    admin = AdminConfig(
        tiers={"codegen": {"provider": "fake", "model": "m", "base_url": "http://127.0.0.1:9"}},
        max_attachment_bytes=LIMIT,
        db_url=f"sqlite:///{tmp_path / 'agent.sqlite'}",
        pool_size=0,
    )
    manager = AsyncFileContentsManager(root_dir=str(root)) if contents else None
    parts = assemble(
        admin=admin,
        data_dir=tmp_path / "data",
        root_dir=str(root),
        pool=KernelPool(None, size=0),
        contents_manager=manager,
        environ={},
    )
    return parts


@pytest.fixture
async def parts(tmp_path: Path) -> AsyncIterator[Parts]:
    root = tmp_path / "root"
    root.mkdir()
    (root / "note.txt").write_text("hello")
    (root / "big.bin").write_bytes(b"x" * (LIMIT + 1))
    (root / "folder").mkdir()
    built = _parts(tmp_path)
    yield built
    await built.stop()


def _refused(error: BaseException, cls: type[RequestError], reason: str, *words: str) -> None:
    assert isinstance(error, cls), error
    assert isinstance(error, RequestError)
    assert error.reason == reason
    for word in words:
        assert word in error.message, (word, error.message)
    # A domain error: no HTTP status travels with it.
    assert not hasattr(error, "status")
    assert not hasattr(error, "status_code")


async def _refusal(call: Any) -> BaseException:
    with pytest.raises(RequestError) as info:
        await call
    return info.value


async def test_refused_messages_write_and_start_nothing(parts: Parts) -> None:
    chats = parts.services.chats
    chat = await chats.create(owner="")
    chat_id = chat["id"]
    cases: list[tuple[dict[str, Any], type[RequestError], str, str]] = [
        ({}, BadRequest, "empty_message", "no text"),
        ({"text": "  \n"}, BadRequest, "empty_message", "no text"),
        ({"text": "hi", "view": View(path="../out.ipynb")}, BadRequest, "bad_path", "view.path"),
        (
            {"text": "hi", "attachments": ["a.txt"] * (MAX_ATTACHMENTS + 1)},
            BadRequest,
            "bad_attachments",
            str(MAX_ATTACHMENTS),
        ),
        ({"text": "hi", "attachments": ["../../etc/passwd"]}, BadRequest, "bad_path", "attach"),
        (
            {"text": "hi", "attachments": ["missing.txt"]},
            BadRequest,
            "bad_attachments",
            "not found",
        ),
        ({"text": "hi", "attachments": ["folder"]}, BadRequest, "bad_attachments", "folder"),
        (
            {"text": "hi", "attachments": ["big.bin"]},
            BadRequest,
            "attachment_too_large",
            str(LIMIT),
        ),
    ]
    for kwargs, cls, reason, word in cases:
        error = await _refusal(chats.send(chat_id, owner="", **kwargs))
        _refused(error, cls, reason, word)
    error = await _refusal(chats.send("chat_nope", text="hi", owner=""))
    _refused(error, NotFound, "not_found", "chat_nope")
    # A break with no run going answers at once and starts nothing.
    answer = await chats.send(chat_id, control=Control(hard=True), owner="")
    assert answer == {"run_id": None, "routed": "none"}
    assert parts.manager.active_run_id(chat_id) is None
    stored = parts.store.get_chat(chat_id)
    assert stored is not None
    assert stored.title == ""
    assert parts.store.list_runs()[0] == []


async def test_chats_titles_and_unknown_chats(parts: Parts) -> None:
    chats = parts.services.chats
    chat = await chats.create(title="  plots  ", owner="")
    assert chat["title"] == "plots"
    error = await _refusal(chats.create(title="x" * 201, owner=""))
    _refused(error, BadRequest, "bad_title", "200")
    error = await _refusal(chats.rename(chat["id"], title="y" * 201, owner=""))
    _refused(error, BadRequest, "bad_title", "200")
    for call in (
        chats.rename("chat_nope", title="t", owner=""),
        chats.get("chat_nope", owner=""),
        chats.delete("chat_nope", owner=""),
        chats.check("chat_nope", owner=""),
        chats.notebook("chat_nope", owner=""),
        chats.history("chat_nope", owner=""),
        chats.active_run_id("chat_nope", owner=""),
        parts.services.runs.of_chat("chat_nope", owner="", limit=5),
    ):
        _refused(await _refusal(call), NotFound, "not_found", "chat_nope")
    # Another owner's chat is missing to everyone else, with the same message.
    for call in (chats.get(chat["id"], owner="bob"), chats.check(chat["id"], owner="bob")):
        _refused(await _refusal(call), NotFound, "not_found", chat["id"])
    assert [c["title"] for c in (await chats.list(owner=""))["chats"]] == ["plots"]
    assert (await chats.list(owner="bob"))["chats"] == []


async def test_runs_unknown_or_malformed(parts: Parts) -> None:
    runs = parts.services.runs
    for run_id in ("run_01NOPE", "not-a-run-id", "../etc"):
        for call in (
            runs.break_run(run_id, hard=True, owner=""),
            runs.detail(run_id, owner=""),
            runs.log(run_id, owner=""),
            runs.stats(run_id, owner=""),
            runs.notebook(run_id, owner=""),
            runs.decide_approval(run_id, "ap_1", owner="", approve=True),
        ):
            _refused(await _refusal(call), NotFound, "not_found", run_id)
    assert await runs.list(owner="") == {"runs": [], "next": None}
    _refused(await _refusal(runs.list(limit=0, owner="")), BadRequest, "bad_page", "limit")
    _refused(await _refusal(runs.list(before="garbage", owner="")), BadRequest, "bad_page")
    chat = await parts.services.chats.create(owner="")
    assert await runs.of_chat(chat["id"], owner="", limit=5) == {"runs": [], "next": None}
    for limit in (0, 1001):
        error = await _refusal(runs.of_chat(chat["id"], owner="", limit=limit))
        _refused(error, BadRequest, "bad_page", "limit")


async def test_writing_a_run_notebook_checks_the_path_first(parts: Parts) -> None:
    runs = parts.services.runs
    for path, word in (
        ("x.txt", ".ipynb"),
        ("../x.ipynb", "outside the server's root"),
        (".hidden/x.ipynb", "hidden"),
    ):
        error = await _refusal(runs.write_notebook("run_01NOPE", path=path, owner=""))
        _refused(error, BadRequest, "bad_path", word)
    error = await _refusal(runs.write_notebook("run_01NOPE", path="ok.ipynb", owner=""))
    _refused(error, NotFound, "not_found")


async def test_without_a_contents_manager(tmp_path: Path) -> None:
    built = _parts(tmp_path, contents=False)
    chats, runs = built.services.chats, built.services.runs
    try:
        chat = await chats.create(owner="")
        error = await _refusal(chats.send(chat["id"], text="hi", attachments=["a.txt"], owner=""))
        _refused(error, BadRequest, "bad_attachments", "not available")
        error = await _refusal(runs.write_notebook("run_01NOPE", owner=""))
        _refused(error, NotSupported, "no_contents")
        error = await _refusal(chats.write_notebook(chat["id"], owner=""))
        _refused(error, NotSupported, "no_contents")
    finally:
        await built.stop()


async def test_settings_refusals_are_settings_errors(parts: Parts) -> None:
    settings_service = parts.services.settings
    good = {"provider": "openai-compatible", "model": "m", "base_url": "http://127.0.0.1:8000/v1"}
    for tiers, word in (
        ({"planner": good}, "unknown tier"),
        ({"codegen": "anthropic"}, "object"),
        ({"codegen": {**good, "api_key": "k"}}, "api_key_ref"),
        ({"codegen": {**good, "base_url": "https://evil.example"}}, "evil.example"),
    ):
        error = await _refusal(settings_service.update(owner="", tiers=tiers))
        _refused(error, SettingsError, "bad_settings", word)
        assert isinstance(error, BadRequest)
    assert parts.store.owner_tiers("") is None
    settings = await settings_service.update(owner="", tiers={"codegen": good})
    assert settings["overridden"] == ["codegen"]
    assert (await settings_service.settings(owner="bob"))["overridden"] == []  # only hers
    settings = await settings_service.update(owner="", tiers={"codegen": None})
    assert settings["overridden"] == []


def test_the_pool_keeps_every_key_references_variable_out_of_the_kernel(tmp_path: Path) -> None:
    tier = {"provider": "fake", "model": "m", "base_url": "http://127.0.0.1:9"}
    admin = AdminConfig(
        tiers={"codegen": {**tier, "api_key_ref": "env:MY_ROUTER"}},
        db_url=f"sqlite:///{tmp_path / 'agent.sqlite'}",
    )
    pool = KernelPool(None, size=0, root_dir=str(tmp_path))
    parts = assemble(
        admin=admin, data_dir=tmp_path / "data", root_dir=str(tmp_path), pool=pool, environ={}
    )
    try:
        assert "MY_ROUTER" in pool.env_drop
    finally:
        parts.store.close()
