"""Chat routes: ``agent/chats``, ``agent/chats/{id}``, its notebook (read or exported), its
history's summaries and its messages.

Thin: each method authenticates, authorizes, parses the JSON body into typed arguments
(:mod:`.parse`) and calls the :class:`~jupyter_agent.runtime.service.AgentService`; its
refusals are domain errors that :mod:`.base` answers.
"""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_agent.runtime.settings.agents import DEFAULT_AGENT
from jupyter_agent.server import authz, parse
from jupyter_agent.server.base import AgentHandler, authorized_execute

__all__ = [
    "ChatHandler",
    "ChatHistoryHandler",
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
        service = await self.service()
        self.finish_json(await service.list_chats(owner=self.owner))

    @web.authenticated
    @authorized
    async def post(self) -> None:
        """Create a chat of ``agent`` (default: the default agent; one the server does not
        host: 400 ``unknown_agent``); answer it with 201."""
        body = self.json_body()
        parse.only_keys(body, ("title", "agent"), reason="unknown_field")
        title = parse.string(body, "title", reason="bad_title", default="")
        agent = parse.string(body, "agent", reason="unknown_agent", default=DEFAULT_AGENT)
        service = await self.service()
        self.finish_json(
            await service.create_chat(owner=self.owner, title=title, agent=agent), status=201
        )


class ChatHandler(AgentHandler):
    """``GET``, ``PATCH`` ``{title}`` and ``DELETE agent/chats/{id}``."""

    body_methods = frozenset({"PATCH"})

    @web.authenticated
    @authorized
    async def get(self, chat_id: str) -> None:
        """The chat with its ``turns`` (oldest first) and ``active_run_id``."""
        service = await self.service()
        self.finish_json(await service.get_chat(chat_id, owner=self.owner))

    @web.authenticated
    @authorized
    async def patch(self, chat_id: str) -> None:
        """Rename the chat; answer it."""
        body = self.json_body()
        parse.only_keys(body, ("title",), reason="unknown_field")
        title = parse.string(body, "title", reason="bad_title")
        service = await self.service()
        self.finish_json(await service.rename_chat(chat_id, owner=self.owner, title=title))

    @web.authenticated
    @authorized
    async def delete(self, chat_id: str) -> None:
        """Delete the chat and its turns (its traces stay); 204.

        Deleting a chat whose run is going breaks that run, so it also needs ``execute``.
        """
        service = await self.service()
        if await service.active_run_id(chat_id, owner=self.owner) is not None:
            await authz.require(
                self,
                "execute",
                self.auth_resource,
                "deleting a chat with a running turn stops it: that needs 'execute'",
            )
        await service.delete_chat(chat_id, owner=self.owner)
        self.set_status(204)
        self.finish()


class ChatHistoryHandler(AgentHandler):
    """``GET agent/chats/{id}/history``: ``{"chunks": [...], "pending": N}``."""

    @web.authenticated
    @authorized
    async def get(self, chat_id: str) -> None:
        """The chat's stored chunk summaries and how many are still to be made."""
        service = await self.service()
        self.finish_json(await service.chat_history(chat_id, owner=self.owner))


class ChatNotebookHandler(AgentHandler):
    """``GET agent/chats/{id}/notebook``: the whole chat as one notebook; ``POST`` exports it
    into the trace folder."""

    @web.authenticated
    @authorized
    async def get(self, chat_id: str) -> None:
        """Answer the notebook JSON (nbformat v4)."""
        service = await self.service()
        self.finish_json(await service.chat_notebook(chat_id, owner=self.owner))

    @web.authenticated
    @authorized_execute
    async def post(self, chat_id: str) -> None:
        """Write the chat's notebook into the trace folder; 201 ``{path, created}``, or 200
        when the folder already held exactly this notebook."""
        service = await self.service()
        answer = await service.write_chat_notebook(chat_id, owner=self.owner)
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
        service = await self.service()
        answer = await service.send_message(
            chat_id,
            owner=self.owner,
            text=text,
            view=view,
            attachments=attachments,
            control=control,
        )
        self.finish_json(answer, status=202)
