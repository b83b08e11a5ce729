"""Chat routes: ``agent/chats``, ``agent/chats/import``, ``agent/chats/{id}``, its notebook
(read or exported), its history's summaries and its messages.

Thin: each method authenticates, authorizes, parses the JSON body into typed arguments
(:mod:`.parse`) and calls the chats service
(:class:`~jupyter_agent.runtime.runs.chat_service.ChatService`); its refusals are domain
errors that :mod:`.base` answers.
"""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_agent.exceptions import BadRequest, Forbidden
from jupyter_agent.runtime.settings.agents import DEFAULT_AGENT
from jupyter_agent.server import parse
from jupyter_agent.server.auth import authz
from jupyter_agent.server.base import AgentHandler, authorized_execute

__all__ = [
    "ChatForkHandler",
    "ChatHandler",
    "ChatHistoryHandler",
    "ChatImportHandler",
    "ChatNotebookHandler",
    "ChatsHandler",
    "MessagesHandler",
]

_MESSAGE_FIELDS = ("text", "view", "attachments", "control")


class ChatsHandler(AgentHandler):
    """``GET agent/chats`` (``{"chats": [...]}``), ``POST agent/chats`` ``{title?, agent?}``
    (201)."""

    body_methods = frozenset({"POST"})

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """Every chat, the most recently updated first."""
        chats = (await self.services()).chats
        self.finish_json(await chats.list(owner=self.owner))

    @web.authenticated
    @authorized
    async def post(self) -> None:
        """Create a chat of ``agent`` (default: the default agent; one the server does not
        host: 400 ``unknown_agent``); answer it with 201."""
        body = self.json_body()
        parse.only_keys(body, ("title", "agent"), reason="unknown_field")
        title = parse.string(body, "title", reason="bad_title", default="")
        agent = parse.string(body, "agent", reason="unknown_agent", default=DEFAULT_AGENT)
        chats = (await self.services()).chats
        self.finish_json(await chats.create(owner=self.owner, title=title, agent=agent), status=201)


class ChatImportHandler(AgentHandler):
    """``POST agent/chats/import`` ``{notebook, title?}`` (201): a new chat whose turns are
    an exported chat notebook's (``notebook``: its nbformat JSON object), so the
    conversation goes on here; permission as ``POST agent/chats``."""

    body_methods = frozenset({"POST"})

    @web.authenticated
    @authorized
    async def post(self) -> None:
        """Import; answer the new chat with 201 (400 ``not_an_export``: nothing made)."""
        body = self.json_body()  # over JupyterAgent.max_body_bytes: 413 body_too_large
        parse.only_keys(body, ("notebook", "title"), reason="unknown_field")
        if "notebook" not in body:
            raise BadRequest("'notebook' is required: the exported notebook", reason="bad_notebook")
        notebook = parse.mapping(body, "notebook", reason="bad_notebook")
        title = parse.optional_string(body, "title", reason="bad_title")
        chats = (await self.services()).chats
        answer = await chats.import_notebook(notebook, owner=self.owner, title=title)
        self.finish_json(answer, status=201)


class ChatHandler(AgentHandler):
    """``GET``, ``PATCH`` ``{title}`` or ``{model}`` and ``DELETE agent/chats/{id}``."""

    body_methods = frozenset({"PATCH"})

    @web.authenticated
    @authorized
    async def get(self, chat_id: str) -> None:
        """The chat with its ``turns`` (oldest first) and ``active_run_id``."""
        chats = (await self.services()).chats
        self.finish_json(await chats.get(chat_id, owner=self.owner))

    @web.authenticated
    @authorized
    async def patch(self, chat_id: str) -> None:
        """Rename the chat (``title``) or set its model (``model``: a name, or null for
        its agent's); answer it."""
        body = self.json_body()
        parse.only_keys(body, ("title", "model"), reason="unknown_field")
        chats = (await self.services()).chats
        if "model" in body:
            # Which model answers spends the owner's money: as PUT agent/settings, execute.
            if not await authz.is_authorized(self, "execute", self.auth_resource):
                raise web.HTTPError(403, "setting a chat's model needs 'execute'")
            if "title" in body:
                raise BadRequest("change the title or the model, one at a time", reason="bad_field")
            model = body["model"]
            if model is not None and not isinstance(model, str):
                raise BadRequest("'model' must be a string or null", reason="bad_model")
            name = model.strip() if model is not None else None
            self.finish_json(await chats.set_model(chat_id, owner=self.owner, model=name or None))
            return
        title = parse.string(body, "title", reason="bad_title")
        self.finish_json(await chats.rename(chat_id, owner=self.owner, title=title))

    @web.authenticated
    @authorized
    async def delete(self, chat_id: str) -> None:
        """Delete the chat and its turns (its traces stay); 204.

        Deleting a chat whose run is going breaks that run, so it also needs ``execute``.
        """
        chats = (await self.services()).chats
        may_break = await authz.is_authorized(self, "execute", self.auth_resource)
        try:
            await chats.delete(chat_id, owner=self.owner, may_break=may_break)
        except Forbidden as exc:
            # An authorization refusal, answered as the authorizer's own are.
            raise web.HTTPError(403, exc.message) from None
        self.set_status(204)
        self.finish()


