"""The agent service: the façade the REST and WebSocket handlers call, with typed arguments.

:class:`AgentService` answers each route of the agent API (``docs/api.md``) over the parts
:mod:`.assembly` built (store, run manager, settings, contents, ...). Contracts:

- Arguments are typed values the handlers parsed (``send_message(chat_id, text=...,
  view=View(...), attachments=[...], control=Control(hard=True))``); no method sees a
  request body, a query string or an HTTP status.
- A refusal is a :class:`~jupyter_agent.exceptions.RequestError` (``BadRequest``,
  ``NotFound``, ``Conflict``, ``NotSupported``, ...: the tree in
  :mod:`jupyter_agent.exceptions`); a locked or unreachable database is a
  ``StoreUnavailable``. The server maps each class to a status.
- Every method checks its whole input *before* writing anything, so a refused call writes
  no row and starts no run and no kernel.
- Answers are JSON-ready dicts (the REST bodies).
- Owners (issue 19): every method naming a chat, run, memory, proposal or settings takes
  a required keyword ``owner`` (the request's: :func:`jupyter_agent.server.owners.
  request_owner`). Another owner's object is ``NotFound`` with the message of a missing
  one (ids do not leak). ``admin=True`` (an admin, for support) reads any run, nothing
  more; ``list_runs(owner=ALL_OWNERS)`` lists every owner's.

Objects of the Jupyter server (its kernel manager, its contents manager) are received as
objects; this module never imports jupyter_server or tornado.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from jupyter_agent.exceptions import BadRequest, NotFound
from jupyter_agent.runtime.assembly import AdminConfig, Parts
from jupyter_agent.runtime.ids import new_id, now_iso
from jupyter_agent.runtime.loop.driver import RunConfig
from jupyter_agent.runtime.notebook.contents import shown
from jupyter_agent.runtime.notebook.exports import safe_stem, trace_stem
from jupyter_agent.runtime.secret_guard import clean_message
from jupyter_agent.runtime.settings.agents import DEFAULT_AGENT
from jupyter_agent.store.repo import Chat
from jupyter_agent.trace.log import TraceFile, read_log

__all__ = [
    "ALL_OWNERS",
    "MAX_ATTACHMENTS",
    "MAX_TITLE",
    "AdminConfig",
    "AgentService",
    "Control",
    "View",
    "chat_title",
]

log = logging.getLogger(__name__)

#: ``list_runs(owner=ALL_OWNERS)``: every owner's runs (the handler lets only admins).
ALL_OWNERS = "*"
_RUN_ID = re.compile(r"^run_[0-9A-Za-z]{1,64}\Z")  # \Z: "run_x\n" is no run id
#: The longest chat title, in characters.
MAX_TITLE = 200
#: The most attachments one message may carry.
MAX_ATTACHMENTS = 20
_TITLE_WORDS = 6


@dataclass(frozen=True, kw_only=True)
class View:
    """What the person had open when sending: a contents ``path``, a ``cell`` (id or
    index), the active cell's model id ``cell_id`` (issue 17: ``toolcaller@v5`` names it),
    a ``selection`` (text). Given to the model with the message."""

    path: str | None = None
    cell: str | int | None = None
    selection: str | None = None
    cell_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The fields that are set."""
        return {key: value for key, value in asdict(self).items() if value is not None}


@dataclass(frozen=True, kw_only=True)
class Control:
    """A control message: today only a break (``hard``: at once, else at the next drain)."""

    hard: bool = False


def chat_title(text: str, words: int = _TITLE_WORDS) -> str:
    """A chat's title from its first message: its first ``words`` words (80 chars at most)."""
    parts = text.split()
    title = " ".join(parts[:words])
    if len(parts) > words:
        title += " …"
    return title[:80]


def _no_chat(chat_id: str) -> NotFound:
    return NotFound(f"no chat {shown(chat_id)}")


def _no_run(run_id: str) -> NotFound:
    return NotFound(f"no run {shown(run_id)}")


