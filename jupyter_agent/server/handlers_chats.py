"""Chat routes: ``agent/chats``, ``agent/chats/{id}``, its notebook (read or exported) and
its messages.

Thin: each method authenticates, authorizes, reads the JSON body and calls the
:class:`~jupyter_agent.runtime.service.AgentService`; refusals come back as ServiceError.
"""

from __future__ import annotations

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_agent.server.base import AgentHandler, authorized_execute

__all__ = ["ChatHandler", "ChatNotebookHandler", "ChatsHandler", "MessagesHandler"]


class ChatsHandler(AgentHandler):
    """``GET agent/chats`` (``{"chats": [...]}``), ``POST agent/chats`` ``{title?}`` (201)."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """Every chat, the most recently updated first."""
        service = await self.service()
        self.finish_json(await service.list_chats())

    @web.authenticated
    @authorized
    async def post(self) -> None:
        """Create a chat; answer it with 201."""
        body = self.json_body()
        service = await self.service()
        self.finish_json(await service.create_chat(body), status=201)


class ChatHandler(AgentHandler):
    """``GET``, ``PATCH`` ``{title}`` and ``DELETE agent/chats/{id}``."""

    @web.authenticated
    @authorized
    async def get(self, chat_id: str) -> None:
        """The chat with its ``turns`` (oldest first) and ``active_run_id``."""
        service = await self.service()
        self.finish_json(await service.get_chat(chat_id))

    @web.authenticated
    @authorized
    async def patch(self, chat_id: str) -> None:
        """Rename the chat; answer it."""
        body = self.json_body()
        service = await self.service()
        self.finish_json(await service.rename_chat(chat_id, body))

    @web.authenticated
    @authorized
    async def delete(self, chat_id: str) -> None:
        """Delete the chat and its turns (its traces stay); 204.

        Deleting a chat whose run is going breaks that run, so it also needs ``execute``.
        """
        service = await self.service()
        if service.manager.active_run_id(chat_id) is not None:
            user = self.current_user
            if not self.authorizer.is_authorized(self, user, "execute", self.auth_resource):
                raise web.HTTPError(
                    403, "deleting a chat with a running turn stops it: that needs 'execute'"
                )
        await service.delete_chat(chat_id)
        self.set_status(204)
        self.finish()


class ChatNotebookHandler(AgentHandler):
    """``GET agent/chats/{id}/notebook``: the whole chat as one notebook; ``POST`` exports it
    into the trace folder."""

    @web.authenticated
    @authorized
    async def get(self, chat_id: str) -> None:
        """Answer the notebook JSON (nbformat v4)."""
        service = await self.service()
        self.finish_json(await service.chat_notebook(chat_id))

    @web.authenticated
    @authorized_execute
    async def post(self, chat_id: str) -> None:
        """Write the chat's notebook into the trace folder; 201 ``{path, created}``, or 200
        when the folder already held exactly this notebook."""
        service = await self.service()
        answer = await service.write_chat_notebook(chat_id)
        self.finish_json(answer, status=201 if answer["created"] else 200)


class MessagesHandler(AgentHandler):
    """``POST agent/chats/{id}/messages`` ``{text, view?, attachments?, control?}`` (202)."""

    @web.authenticated
    @authorized_execute
    async def post(self, chat_id: str) -> None:
        """Start a run or queue the message in the running one's mailbox (or break it)."""
        body = self.json_body()
        service = await self.service()
        self.finish_json(await service.send_message(chat_id, body), status=202)
