"""The chats service: chats and their messages, with typed arguments.

:class:`ChatService` answers the chat routes of the agent API (``agent/chats``, a chat, its
history's summaries, its notebook, ``POST agent/chats/{id}/messages``) and the MCP tools
that chat. A message goes to the run manager (:mod:`.manager`), which starts a run, queues
it in the running run's mailbox or reserves the next run. Contracts (as every service's of
the runtime):

- Arguments are typed values the handlers parsed (``send(chat_id, owner=..., text=...,
  view=View(...), attachments=[...], control=Control(hard=True))``); no method sees a
  request body, a query string or an HTTP status.
- A refusal is a :class:`~jupyter_agent.exceptions.RequestError` (``BadRequest``,
  ``NotFound``, ...); a locked or unreachable database is ``StoreUnavailable``. Every
  method checks its whole input *before* writing anything, so a refused call writes no row
  and starts no run and no kernel.
- Answers are JSON-ready dicts (the REST bodies).
- Owners: every method takes a required keyword ``owner`` (the request's). Another owner's
  chat is ``NotFound`` with the message of a missing one (ids do not leak).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from jupyter_agent.exceptions import BadRequest, Forbidden, NotFound
from jupyter_agent.runtime.events import EventBus
from jupyter_agent.runtime.ids import new_id, now_iso
from jupyter_agent.runtime.loop.fed_runs import Reruns
from jupyter_agent.runtime.memory.counts import counts_of
from jupyter_agent.runtime.notebook.contents import Contents, shown
from jupyter_agent.runtime.notebook.exports import NotebookWriter, safe_stem
from jupyter_agent.runtime.notebook.proposals import ProposalService
from jupyter_agent.runtime.runs.mailbox import Mailbox
from jupyter_agent.runtime.runs.manager import RunManager
from jupyter_agent.runtime.runs.run_service import is_run_id
from jupyter_agent.runtime.secret_guard import clean_message
from jupyter_agent.runtime.secrets import Scrubber
from jupyter_agent.runtime.settings.agents import DEFAULT_AGENT, AgentRegistry
from jupyter_agent.store.repo import Chat, Store
from jupyter_agent.trace.log import read_log

__all__ = ["MAX_ATTACHMENTS", "MAX_TITLE", "ChatService", "Control", "View", "chat_title"]

#: The longest chat title, in characters.
MAX_TITLE = 200
#: The most attachments one message may carry.
MAX_ATTACHMENTS = 20


@dataclass(frozen=True, kw_only=True)
class View:
    """What the person had open when sending: a contents ``path``, a ``cell`` (id or
    index), the active cell's model id ``cell_id`` (``toolcaller@v5`` names it), a
    ``selection`` (text), and the ``@`` ``mentions`` of cells and of the person's kernel's
    variables (``{kind: "cell", cell, cell_id?}``, ``{kind: "variable", name, summary?}``).
    Given to the model with the message."""

    path: str | None = None
    cell: str | int | None = None
    selection: str | None = None
    cell_id: str | None = None
    mentions: tuple[dict[str, Any], ...] | None = None

    def to_json(self) -> dict[str, Any]:
        """The fields that are set (``mentions`` as a list)."""
        out = {key: value for key, value in asdict(self).items() if value is not None}
        if "mentions" in out:
            out["mentions"] = [dict(m) for m in out["mentions"]]
        return out


@dataclass(frozen=True, kw_only=True)
class Control:
    """A control message: today only a break (``hard``: at once, else at the next drain)."""

    hard: bool = False


def chat_title(text: str, limit: int = MAX_TITLE) -> str:
    """A chat's title from its first message: its first non-blank line, whitespace
    collapsed, whole up to ``limit`` characters (cut at a word there, never marked: the
    panel cuts what does not fit when it shows it, the stored title stays whole)."""
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    title = " ".join(line.split())
    if len(title) <= limit:
        return title
    cut = title[:limit]
    return cut.rsplit(" ", 1)[0] if " " in cut[limit // 2 :] else cut


def _no_chat(chat_id: str) -> NotFound:
    return NotFound(f"no chat {shown(chat_id)}")


class ChatService:
    """Chats and messages of one server's agent (see the module docstring).

    ``events`` is the event bus the chats' events go out on (the events socket and the MCP
    ``chat`` tool subscribe to it); ``know_owner`` reads an owner's settings off the event
    loop before their run starts on it; ``model_problem(model, agent=, owner=)`` says why a
    chat may not answer with a model (``RunConfigs.model_problem``; blocking).
    """

    def __init__(
        self,
        *,
        store: Store,
        manager: RunManager,
        mailbox: Mailbox,
        events: EventBus,
        contents: Contents,
        notebooks: NotebookWriter,
        proposals: ProposalService,
        scrubber: Scrubber,
        agents: AgentRegistry,
        know_owner: Callable[[str], Awaitable[None]],
        model_problem: Callable[..., str | None] | None = None,
        reruns: Reruns | None = None,
    ) -> None:
        self._store = store
        self._manager = manager
        self._mailbox = mailbox
        self.events = events
        self._contents = contents
        self._notebooks = notebooks
        self._proposals = proposals
        self._scrubber = scrubber
        self._agents = agents
        self._know_owner = know_owner
        self._model_problem = model_problem
        self._reruns = reruns  # a chat's reruns stop with it

    def _json(self, chat: Chat) -> dict[str, Any]:
        body = chat.to_json()
        body["active_run_id"] = self._manager.active_run_id(chat.id)
        return body

    async def _chat(self, chat_id: str, owner: str) -> Chat:
        chat = await asyncio.to_thread(self._store.get_chat, chat_id)
        if chat is None or chat.owner != owner:  # another owner's: as if missing
            raise _no_chat(chat_id)
        return chat

    async def _chat_marked(self, chat_id: str, owner: str) -> tuple[Chat, int]:
        """:meth:`_chat` and the store's activation mark, in one read."""
        chat, mark = await asyncio.to_thread(self._store.chat_marked, chat_id)
        if chat is None or chat.owner != owner:
            raise _no_chat(chat_id)
        return chat, mark

    def _title(self, title: str) -> str:
        if len(title) > MAX_TITLE:
            raise BadRequest(f"'title' is longer than {MAX_TITLE} characters", reason="bad_title")
        return self._scrubber.clean(title.strip())

    # --- chats -----------------------------------------------------------------------------

    async def check(self, chat_id: str, *, owner: str) -> None:
        """Nothing when ``owner`` has this chat, else ``NotFound``."""
        await self._chat(chat_id, owner)

    async def active_run_id(self, chat_id: str, *, owner: str) -> str | None:
        """The run in progress of ``owner``'s chat, if any (``NotFound``: no such chat)."""
        await self._chat(chat_id, owner)
        return self._manager.active_run_id(chat_id)

    async def list(self, *, owner: str) -> dict[str, Any]:
        """``{"chats": [...]}`` of ``owner``, the most recently updated first."""
        chats = await asyncio.to_thread(lambda: self._store.list_chats(owner=owner))
        return {"chats": [self._json(c) for c in chats]}

    async def create(
        self, *, owner: str, title: str = "", agent: str = DEFAULT_AGENT
    ) -> dict[str, Any]:
        """``POST agent/chats``: ``owner``'s new chat (``title`` at most :data:`MAX_TITLE`
        chars) of ``agent`` (one this server hosts, else ``BadRequest`` reason
        ``unknown_agent``)."""
        clean = self._title(title)
        name = self._agents.get(agent).name
        chat = await asyncio.to_thread(
            lambda: self._store.create_chat(
                chat_id=new_id("chat"), title=clean, now=now_iso(), agent=name, owner=owner
            )
        )
        return self._json(chat)

    async def fork(
        self, chat_id: str, *, owner: str, turn: int, title: str | None = None
    ) -> dict[str, Any]:
        """``POST agent/chats/{id}/fork``: ``owner``'s new chat whose history is the
        chat's turns 1..``turn`` (copies, with the summaries within them), named ``title``
        (default: the chat's title, marked as a fork) and recording its origin
        (``forked_from``). ``BadRequest`` ``bad_turn`` for a turn outside 0..the chat's
        turn count; ``NotFound`` for another owner's or a missing chat."""
        source = await self._chat(chat_id, owner)
        clean = self._title(title if title is not None else _fork_title(source.title, turn))
        try:
            chat = await asyncio.to_thread(
                lambda: self._store.fork_chat(
                    chat_id,
                    upto=turn,
                    chat_id=new_id("chat"),
                    title=clean,
                    now=now_iso(),
                    make_id=new_id,
                )
            )
        except ValueError as err:
            raise BadRequest(str(err), reason="bad_turn") from None
        if chat is None:
            raise _no_chat(chat_id)
        counts_of(self._store).forget(owner)  # more turns: recall counts read again
        return self._json(chat)

    async def import_notebook(
        self, notebook: Any, *, owner: str, title: str | None = None
    ) -> dict[str, Any]:
        """``POST agent/chats/import``: ``owner``'s new chat (of the default agent) whose
        turns are an exported chat notebook's (:mod:`~jupyter_agent.runtime.notebook.chat_import`),
        so the conversation goes on here. Named ``title``, default "Imported: <the export's
        title>". ``BadRequest`` ``not_an_export`` (nothing made) for another notebook."""
        from jupyter_agent.runtime.notebook.chat_import import import_title, imported_turns

        chat_id, now = new_id("chat"), now_iso()

        def read() -> tuple[list[Any], str]:
            clean = self._scrubber.clean_json(notebook)  # an imported turn holds no secret
            turns = imported_turns(clean, chat_id=chat_id, now=now, make_id=new_id)
            return turns, import_title(clean)

        turns, found = await asyncio.to_thread(read)
        if title is None:
            title = _imported_title(found)
        clean = self._title(title)
        name = self._agents.get(DEFAULT_AGENT).name
        chat = await asyncio.to_thread(
            lambda: self._store.import_chat(
                chat_id=chat_id, title=clean, now=now, turns=turns, agent=name, owner=owner
            )
        )
        counts_of(self._store).forget(owner)  # more turns: recall counts read again
        return self._json(chat)

    async def get(self, chat_id: str, *, owner: str) -> dict[str, Any]:
        """The chat with its ``turns`` (oldest first) and ``active_run_id``."""
        chat = await self._chat(chat_id, owner)
        turns = await asyncio.to_thread(self._store.list_turns, chat_id)
        rows = await self._proposals.list(owner=owner, chat_id=chat_id)
        body = self._json(chat)
        body["turns"] = [
            {**t.to_json(), "proposals": [p.turn_json() for p in rows if p.run_id == t.run_id]}
            for t in turns
        ]
        # A turn stored before secrets were scrubbed in every form may still hold one.
        return self._scrubber.clean_json(body)

    async def history(self, chat_id: str, *, owner: str) -> dict[str, Any]:
        """``GET agent/chats/{id}/history``: ``{"chunks": [...], "pending": N}``, the chat's
        stored summaries in (level, first_turn) order and how many closed spans of the
        configured layout have none yet; ``NotFound`` for an unknown chat."""
        await self._chat(chat_id, owner)
        layout = (self._manager.chunk_turns, self._manager.l2_chunks)
        chunks = await asyncio.to_thread(self._store.list_chunks, chat_id)
        pending = await asyncio.to_thread(self._store.pending_spans, chat_id, *layout)
        return {"chunks": [c.to_json() for c in chunks], "pending": len(pending)}

    async def rename(self, chat_id: str, *, owner: str, title: str) -> dict[str, Any]:
        """``PATCH agent/chats/{id}``: the renamed chat."""
        clean = self._title(title)
        await self._chat(chat_id, owner)  # a chat's owner never changes: checked once
        chat = await asyncio.to_thread(
            lambda: self._store.rename_chat(chat_id, clean, now=now_iso())
        )
        if chat is None:
            raise _no_chat(chat_id)
        return self._json(chat)

    async def set_model(self, chat_id: str, *, owner: str, model: str | None) -> dict[str, Any]:
        """``PATCH agent/chats/{id}`` ``{model}``: the chat answering with ``model`` from
        its next run on (None: its agent's codegen tier again); the chat. ``BadRequest``
        ``bad_model`` (nothing stored) for a model it may not use, saying why."""
        chat = await self._chat(chat_id, owner)
        if model is not None and self._model_problem is not None:
            await self._know_owner(owner)
            problem = await asyncio.to_thread(
                self._model_problem, model, agent=chat.agent, owner=owner
            )
            if problem:
                raise BadRequest(problem, reason="bad_model")
        changed = await asyncio.to_thread(
            lambda: self._store.set_chat_model(chat_id, model, now=now_iso())
        )
        if changed is None:
            raise _no_chat(chat_id)
        self._manager.slots.know(chat_id, agent=chat.agent, owner=chat.owner, model=model)
        return self._json(changed)

    async def delete(self, chat_id: str, *, owner: str, may_break: bool = True) -> None:
        """``DELETE agent/chats/{id}``: hard-break its run, then delete it, its turns and
        its kept events. Without ``may_break`` a chat whose run is going is ``Forbidden``:
        checked right before the break, with no wait between (a run that starts after the
        caller looked is still refused, never broken)."""
        await self._chat(chat_id, owner)
        if not may_break and self._manager.active_run_id(chat_id) is not None:
            raise Forbidden(
                "deleting a chat with a running turn stops it: that needs 'execute'",
                reason="forbidden",
            )
        # Its run and any run reserved after it: broken, and nothing starts after them.
        await self._manager.stop_chat(chat_id)
        if self._reruns is not None:
            await self._reruns.stop_chat(chat_id)
        self._mailbox.drain(chat_id)
        if not await asyncio.to_thread(self._store.delete_chat, chat_id):
            raise _no_chat(chat_id)
        counts_of(self._store).forget(owner)  # its turns are gone: recall counts read again
        self.events.forget(chat_id)  # catch-up of a deleted chat is a 404, never its events

    async def notebook(self, chat_id: str, *, owner: str) -> dict[str, Any]:
        """The whole chat as one notebook (runs without a log are left out)."""
        from jupyter_agent.trace.notebook import chat_notebook

        chat = await self._chat(chat_id, owner)
        turns = await asyncio.to_thread(self._store.list_turns, chat_id)

        def build() -> dict[str, Any]:
            traces = [
                (read_log(self._manager.log_path(t.run_id)), t)
                for t in turns
                if is_run_id(t.run_id) and self._manager.log_path(t.run_id).exists()
            ]
            nb = chat_notebook(
                traces,
                title=chat.title,
                forked_from=chat.forked_from,
                blobs_dir=self._manager.runs_dir,  # notebook.fetch copies: runs_dir/blobs/
            )
            return self._scrubber.clean_json(dict(nb))

        return await asyncio.to_thread(build)

    async def write_notebook(self, chat_id: str, *, owner: str) -> dict[str, Any]:
        """``POST agent/chats/{id}/notebook``: the chat exported into the trace folder.

        Named from the chat's title (else its id), never over an existing file (see
        :mod:`jupyter_agent.runtime.notebook.exports`); answers ``{path, created}``.
        """
        chat = await self._chat(chat_id, owner)
        nb = await self.notebook(chat_id, owner=owner)
        path, created = await self._notebooks.write_new(safe_stem(chat.title, chat.id), nb)
        return {"path": path, "created": created}

    # --- messages --------------------------------------------------------------------------

    async def send(
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
        chat, mark = await self._chat_marked(chat_id, owner)
        await self._know_owner(owner)  # the run starts on the loop with the owner's tiers
        files = [await self._contents.read_attachment(p) for p in attachments]
        # No known secret a person sends (or attaches) is stored, queued or sent on.
        text, view_json, files = clean_message(self._scrubber, text, view_json, files)
        answer: dict[str, Any] = {"run_id": None, "routed": "none"}
        if control is not None:
            run_id = self._manager.active_run_id(chat_id)
            if run_id is not None:
                state = await self._manager.break_run(run_id, hard=control.hard)
                answer = {"run_id": run_id, "routed": "break", "state": state or "ended"}
            if not text.strip():
                return answer
        # The title is stored with the message (one transaction, one commit).
        title = None if chat.title else chat_title(text)
        self._manager.slots.know(chat_id, agent=chat.agent, owner=chat.owner, model=chat.model)
        # The run this message starts, if it does, resolves its program with this read's
        # mark (no second read); cleared after, so no later start takes it stale.
        slot = self._manager.slots.slot(chat_id)
        slot.activations = mark
        try:
            return await self._manager.send(
                chat_id, text=text, view=view_json, attachments=files, title=title
            )
        finally:
            slot.activations = None

    def _view(self, view: View | None) -> dict[str, Any] | None:
        if view is None:
            return None
        clean = view.to_json()
        if "path" in clean:  # the kernel works in its folder: resolved (safe_paths)
            clean["path"] = self._contents.resolve(clean["path"], "'view.path'").path
        for mention in clean.get("mentions") or []:  # a cell of another notebook
            if "path" in mention:
                where = "'view.mentions.path'"
                mention["path"] = self._contents.resolve(mention["path"], where).path
        return clean or None


def _imported_title(title: str) -> str:
    text = f"Imported: {title}" if title else "Imported chat"
    return text if len(text) <= MAX_TITLE else text[: MAX_TITLE - 3] + "..."


def _fork_title(title: str, turn: int) -> str:
    """A fork's default name: the source's, marked (within the title limit)."""
    mark = f" (fork at turn {turn})"
    return (title or "Chat")[: MAX_TITLE - len(mark)] + mark