class AgentService:
    """The agent of one Jupyter server (see the module docstring).

    Built over :class:`~jupyter_agent.runtime.assembly.Parts`; the parts tests and the
    server reach (``store``, ``manager``, ``events``, ``mailbox``, ``demo``,
    ``user_settings``, ``tier_settings``, ``notebooks``, ``pool``, ``transport``,
    ``memory``) are
    attributes. :meth:`start` (idempotent) starts the pool and recovers runs left running;
    :meth:`stop` ends everything.
    """

    def __init__(self, parts: Parts) -> None:
        self.parts = parts
        self.admin = parts.admin
        self.store = parts.store
        self.pool = parts.pool
        self.transport = parts.transport
        self.events = parts.events
        self.mailbox = parts.mailbox
        self.user_settings = parts.user_settings
        self.tier_settings = parts.tier_settings
        self.contents = parts.contents
        self.notebooks = parts.notebooks
        self.demo = parts.demo
        self.manager = parts.manager
        #: ``agent/memories``: the routes call it directly (typed, like this façade).
        self.memory = parts.memory
        #: ``agent/programs``: deploys, listings, rollbacks (issue 16), called directly.
        self.programs = parts.program_service
        #: ``agent/proposals``: the person's notebook edits (issue 17), called directly.
        self.proposals = parts.proposals
        self.data_dir: Path = parts.data_dir
        self.root_dir: str = parts.root_dir

    # --- life cycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the pool (in the background) and recover runs left running; idempotent."""
        await self.parts.start()

    async def stop(self) -> None:
        """Break every run, stop the pool, close the transport, the store and the demo."""
        await self.parts.stop()

    # --- settings and status ---------------------------------------------------------------

    @property
    def environ(self) -> Mapping[str, str]:
        """The environment credential references resolve in (the server's)."""
        return self.parts.environ

    async def know_owner(self, owner: str) -> None:
        """Read ``owner``'s settings once, off the event loop (a no-op once they are
        cached): whatever their request starts on the loop then finds them there."""
        if not self.user_settings.cached(owner):
            await asyncio.to_thread(self.user_settings.warm, owner)

    def effective_tiers(self, *, owner: str) -> dict[str, dict[str, Any]]:
        """The admin's tiers overlaid by ``owner``'s overrides."""
        return self.tier_settings.effective(owner)

    async def status(self, *, owner: str) -> dict[str, Any]:
        """``GET agent/status`` for ``owner``: ``{version, tiers, demo, history}``; each tier
        ``{provider, model, ready, key_set, reason}``; ``history``: ``{pending, failing,
        last_error}`` of the chunk summaries (:meth:`HistoryScheduler.status
        <jupyter_agent.runtime.history.jobs.HistoryScheduler.status>`). Reads the owner's
        settings (the store, at most every few seconds) in a thread."""
        tiers = await asyncio.to_thread(self.tier_settings.status, owner)
        return {**tiers, "history": self.parts.history.status()}

    def readiness_line(self, *, owner: str) -> str:
        """The one log line saying which of ``owner``'s tiers are ready, whether the demo
        runs."""
        return self.tier_settings.readiness_line(owner)

    def is_demo(self, *, owner: str) -> bool:
        """True when ``owner``'s codegen cannot run, so their runs use the demo model."""
        return bool(self.tier_settings.status(owner)["demo"])

    async def settings(self, *, owner: str) -> dict[str, Any]:
        """``GET agent/settings`` of ``owner``: the effective settings, readiness and key
        policy (:meth:`TierSettings.settings`; references, never key values)."""
        return await asyncio.to_thread(self.tier_settings.settings, owner, self.manager.ceilings)

    async def update_settings(self, *, owner: str, tiers: Mapping[str, Any]) -> dict[str, Any]:
        """``PUT agent/settings`` of ``owner``: check the tier changes ``{name: tier or
        None}`` against the key policy (``SettingsError``), store them as ``owner``'s (no
        other owner's tiers change), answer the effective settings."""
        changes = self.tier_settings.validate(tiers)
        await asyncio.to_thread(self.user_settings.update, owner, changes)
        return await self.settings(owner=owner)

    def run_config(self, agent: str = DEFAULT_AGENT, *, owner: str) -> RunConfig:
        """The snapshot a run of ``agent`` for ``owner`` starts with
        (:meth:`Parts.run_config`)."""
        return self.parts.run_config(agent, owner=owner)

    # --- agents ----------------------------------------------------------------------------

    async def agents(self, *, owner: str) -> dict[str, Any]:
        """``GET agent/agents``: ``{agents: [{name, description, soul_fingerprint, tiers:
        {tier: {provider, model}}, default}]}`` (``owner``'s tiers under each agent's), the
        default agent first."""
        return {"agents": await asyncio.to_thread(self.parts.describe_agents, owner)}

    # --- chats -----------------------------------------------------------------------------

    def _chat_json(self, chat: Chat) -> dict[str, Any]:
        body = chat.to_json()
        body["active_run_id"] = self.manager.active_run_id(chat.id)
        return body

    async def _chat(self, chat_id: str, owner: str) -> Chat:
        chat = await asyncio.to_thread(self.store.get_chat, chat_id)
        if chat is None or chat.owner != owner:  # another owner's: as if missing
            raise _no_chat(chat_id)
        return chat

    async def check_chat(self, chat_id: str, *, owner: str) -> None:
        """Nothing when ``owner`` has this chat, else ``NotFound``."""
        await self._chat(chat_id, owner)

    async def active_run_id(self, chat_id: str, *, owner: str) -> str | None:
        """The run in progress of ``owner``'s chat, if any (``NotFound``: no such chat)."""
        await self._chat(chat_id, owner)
        return self.manager.active_run_id(chat_id)

    async def list_chats(self, *, owner: str) -> dict[str, Any]:
        """``{"chats": [...]}`` of ``owner``, the most recently updated first."""
        chats = await asyncio.to_thread(lambda: self.store.list_chats(owner=owner))
        return {"chats": [self._chat_json(c) for c in chats]}

    def _title(self, title: str) -> str:
        if len(title) > MAX_TITLE:
            raise BadRequest(f"'title' is longer than {MAX_TITLE} characters", reason="bad_title")
        return self.parts.scrubber.clean(title.strip())

    async def create_chat(
        self, *, owner: str, title: str = "", agent: str = DEFAULT_AGENT
    ) -> dict[str, Any]:
        """``POST agent/chats``: ``owner``'s new chat (``title`` at most :data:`MAX_TITLE`
        chars) of ``agent`` (one this server hosts, else ``BadRequest`` reason
        ``unknown_agent``)."""
        clean = self._title(title)
        name = self.parts.agents.get(agent).name
        chat = await asyncio.to_thread(
            lambda: self.store.create_chat(
                chat_id=new_id("chat"), title=clean, now=now_iso(), agent=name, owner=owner
            )
        )
        return self._chat_json(chat)

    async def get_chat(self, chat_id: str, *, owner: str) -> dict[str, Any]:
        """The chat with its ``turns`` (oldest first) and ``active_run_id``."""
        chat = await self._chat(chat_id, owner)
        turns = await asyncio.to_thread(self.store.list_turns, chat_id)
        rows = await self.proposals.list(owner=owner, chat_id=chat_id)
        body = self._chat_json(chat)
        body["turns"] = [
            {**t.to_json(), "proposals": [p.turn_json() for p in rows if p.run_id == t.run_id]}
            for t in turns
        ]
        return body

    async def chat_history(self, chat_id: str, *, owner: str) -> dict[str, Any]:
        """``GET agent/chats/{id}/history``: ``{"chunks": [...], "pending": N}``, the chat's
        stored summaries in (level, first_turn) order and how many closed spans of the
        configured layout have none yet; ``NotFound`` for an unknown chat."""
        await self._chat(chat_id, owner)
        layout = (self.manager.chunk_turns, self.manager.l2_chunks)
        chunks = await asyncio.to_thread(self.store.list_chunks, chat_id)
        pending = await asyncio.to_thread(self.store.pending_spans, chat_id, *layout)
        return {"chunks": [c.to_json() for c in chunks], "pending": len(pending)}

    async def rename_chat(self, chat_id: str, *, owner: str, title: str) -> dict[str, Any]:
        """``PATCH agent/chats/{id}``: the renamed chat."""
        clean = self._title(title)
        await self._chat(chat_id, owner)  # a chat's owner never changes: checked once
        chat = await asyncio.to_thread(
            lambda: self.store.rename_chat(chat_id, clean, now=now_iso())
        )
        if chat is None:
            raise _no_chat(chat_id)
        return self._chat_json(chat)

    async def delete_chat(self, chat_id: str, *, owner: str) -> None:
        """``DELETE agent/chats/{id}``: hard-break its run, then delete it, its turns and
        its kept events."""
        await self._chat(chat_id, owner)
        # Its run and any run reserved after it: broken, and nothing starts after them.
        await self.manager.stop_chat(chat_id)
        self.mailbox.drain(chat_id)
        if not await asyncio.to_thread(self.store.delete_chat, chat_id):
            raise _no_chat(chat_id)
        self.events.forget(chat_id)  # catch-up of a deleted chat is a 404, never its events

    async def chat_notebook(self, chat_id: str, *, owner: str) -> dict[str, Any]:
        """The whole chat as one notebook (runs without a log are left out)."""
        from jupyter_agent.trace.notebook import chat_notebook

        chat = await self._chat(chat_id, owner)
        turns = await asyncio.to_thread(self.store.list_turns, chat_id)

        def build() -> dict[str, Any]:
            traces = [
                (read_log(self.manager.log_path(t.run_id)), t)
                for t in turns
                if _RUN_ID.match(t.run_id) and self.manager.log_path(t.run_id).exists()
            ]
            return dict(chat_notebook(traces, title=chat.title))

        return await asyncio.to_thread(build)

    async def write_chat_notebook(self, chat_id: str, *, owner: str) -> dict[str, Any]:
        """``POST agent/chats/{id}/notebook``: the chat exported into the trace folder.

        Named from the chat's title (else its id), never over an existing file (see
        :mod:`jupyter_agent.runtime.notebook.exports`); answers ``{path, created}``.
        """
        chat = await self._chat(chat_id, owner)
        nb = await self.chat_notebook(chat_id, owner=owner)
        path, created = await self.notebooks.write_new(safe_stem(chat.title, chat.id), nb)
        return {"path": path, "created": created}

    # --- messages --------------------------------------------------------------------------

    async def send_message(
        self,
        chat_id: str,
        *,
        owner: str,
        text: str = "",
        view: View | None = None,
        attachments: Sequence[str] = (),
        control: Control | None = None,
    ) -> dict[str, Any]:
        """``POST agent/chats/{id}/messages``: ``{run_id, routed}`` (see ``docs/api.md``).

        ``routed`` is ``run`` or ``mailbox``; a break-only message answers ``{run_id,
        routed: "break", state}``, or ``{run_id: null, routed: "none"}`` with no run going.
        Refused before anything happens: no text and no control (``empty_message``), a bad
        ``view.path`` or attachment path (``bad_path``), over :data:`MAX_ATTACHMENTS`
        attachments, an unreadable or too large one; an unknown chat is ``NotFound``.
        """
        view_json = self._view(view)
        if len(attachments) > MAX_ATTACHMENTS:
            raise BadRequest(
                f"at most {MAX_ATTACHMENTS} attachments per message", reason="bad_attachments"
            )
        if control is None and not text.strip():
            raise BadRequest("the message has no text", reason="empty_message")
        chat = await self._chat(chat_id, owner)
        await self.know_owner(owner)  # the run starts on the loop with the owner's tiers
        files = [await self.contents.read_attachment(p) for p in attachments]
        # No known secret a person sends (or attaches) is stored, queued or sent on.
        text, view_json, files = clean_message(self.parts.scrubber, text, view_json, files)
        answer: dict[str, Any] = {"run_id": None, "routed": "none"}
        if control is not None:
            run_id = self.manager.active_run_id(chat_id)
            if run_id is not None:
                state = await self.manager.break_run(run_id, hard=control.hard)
                answer = {"run_id": run_id, "routed": "break", "state": state or "ended"}
            if not text.strip():
                return answer
        if not chat.title:
            title = chat_title(text)
            await asyncio.to_thread(lambda: self.store.rename_chat(chat_id, title, now=now_iso()))
        return await self.manager.send(chat_id, text=text, view=view_json, attachments=files)

    def _view(self, view: View | None) -> dict[str, Any] | None:
        if view is None:
            return None
        clean = view.to_json()
        if "path" in clean:  # the kernel works in its folder: resolved (safe_paths)
            clean["path"] = self.contents.resolve(clean["path"], "'view.path'").path
        return clean or None

    async def break_run(self, run_id: str, *, owner: str, hard: bool = False) -> dict[str, Any]:
        """``POST agent/break/{run_id}``: ``{run_id, state}``; ``NotFound`` for an unknown
        run (or another owner's). Soft: at the run's next drain; hard: at once. Idempotent."""
        await self._check_run(run_id, owner)
        state = await self.manager.break_run(run_id, hard=hard)
        if state is None:
            raise _no_run(run_id)
        return {"run_id": run_id, "state": state}

    async def decide_approval(
        self,
        run_id: str,
        approval_id: str,
        *,
        owner: str,
        approve: bool,
        rest_of_turn: bool = False,
    ) -> dict[str, Any]:
        """``POST agent/runs/{run_id}/approvals/{approval_id}``: answer a wait of the run
        (``toolcaller@v5``); ``{run_id, approval_id, approve, rest_of_turn}``. NotFound for
        a wait that is not open, ApprovalDecided (409) for one already answered or ended."""
        await self._check_run(run_id, owner)
        self.manager.services.approvals.decide(
            run_id, approval_id, approve=approve, rest=rest_of_turn
        )
        return {
            "run_id": run_id,
            "approval_id": approval_id,
            "approve": approve,
            "rest_of_turn": bool(approve and rest_of_turn),
        }

    # --- runs ------------------------------------------------------------------------------

    async def list_runs(
        self,
        *,
        owner: str,
        program: str | None = None,
        limit: int = 50,
        before: str | None = None,
    ) -> dict[str, Any]:
        """``GET agent/runs``: ``{runs, next}`` of ``owner`` (:data:`ALL_OWNERS`: every
        owner's), newest first.

        ``program`` a name (every version) or ``NAME@vN``; ``""`` filters nothing. A
        ``limit`` outside 1..1000 or a malformed ``before`` cursor is ``bad_page``.
        """
        program = program or None
        of = None if owner == ALL_OWNERS else owner
        try:
            runs, cursor = await asyncio.to_thread(
                lambda: self.store.list_runs(program=program, limit=limit, before=before, owner=of)
            )
        except ValueError as exc:
            raise BadRequest(str(exc), reason="bad_page") from None
        return {"runs": [r.to_json() for r in runs], "next": cursor}

    async def _check_run(self, run_id: str, owner: str, admin: bool = False) -> None:
        """``NotFound`` unless the run is ``owner``'s (any run for an ``admin``). A run
        with no stored summary yet (reserved after a closing one) is its chat's owner's;
        one this server does not know either is the server user's (``""``)."""
        if not _RUN_ID.match(run_id):
            raise _no_run(run_id)
        if admin:
            return
        found = await asyncio.to_thread(self.store.get_run, run_id)
        if found is not None:
            run_owner = found.owner
        else:
            chat_id = self.manager.run_chat(run_id)
            chat = await asyncio.to_thread(self.store.get_chat, chat_id) if chat_id else None
            run_owner = chat.owner if chat is not None else ""
        if run_owner != owner:
            raise _no_run(run_id)

    async def _log_path(self, run_id: str, owner: str, admin: bool) -> Path:
        await self._check_run(run_id, owner, admin)
        return self.manager.log_path(run_id)

    async def _trace(self, run_id: str, owner: str, admin: bool) -> TraceFile:
        path = await self._log_path(run_id, owner, admin)
        try:
            return await asyncio.to_thread(read_log, path)
        except FileNotFoundError:
            raise NotFound(f"no trace for run {run_id!r}") from None

    async def run_detail(
        self, run_id: str, *, owner: str, admin: bool = False, full: bool = False
    ) -> dict[str, Any]:
        """``GET agent/runs/{id}``: turn record + effect log (``show_run``), and ``summary``;
        large fields are cut unless ``full``."""
        from jupyter_agent.trace.show import show_run

        trace = await self._trace(run_id, owner, admin)
        turn = await asyncio.to_thread(self.store.get_turn_by_run, run_id)
        summary = await asyncio.to_thread(self.store.get_run, run_id)
        # The run's owner's proposals (an admin reads another owner's run).
        run_owner = summary.owner if summary is not None else owner
        rows = await asyncio.to_thread(
            lambda: self.store.list_proposals(run_ids=[run_id], owner=run_owner)
        )
        record = {**turn.to_json(), "proposals": [p.turn_json() for p in rows]} if turn else None
        body = show_run(trace, record, full=full)
        body["summary"] = summary.to_json() if summary else None
        return body

    async def run_log(self, run_id: str, *, owner: str, admin: bool = False) -> bytes:
        """The run's JSONL effect log as written."""
        path = await self._log_path(run_id, owner, admin)
        try:
            return await asyncio.to_thread(path.read_bytes)
        except FileNotFoundError:
            raise NotFound(f"no trace for run {run_id!r}") from None

    async def run_stats(self, run_id: str, *, owner: str, admin: bool = False) -> dict[str, Any]:
        """``GET agent/runs/{id}/stats``: per model call usage and cost, and totals."""
        from jupyter_agent.trace.stats import run_stats

        return run_stats(await self._trace(run_id, owner, admin))

    async def run_notebook(self, run_id: str, *, owner: str, admin: bool = False) -> dict[str, Any]:
        """The turn as an nbformat v4 notebook (JSON)."""
        from jupyter_agent.trace.notebook import run_notebook

        trace = await self._trace(run_id, owner, admin)
        turn = await asyncio.to_thread(self.store.get_turn_by_run, run_id)
        return dict(await asyncio.to_thread(lambda: run_notebook(trace, turn=turn)))

    async def write_run_notebook(
        self, run_id: str, *, owner: str, path: str | None = None, overwrite: bool = False
    ) -> dict[str, Any]:
        """``POST agent/runs/{id}/notebook``: ``{path, created}``.

        Without ``path``: into the trace folder, named ``<chat title> - turn <k>``, never
        over an existing file; with ``path`` (a contents path ending in ``.ipynb``,
        ``bad_path`` else): there, ``Conflict`` if it exists unless ``overwrite`` (see
        :mod:`jupyter_agent.runtime.notebook.exports`).
        """
        target = None if path is None else self.notebooks.target(path)
        self.notebooks.check()
        nb = await self.run_notebook(run_id, owner=owner)
        if target is not None:
            written = await self.notebooks.write_at(target, nb, overwrite=overwrite)
            return {"path": written, "created": True}
        chat_id = (nb.get("metadata", {}).get("jupyter_agent") or {}).get("chat_id")
        chat = await asyncio.to_thread(self.store.get_chat, str(chat_id)) if chat_id else None
        if chat is not None and chat.owner != owner:  # never another owner's title
            chat = None
        turns = await asyncio.to_thread(self.store.list_turns, chat.id) if chat else []
        number = next((k for k, t in enumerate(turns, 1) if t.run_id == run_id), None)
        stem = trace_stem(chat.title if chat else "", run_id, number)
        written, created = await self.notebooks.write_new(stem, nb)
        return {"path": written, "created": created}
