"""The agent service called directly, with typed arguments: refusals are domain errors
(no HTTP status anywhere), raised before anything is written or started.

The service is assembled as the server assembles it, over a real SQLite store and Jupyter's
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
from jupyter_agent.runtime.assembly import AdminConfig, assemble
from jupyter_agent.runtime.kernels.pool import KernelPool
from jupyter_agent.runtime.service import MAX_ATTACHMENTS, AgentService, Control, View

LIMIT = 1000


def _service(tmp_path: Path, contents: bool = True) -> AgentService:
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
    return AgentService(parts)


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[AgentService]:
    root = tmp_path / "root"
    root.mkdir()
    (root / "note.txt").write_text("hello")
    (root / "big.bin").write_bytes(b"x" * (LIMIT + 1))
    (root / "folder").mkdir()
    svc = _service(tmp_path)
    yield svc
    await svc.stop()


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


async def test_refused_messages_write_and_start_nothing(service: AgentService) -> None:
    chat = await service.create_chat(owner="")
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
        error = await _refusal(service.send_message(chat_id, owner="", **kwargs))
        _refused(error, cls, reason, word)
    error = await _refusal(service.send_message("chat_nope", text="hi", owner=""))
    _refused(error, NotFound, "not_found", "chat_nope")
    # A break with no run going answers at once and starts nothing.
    answer = await service.send_message(chat_id, control=Control(hard=True), owner="")
    assert answer == {"run_id": None, "routed": "none"}
    assert service.manager.active_run_id(chat_id) is None
    stored = service.store.get_chat(chat_id)
    assert stored is not None
    assert stored.title == ""
    assert service.store.list_runs()[0] == []


async def test_chats_titles_and_unknown_chats(service: AgentService) -> None:
    chat = await service.create_chat(title="  plots  ", owner="")
    assert chat["title"] == "plots"
    error = await _refusal(service.create_chat(title="x" * 201, owner=""))
    _refused(error, BadRequest, "bad_title", "200")
    error = await _refusal(service.rename_chat(chat["id"], title="y" * 201, owner=""))
    _refused(error, BadRequest, "bad_title", "200")
    for call in (
        service.rename_chat("chat_nope", title="t", owner=""),
        service.get_chat("chat_nope", owner=""),
        service.delete_chat("chat_nope", owner=""),
        service.check_chat("chat_nope", owner=""),
        service.chat_notebook("chat_nope", owner=""),
    ):
        _refused(await _refusal(call), NotFound, "not_found", "chat_nope")
    assert [c["title"] for c in (await service.list_chats(owner=""))["chats"]] == ["plots"]


async def test_runs_unknown_or_malformed(service: AgentService) -> None:
    for run_id in ("run_01NOPE", "not-a-run-id", "../etc"):
        for call in (
            service.break_run(run_id, hard=True, owner=""),
            service.run_detail(run_id, owner=""),
            service.run_log(run_id, owner=""),
            service.run_stats(run_id, owner=""),
            service.run_notebook(run_id, owner=""),
        ):
            _refused(await _refusal(call), NotFound, "not_found", run_id)
    assert await service.list_runs(owner="") == {"runs": [], "next": None}
    _refused(await _refusal(service.list_runs(limit=0, owner="")), BadRequest, "bad_page", "limit")
    _refused(await _refusal(service.list_runs(before="garbage", owner="")), BadRequest, "bad_page")


async def test_writing_a_run_notebook_checks_the_path_first(service: AgentService) -> None:
    for path, word in (
        ("x.txt", ".ipynb"),
        ("../x.ipynb", "outside the server's root"),
        (".hidden/x.ipynb", "hidden"),
    ):
        error = await _refusal(service.write_run_notebook("run_01NOPE", path=path, owner=""))
        _refused(error, BadRequest, "bad_path", word)
    error = await _refusal(service.write_run_notebook("run_01NOPE", path="ok.ipynb", owner=""))
    _refused(error, NotFound, "not_found")


async def test_without_a_contents_manager(tmp_path: Path) -> None:
    svc = _service(tmp_path, contents=False)
    try:
        chat = await svc.create_chat(owner="")
        error = await _refusal(
            svc.send_message(chat["id"], text="hi", attachments=["a.txt"], owner="")
        )
        _refused(error, BadRequest, "bad_attachments", "not available")
        error = await _refusal(svc.write_run_notebook("run_01NOPE", owner=""))
        _refused(error, NotSupported, "no_contents")
        error = await _refusal(svc.write_chat_notebook(chat["id"], owner=""))
        _refused(error, NotSupported, "no_contents")
    finally:
        await svc.stop()


async def test_settings_refusals_are_settings_errors(service: AgentService) -> None:
    good = {"provider": "openai-compatible", "model": "m", "base_url": "http://127.0.0.1:8000/v1"}
    for tiers, word in (
        ({"planner": good}, "unknown tier"),
        ({"codegen": "anthropic"}, "object"),
        ({"codegen": {**good, "api_key": "k"}}, "api_key_ref"),
        ({"codegen": {**good, "base_url": "https://evil.example"}}, "evil.example"),
    ):
        error = await _refusal(service.update_settings(owner="", tiers=tiers))
        _refused(error, SettingsError, "bad_settings", word)
        assert isinstance(error, BadRequest)
    assert service.store.owner_tiers("") is None
    settings = await service.update_settings(owner="", tiers={"codegen": good})
    assert settings["overridden"] == ["codegen"]
    settings = await service.update_settings(owner="", tiers={"codegen": None})
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
