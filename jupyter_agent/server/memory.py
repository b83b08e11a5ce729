"""Memory routes: ``agent/memories`` and ``agent/memories/{id}``.

Thin: each method authenticates, authorizes (reads need ``read``; adding, editing and
deleting need ``execute``), parses the query or body into typed arguments (:mod:`.parse`)
and calls the :class:`~jupyter_agent.runtime.memory.service.MemoryService`
(``services.memory``), whose refusals (``bad_memory``, ``credential``, ``not_found``) are
domain errors :mod:`.base` answers. A fact added here is the person's (``author``
``person``, no chat or run).
"""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_agent.runtime.memory.service import DEFAULT_LIST, MAX_K
from jupyter_agent.server import parse
from jupyter_agent.server.base import AgentHandler, authorized_execute

__all__ = ["MemoriesHandler", "MemoryHandler"]

_FIELDS = ("text", "category")


def _body(handler: AgentHandler) -> dict[str, Any]:
    body = handler.json_body()
    parse.only_keys(body, _FIELDS, reason="bad_memory")
    return body


class MemoriesHandler(AgentHandler):
    """``GET agent/memories?q=&category=&limit=`` and ``POST agent/memories``."""

    body_methods = frozenset({"POST"})

    @web.authenticated
    @authorized
    async def get(self) -> None:
        """``{memories: [Memory], categories: [{category, count}]}``: with ``q``, the facts
        ranked by recall (each with its ``score``, ``limit`` 1 to 50, default 50); without,
        the newest first (``limit`` 1 to 10,000, default 1,000). ``categories`` counts every
        fact of the owner, whatever the filter."""
        query = (self.get_query_argument("q", None) or "").strip()
        category = self.get_query_argument("category", None)
        default = MAX_K if query else DEFAULT_LIST
        limit = parse.query_int(self, "limit", reason="bad_memory", default=default)
        memory = (await self.services()).memory
        if query:
            ranked = await memory.search_memories(
                query, category=category, limit=limit, owner=self.owner
            )
            facts = [{**m.to_json(), "score": score} for m, score in ranked]
        else:
            facts = [
                m.to_json() for m in await memory.list(category, limit=limit, owner=self.owner)
            ]
        counts = await memory.categories(owner=self.owner)
        self.finish_json(
            {
                "memories": facts,
                "categories": [{"category": c, "count": n} for c, n in counts],
            }
        )

    @web.authenticated
    @authorized_execute
    async def post(self) -> None:
        """``{text, category?}``: add the person's fact; 201 with it."""
        body = _body(self)
        text = parse.string(body, "text", reason="bad_memory")
        category = parse.string(body, "category", reason="bad_memory", default="general")
        memory = (await self.services()).memory
        saved = await memory.save(text, category=category, author="person", owner=self.owner)
        self.finish_json(saved.to_json(), status=201)


class MemoryHandler(AgentHandler):
    """``GET``, ``PATCH`` ``{text?, category?}`` and ``DELETE agent/memories/{id}``."""

    body_methods = frozenset({"PATCH"})

    @web.authenticated
    @authorized
    async def get(self, memory_id: str) -> None:
        """The fact; 404 for an unknown id."""
        memory = (await self.services()).memory
        self.finish_json((await memory.get(memory_id, owner=self.owner)).to_json())

    @web.authenticated
    @authorized_execute
    async def patch(self, memory_id: str) -> None:
        """Change its text and/or category; 200 with the new fact."""
        body = _body(self)
        text = parse.optional_string(body, "text", reason="bad_memory")
        category = parse.optional_string(body, "category", reason="bad_memory")
        memory = (await self.services()).memory
        changed = await memory.update(memory_id, text=text, category=category, owner=self.owner)
        self.finish_json(changed.to_json())

    @web.authenticated
    @authorized_execute
    async def delete(self, memory_id: str) -> None:
        """Delete it; 204 (404 for an unknown id)."""
        memory = (await self.services()).memory
        await memory.delete(memory_id, owner=self.owner)
        self.set_status(204)
        self.finish()
