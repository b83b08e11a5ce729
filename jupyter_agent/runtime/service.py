"""The agent service: everything the REST and WebSocket handlers call, composed in one place.

:class:`AgentService` owns the store, the kernel pool, the transport, the mailbox, the
event bus, the run manager, the user's settings and the demo model. Handlers (``server/``)
translate HTTP into these calls and :class:`ServiceError` back into HTTP; managers do the
work. Every method validates its whole input *before* writing anything, so a refused call
writes no row and starts no run and no kernel.

Objects of the Jupyter server (its kernel manager, its contents manager) are received as
objects; this module never imports jupyter_server or tornado. Contents manager calls may be
sync or async (both kinds of manager exist).
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import logging
import mimetypes
import os
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from traitlets.config import Config

from jupyter_agent.runtime.demo import DemoModel
from jupyter_agent.runtime.driver import RunConfig, RunServices
from jupyter_agent.runtime.events import EventBus
from jupyter_agent.runtime.exports import (
    DEFAULT_FOLDER,
    NotebookWriter,
    check_notebook_target,
    safe_stem,
    trace_stem,
)
from jupyter_agent.runtime.ids import new_id, now_iso
from jupyter_agent.runtime.keypolicy import KeyPolicy
from jupyter_agent.runtime.mailbox import Mailbox
from jupyter_agent.runtime.requests import (
    ServiceError,
    bad,
    chat_title,
    check_control,
    check_relative_path,
    check_view,
    not_found,
)
from jupyter_agent.runtime.runs import RunManager
from jupyter_agent.runtime.settings import SettingsError, UserSettings
from jupyter_agent.runtime.spaces import load_spaces
from jupyter_agent.runtime.tiersettings import TierSettings
from jupyter_agent.store.repo import Chat, Store
from jupyter_agent.trace.log import TraceFile, read_log

__all__ = ["AdminConfig", "AgentService", "ServiceError", "chat_title", "check_relative_path"]

log = logging.getLogger(__name__)

_RUN_ID = re.compile(r"^run_[0-9A-Za-z]{1,64}$")
_MAX_TITLE = 200
_MAX_ATTACHMENTS = 20


@dataclass(frozen=True, kw_only=True)
class AdminConfig:
    """What the admin configured (the ``JupyterAgent`` traits): trusted as given."""

    tiers: dict[str, dict[str, Any]]
    key_policy: KeyPolicy = field(default_factory=KeyPolicy)
    #: What to warn the admin about once at start (legacy traits; never a key value).
    policy_warnings: tuple[str, ...] = ()
    max_attachment_bytes: int = 10 * 1024 * 1024
    version: str = ""
    trace_dir: str = DEFAULT_FOLDER


async def _maybe(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class AgentService:
    """The agent of one Jupyter server (see the module docstring).

    Construct it synchronously (opens the database); :meth:`start` (idempotent) logs
    which tiers are ready (one INFO line in ``server_log``), starts the pool and recovers
    runs left running; :meth:`stop` ends everything.
    """

    def __init__(
        self,
        *,
        admin: AdminConfig,
        store: Store,
        pool: Any,
        transport: Any,
        data_dir: Path,
        root_dir: str,
        contents_manager: Any = None,
        environ: Mapping[str, str] | None = None,
        server_log: logging.Logger | None = None,
        config: Config | None = None,
    ) -> None:
        self.admin = admin
        self.server_log = server_log or log
        self.store = store
        self.pool = pool
        self.transport = transport
        self.data_dir = Path(data_dir)
        self.root_dir = os.path.abspath(root_dir)
        self.contents_manager = contents_manager
        self._environ = environ
        self.events = EventBus()
        self.mailbox = Mailbox()
        self.user_settings = UserSettings(self.data_dir / "settings.json")
        self.tier_settings = TierSettings(
            admin_tiers=admin.tiers,
            policy=admin.key_policy,
            user=self.user_settings,
            environ=lambda: self.environ,
            version=admin.version,
        )
        self.notebooks = NotebookWriter(contents_manager, admin.trace_dir)
        self.demo = DemoModel()
        services = RunServices(
            transport=transport,
            pool=pool,
            store=store,
            mailbox=self.mailbox,
            events=self.events,
            root_dir=self.root_dir,
        )
        self.manager = RunManager(  # its traits (the run ceilings) read ``config``
            services=services,
            run_config=self.run_config,
            runs_dir=self.data_dir / "runs",
            config=config,
        )
        self._started: asyncio.Task[None] | None = None
        self._stopped = False

    # --- life cycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the pool (in the background) and recover runs left running; idempotent."""
        if self._started is None:
            self._started = asyncio.ensure_future(self._start())
        await asyncio.shield(self._started)

    async def _start(self) -> None:
        for warning in self.admin.policy_warnings:
            self.server_log.warning("jupyter-agent: %s", warning)
        # Once, in the server's log: which tiers are ready, whether the demo runs.
        self.server_log.info("%s", self.readiness_line())
        await self.pool.start()
        recovered = await self.manager.recover()
        if recovered:
            log.info("jupyter-agent: interrupted runs recovered: %d", len(recovered))

    async def stop(self) -> None:
        """Break every run, stop the pool, close the transport, the store and the demo."""
        if self._stopped:
            return
        self._stopped = True
        try:
            await self.manager.shutdown()
        finally:
            try:
                await self.pool.stop()
            finally:
                await self.transport.aclose()
                self.store.close()
                self.demo.stop()

    # --- settings and status ---------------------------------------------------------------

    @property
    def environ(self) -> Mapping[str, str]:
        """The environment credential references resolve in (the server's)."""
        return os.environ if self._environ is None else self._environ

    def effective_tiers(self) -> dict[str, dict[str, Any]]:
        """The admin's tiers overlaid by the user's overrides."""
        return self.tier_settings.effective()

    def status(self) -> dict[str, Any]:
        """``GET agent/status``: ``{version, tiers, demo}``; each tier ``{provider, model,
        ready, key_set, reason}``."""
        return self.tier_settings.status()

    def readiness_line(self) -> str:
        """The one log line saying which tiers are ready and whether the demo runs."""
        return self.tier_settings.readiness_line()

    def is_demo(self) -> bool:
        """True when codegen cannot run, so runs use the demo model."""
        return bool(self.status()["demo"])

    def settings(self) -> dict[str, Any]:
        """``GET agent/settings``: the effective settings, readiness and key policy
        (:meth:`TierSettings.settings`; references, never key values)."""
        return self.tier_settings.settings(self.manager.ceilings)

    async def put_settings(self, body: Any) -> dict[str, Any]:
        """``PUT agent/settings``: validate, store the user's overrides, answer the settings."""
        try:
            changes = self.tier_settings.validate(body)
        except SettingsError as exc:
            raise bad(str(exc), "bad_settings") from None
        await asyncio.to_thread(self.user_settings.update, changes)
        return self.settings()

    def run_config(self) -> RunConfig:
        """The snapshot a run starts with: effective tiers (or the demo), ceilings, spaces.

        Tiers that are not ready are left out (they fall back to codegen); when codegen is
        not ready, the demo model takes its place.
        """
        tiers, demo = self.tier_settings.ready_tiers()
        profiles: dict[str, dict[str, Any]] = {}
        if demo:
            tiers["codegen"] = self.demo.tier()
            profiles = self.demo.profiles()
        spaces = load_spaces(data_dir=self.data_dir, root_dir=Path(self.root_dir))
        return RunConfig(
            tiers=tiers, ceilings=self.manager.ceilings, spaces=spaces, profiles=profiles
        )

    # --- chats -----------------------------------------------------------------------------

    def _chat_json(self, chat: Chat) -> dict[str, Any]:
        body = chat.to_json()
        body["active_run_id"] = self.manager.active_run_id(chat.id)
        return body

    async def _chat(self, chat_id: str) -> Chat:
        chat = await asyncio.to_thread(self.store.get_chat, chat_id)
        if chat is None:
            raise not_found(f"no chat {chat_id!r}")
        return chat

    async def chat_exists(self, chat_id: str) -> bool:
        """True when the chat is stored."""
        return await asyncio.to_thread(self.store.get_chat, chat_id) is not None

    async def list_chats(self) -> dict[str, Any]:
        """``{"chats": [...]}``, the most recently updated first."""
        chats = await asyncio.to_thread(self.store.list_chats)
        return {"chats": [self._chat_json(c) for c in chats]}

    @staticmethod
    def _title(body: Mapping[str, Any], *, required: bool) -> str:
        title = body.get("title")
        if title is None and not required:
            return ""
        if not isinstance(title, str):
            raise bad("'title' must be a string", "bad_title")
        if len(title) > _MAX_TITLE:
            raise bad(f"'title' is longer than {_MAX_TITLE} characters", "bad_title")
        return title.strip()

    async def create_chat(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST agent/chats`` ``{title?}``: the new chat."""
        title = self._title(body, required=False)
        chat = await asyncio.to_thread(
            lambda: self.store.create_chat(chat_id=new_id("chat"), title=title, now=now_iso())
        )
        return self._chat_json(chat)

    async def get_chat(self, chat_id: str) -> dict[str, Any]:
        """The chat with its ``turns`` (oldest first) and ``active_run_id``."""
        chat = await self._chat(chat_id)
        turns = await asyncio.to_thread(self.store.list_turns, chat_id)
        body = self._chat_json(chat)
        body["turns"] = [t.to_json() for t in turns]
        return body

    async def rename_chat(self, chat_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``PATCH agent/chats/{id}`` ``{title}``: the renamed chat."""
        title = self._title(body, required=True)
        chat = await asyncio.to_thread(
            lambda: self.store.rename_chat(chat_id, title, now=now_iso())
        )
        if chat is None:
            raise not_found(f"no chat {chat_id!r}")
        return self._chat_json(chat)

    async def delete_chat(self, chat_id: str) -> None:
        """``DELETE agent/chats/{id}``: hard-break its run, then delete it and its turns."""
        await self._chat(chat_id)
        # Its run and any run reserved after it: broken, and nothing starts after them.
        await self.manager.stop_chat(chat_id)
        self.mailbox.drain(chat_id)
        if not await asyncio.to_thread(self.store.delete_chat, chat_id):
            raise not_found(f"no chat {chat_id!r}")

    async def chat_notebook(self, chat_id: str) -> dict[str, Any]:
        """The whole chat as one notebook (runs without a log are left out)."""
        from jupyter_agent.trace.notebook import chat_notebook

        chat = await self._chat(chat_id)
        turns = await asyncio.to_thread(self.store.list_turns, chat_id)

        def build() -> dict[str, Any]:
            traces = [
                (read_log(self.manager.log_path(t.run_id)), t)
                for t in turns
                if _RUN_ID.match(t.run_id) and self.manager.log_path(t.run_id).exists()
            ]
            return dict(chat_notebook(traces, title=chat.title))

        return await asyncio.to_thread(build)

    async def write_chat_notebook(self, chat_id: str) -> dict[str, Any]:
        """``POST agent/chats/{id}/notebook``: the chat exported into the trace folder.

        Named from the chat's title (else its id), never over an existing file (see
        :mod:`jupyter_agent.runtime.exports`); answers ``{path, created}``.
        """
        chat = await self._chat(chat_id)
        nb = await self.chat_notebook(chat_id)
        path, created = await self.notebooks.write_new(safe_stem(chat.title, chat.id), nb)
        return {"path": path, "created": created}

    # --- messages --------------------------------------------------------------------------

    async def send_message(self, chat_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST agent/chats/{id}/messages``: ``{run_id, routed}`` (see the server docs).

        ``routed`` is ``run`` or ``mailbox``; a break-only message answers ``{run_id,
        routed: "break", state}``, or ``{run_id: null, routed: "none"}`` with no run going.
        """
        text = body.get("text", "")
        if not isinstance(text, str):
            raise bad("'text' must be a string", "bad_text")
        control = check_control(body.get("control"))
        view = check_view(body.get("view"))
        paths = body.get("attachments") or []
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise bad("'attachments' must be a list of contents paths", "bad_attachments")
        if len(paths) > _MAX_ATTACHMENTS:
            raise bad(f"at most {_MAX_ATTACHMENTS} attachments per message", "bad_attachments")
        if control is None and not text.strip():
            raise bad("the message has no text", "empty_message")
        chat = await self._chat(chat_id)
        files = [await self._read_attachment(p) for p in paths]
        answer: dict[str, Any] = {"run_id": None, "routed": "none"}
        if control is not None:
            run_id = self.manager.active_run_id(chat_id)
            if run_id is not None:
                state = await self.manager.break_run(run_id, hard=bool(control.get("hard")))
                answer = {"run_id": run_id, "routed": "break", "state": state or "ended"}
            if not text.strip():
                return answer
        if not chat.title:
            title = chat_title(text)
            await asyncio.to_thread(lambda: self.store.rename_chat(chat_id, title, now=now_iso()))
        return self.manager.send(chat_id, text=text, view=view, attachments=files)

    async def _read_attachment(self, raw: str) -> dict[str, Any]:
        path = check_relative_path(raw, "attachment")
        cm = self.contents_manager
        if cm is None:
            raise bad("attachments are not available on this server", "bad_attachments")
        limit = self.admin.max_attachment_bytes
        try:
            model = await _maybe(cm.get(path, content=False))
            if model.get("type") == "directory":
                raise bad(f"attachment {path!r} is a folder", "bad_attachments")
            size = model.get("size")
            if isinstance(size, int) and size > limit:
                raise bad(f"attachment {path!r} is over {limit} bytes", "attachment_too_large")
            model = await _maybe(cm.get(path, content=True, type="file", format="base64"))
        except ServiceError:
            raise
        except Exception as exc:  # the contents manager's 404/400 (tornado HTTPError), OSError
            status = getattr(exc, "status_code", None)
            why = "not found" if status == 404 else "cannot be read"
            raise bad(f"attachment {path!r} {why}", "bad_attachments") from None
        data = base64.b64decode(str(model.get("content") or ""))
        if len(data) > limit:
            raise bad(f"attachment {path!r} is over {limit} bytes", "attachment_too_large")
        media_type = model.get("mimetype") or mimetypes.guess_type(path)[0]
        return {
            "name": posixpath.basename(path),
            "media_type": media_type or "application/octet-stream",
            "data": base64.b64encode(data).decode("ascii"),
        }

    async def break_run(self, run_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST agent/break/{run_id}`` ``{hard?}``: ``{run_id, state}``; 404 unknown run."""
        hard = body.get("hard", False)
        if not isinstance(hard, bool):
            raise bad("'hard' must be true or false", "bad_hard")
        if not _RUN_ID.match(run_id):
            raise not_found(f"no run {run_id!r}")
        state = await self.manager.break_run(run_id, hard=hard)
        if state is None:
            raise not_found(f"no run {run_id!r}")
        return {"run_id": run_id, "state": state}

    # --- runs ------------------------------------------------------------------------------

    async def list_runs(
        self, *, program: str | None, limit: str | None, before: str | None
    ) -> dict[str, Any]:
        """``GET agent/runs``: ``{runs, next}``, newest first."""
        try:
            count = 50 if limit is None else int(limit)
        except ValueError:
            raise bad(f"'limit' must be an integer, not {limit!r}", "bad_limit") from None
        program = program or None  # ?program= (an empty form field) filters nothing
        try:
            runs, cursor = await asyncio.to_thread(
                lambda: self.store.list_runs(program=program, limit=count, before=before)
            )
        except ValueError as exc:
            raise bad(str(exc), "bad_page") from None
        return {"runs": [r.to_json() for r in runs], "next": cursor}

    def _log_path(self, run_id: str) -> Path:
        if not _RUN_ID.match(run_id):
            raise not_found(f"no run {run_id!r}")
        return self.manager.log_path(run_id)

    async def _trace(self, run_id: str) -> TraceFile:
        path = self._log_path(run_id)
        try:
            return await asyncio.to_thread(read_log, path)
        except FileNotFoundError:
            raise not_found(f"no trace for run {run_id!r}") from None

    async def run_detail(self, run_id: str, *, full: bool = False) -> dict[str, Any]:
        """``GET agent/runs/{id}``: turn record + effect log (``show_run``), and ``summary``."""
        from jupyter_agent.trace.show import show_run

        trace = await self._trace(run_id)
        turn = await asyncio.to_thread(self.store.get_turn_by_run, run_id)
        summary = await asyncio.to_thread(self.store.get_run, run_id)
        body = show_run(trace, turn.to_json() if turn else None, full=full)
        body["summary"] = summary.to_json() if summary else None
        return body

    async def run_log(self, run_id: str) -> bytes:
        """The run's JSONL effect log as written."""
        path = self._log_path(run_id)
        try:
            return await asyncio.to_thread(path.read_bytes)
        except FileNotFoundError:
            raise not_found(f"no trace for run {run_id!r}") from None

    async def run_stats(self, run_id: str) -> dict[str, Any]:
        """``GET agent/runs/{id}/stats``: per model call usage and cost, and totals."""
        from jupyter_agent.trace.stats import run_stats

        return run_stats(await self._trace(run_id))

    async def run_notebook(self, run_id: str) -> dict[str, Any]:
        """The turn as an nbformat v4 notebook (JSON)."""
        from jupyter_agent.trace.notebook import run_notebook

        trace = await self._trace(run_id)
        turn = await asyncio.to_thread(self.store.get_turn_by_run, run_id)
        return dict(await asyncio.to_thread(lambda: run_notebook(trace, turn=turn)))

    async def write_run_notebook(self, run_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``POST agent/runs/{id}/notebook`` ``{path?, overwrite?}``: ``{path, created}``.

        Without ``path``: into the trace folder, named ``<chat title> - turn <k>``, never
        over an existing file; with ``path``: there, 409 if it exists unless ``overwrite``
        (see :mod:`jupyter_agent.runtime.exports`).
        """
        path, overwrite = check_notebook_target(body)
        self.notebooks.check()
        nb = await self.run_notebook(run_id)
        if path is not None:
            await self.notebooks.write_at(path, nb, overwrite=overwrite)
            return {"path": path, "created": True}
        chat_id = (nb.get("metadata", {}).get("jupyter_agent") or {}).get("chat_id")
        chat = await asyncio.to_thread(self.store.get_chat, str(chat_id)) if chat_id else None
        turns = await asyncio.to_thread(self.store.list_turns, chat.id) if chat else []
        number = next((k for k, t in enumerate(turns, 1) if t.run_id == run_id), None)
        stem = trace_stem(chat.title if chat else "", run_id, number)
        path, created = await self.notebooks.write_new(stem, nb)
        return {"path": path, "created": created}