class ChatHistoryHandler(AgentHandler):
    """``GET agent/chats/{id}/history``: ``{"chunks": [...], "pending": N}``."""

    @web.authenticated
    @authorized
    async def get(self, chat_id: str) -> None:
        """The chat's stored chunk summaries and how many are still to be made."""
        chats = (await self.services()).chats
        self.finish_json(await chats.history(chat_id, owner=self.owner))


class ChatNotebookHandler(AgentHandler):
    """``GET agent/chats/{id}/notebook``: the whole chat as one notebook; ``POST`` exports it
    into the trace folder."""

    @web.authenticated
    @authorized
    async def get(self, chat_id: str) -> None:
        """Answer the notebook JSON (nbformat v4)."""
        chats = (await self.services()).chats
        self.finish_json(await chats.notebook(chat_id, owner=self.owner))

    @web.authenticated
    @authorized_execute
    async def post(self, chat_id: str) -> None:
        """Write the chat's notebook into the trace folder; 201 ``{path, created}``, or 200
        when the folder already held exactly this notebook."""
        chats = (await self.services()).chats
        answer = await chats.write_notebook(chat_id, owner=self.owner)
        self.finish_json(answer, status=201 if answer["created"] else 200)


class MessagesHandler(AgentHandler):
    """``POST agent/chats/{id}/messages`` ``{text, view?, attachments?, control?}`` (202)."""

    body_methods = frozenset({"POST"})

    @web.authenticated
    @authorized_execute
    async def post(self, chat_id: str) -> None:
        """Start a run or queue the message in the running one's mailbox (or break it)."""
        body = self.json_body()
        parse.only_keys(body, _MESSAGE_FIELDS, reason="unknown_field")
        text = parse.string(body, "text", reason="bad_text", default="")
        control = parse.control(body)
        view = parse.view(body)
        attachments = parse.string_list(
            body, "attachments", reason="bad_attachments", what="contents paths"
        )
        chats = (await self.services()).chats
        answer = await chats.send(
            chat_id,
            owner=self.owner,
            text=text,
            view=view,
            attachments=attachments,
            control=control,
        )
        self.finish_json(answer, status=202)


class ChatForkHandler(AgentHandler):
    """``POST agent/chats/{id}/fork`` ``{turn, title?, message?}`` (201): a new chat whose
    history is the chat's turns 1..``turn``; with ``message`` (``{text, view?,
    attachments?}``: *edit and resend*) that message is sent in the new chat at once."""

    body_methods = frozenset({"POST"})

    @web.authenticated
    @authorized
    async def post(self, chat_id: str) -> None:
        """Fork; answer the new chat (with ``run_id`` and ``routed`` when a message went)."""
        body = self.json_body()
        parse.only_keys(body, ("turn", "title", "message"), reason="unknown_field")
        turn = parse.integer(body, "turn", reason="bad_turn", minimum=0)
        if turn is None:
            raise BadRequest("'turn' is required: the last turn the fork keeps", reason="bad_turn")
        title = parse.optional_string(body, "title", reason="bad_title")
        message = (
            parse.mapping(body, "message", reason="bad_message") if "message" in body else None
        )
        if message is not None:
            parse.only_keys(message, ("text", "view", "attachments"), reason="unknown_field")
            text = parse.string(message, "text", reason="bad_text")
            if not text.strip():
                raise BadRequest("the message has no text", reason="empty_message")
            view = parse.view(message)
            attachments = parse.string_list(
                message, "attachments", reason="bad_attachments", what="contents paths"
            )
            if not await authz.is_authorized(self, "execute", self.auth_resource):
                raise web.HTTPError(403, "sending a message needs 'execute'")
        chats = (await self.services()).chats
        answer = await chats.fork(chat_id, owner=self.owner, turn=turn, title=title)
        if message is not None:
            sent = await chats.send(
                answer["id"], owner=self.owner, text=text, view=view, attachments=attachments
            )
            answer = {**answer, **sent}
        self.finish_json(answer, status=201)
