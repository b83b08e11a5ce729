"""The memory service: facts that outlive a chat, saved, edited, searched.

:class:`MemoryService` is what the REST routes (``agent/memories``), the in-cell app
``memory`` (:func:`perform_memory_call`, called by :mod:`jupyter_agent.runtime.loop.apphost`)
and the CLI (through REST) use; the store does the SQL (``Store`` memory methods), this
checks the input and keeps secrets out. Contracts:

- Typed arguments; every store call in a worker thread (``asyncio.to_thread``), never on
  the event loop.
- The whole input is checked before anything is written: ``BadRequest`` (reason
  ``bad_memory``) for a text that is empty, longer than
  :data:`~jupyter_agent.core.memory.records.MAX_MEMORY_CHARS` or not valid Unicode, a bad
  category, a bad ``k`` or ``limit``; reason ``credential`` for a text that holds a
  secret the server knows (its scrubber's values, or the scrubber's ``[redacted: ...]``
  marker) or looks like a credential (:func:`~jupyter_agent.core.memory.credentials.
  credential_reason`): the message says why and never holds the text; ``NotFound``
  (``not_found``) for an id the owner has no fact under.
- A category is stripped and lower-cased: 1 to
  :data:`~jupyter_agent.core.memory.records.MAX_CATEGORY_CHARS` characters of ``a-z``, ``0-9``,
  space, ``_`` and ``-``. A text is stripped.
- Every write tells the owner's recall counts (:mod:`.counts`): a turn's start reads the
  categories and what recall could find from there, never from the store.
- ``owner`` scopes every call (``""``: the server's user); another owner's fact is
  ``NotFound``, never shown.
- ``embedder`` (optional, section E of the issue): an async callable given each saved or
  updated :class:`~jupyter_agent.core.memory.records.Memory`; best effort (a failure is logged,
  never raised), awaited before the call answers; ``vectors`` (optional, the same
  section): the :class:`~jupyter_agent.runtime.memory.embedder.Embedder` whose hybrid ranking
  :meth:`MemoryService.search` uses when an embed tier is set (the store's otherwise).
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any, Final

from jupyter_agent.core.memory.credentials import credential_reason
from jupyter_agent.core.memory.recall import without_secrets
from jupyter_agent.core.memory.records import (
    DEFAULT_CATEGORY,
    MAX_CATEGORY_CHARS,
    MAX_MEMORY_CHARS,
    Author,
    Memory,
    RecallHit,
)
from jupyter_agent.exceptions import AgentError, BadRequest, NotFound
from jupyter_agent.runtime.ids import new_id, now_iso
from jupyter_agent.runtime.memory.counts import counts_of
from jupyter_agent.runtime.memory.hybrid import recall_hits
from jupyter_agent.runtime.notebook.contents import shown
from jupyter_agent.runtime.secrets import NO_SECRETS, Scrubber
from jupyter_agent.store.memory.recall_queries import DEFAULT_CANDIDATES
from jupyter_agent.text import has_lone_surrogate

__all__ = [
    "DEFAULT_LIST",
    "MAX_K",
    "MAX_LIST",
    "Embedder",
    "MemoryService",
    "perform_memory_call",
    "refused_call",
]

log = logging.getLogger(__name__)

Embedder = Callable[[Memory], Awaitable[None]]
"""The embeddings hook: called with each saved or updated fact (best effort)."""

#: The most hits one search answers.
MAX_K: Final = 50
#: The most facts one list answers (``memory export`` asks for this many).
MAX_LIST: Final = 10_000
#: How many facts a list answers when no limit is given.
DEFAULT_LIST: Final = 1000
_CATEGORY: Final = re.compile(r"[a-z0-9 _\-]+")
_MAX_QUERY_CHARS: Final = 2000


def _no_memory(memory_id: str) -> NotFound:
    return NotFound(f"no memory {shown(memory_id)}")


def clean_category(category: Any) -> str:
    """The category as stored (stripped, lower case), or ``BadRequest`` (``bad_memory``)."""
    if not isinstance(category, str):
        raise BadRequest("'category' must be a string", reason="bad_memory")
    clean = category.strip().lower()
    if not clean or len(clean) > MAX_CATEGORY_CHARS or not _CATEGORY.fullmatch(clean):
        raise BadRequest(
            f"'category' must be 1 to {MAX_CATEGORY_CHARS} characters of a-z, 0-9, space, "
            f"'_' and '-', not {shown(category)}",
            reason="bad_memory",
        )
    return clean


def clean_text(text: Any) -> str:
    """The fact's text as stored (stripped), or ``BadRequest`` (``bad_memory``); says
    nothing of what the text holds (it may be a secret: :meth:`MemoryService.check_secret`
    runs after this)."""
    if not isinstance(text, str):
        raise BadRequest("'text' must be a string", reason="bad_memory")
    clean = text.strip()
    if not clean:
        raise BadRequest("'text' is empty: a memory is one fact in words", reason="bad_memory")
    if len(clean) > MAX_MEMORY_CHARS:
        raise BadRequest(
            f"'text' is {len(clean)} characters: a memory holds at most {MAX_MEMORY_CHARS} "
            "(save one fact per memory)",
            reason="bad_memory",
        )
    if has_lone_surrogate(clean) or "\x00" in clean:
        raise BadRequest("'text' is not valid Unicode text", reason="bad_memory")
    return clean


def _count(value: Any, name: str, *, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise BadRequest(f"'{name}' must be an integer from 1 to {most}", reason="bad_memory")
    return value


class MemoryService:
    """Saves, edits, lists and searches facts (see the module docstring)."""

    def __init__(
        self,
        store: Any,
        scrubber: Scrubber = NO_SECRETS,
        embedder: Embedder | None = None,
        vectors: Any = None,
    ) -> None:
        self.store = store
        self.scrubber = scrubber
        self.embedder = embedder
        #: The :class:`~jupyter_agent.runtime.memory.embedder.Embedder` searches rank by (hybrid,
        #: when an embed tier is set: the same ranking as autorecall); None: the store's.
        self.vectors = vectors

    # --- checks ----------------------------------------------------------------------------

    def check_secret(self, text: str) -> BadRequest | None:
        """The refusal of a text holding a secret (reason ``credential``), or None."""
        if self.scrubber.spans(text):
            why: str | None = "holds a secret this server knows (a configured key or token)"
        else:
            why = credential_reason(text)
        if why is None:
            return None
        return BadRequest(
            f"Not saved: the text {why}. Secrets never go into memory: keep them in an "
            "environment variable or a credential store the server reads.",
            reason="credential",
        )

    def _checked_text(self, text: Any) -> str:
        clean = clean_text(text)
        refusal = self.check_secret(clean)
        if refusal is not None:
            raise refusal
        return clean

    async def _embed(self, memory: Memory) -> None:
        if self.embedder is None:
            return
        try:
            await self.embedder(memory)
        except Exception:  # best effort: the fact is saved, its vector comes later
            log.warning("jupyter-agent: could not embed memory %s", memory.id, exc_info=True)

    # --- calls -----------------------------------------------------------------------------

    async def save(
        self,
        text: str,
        *,
        category: str = DEFAULT_CATEGORY,
        author: Author,
        chat_id: str | None = None,
        run_id: str | None = None,
        owner: str,
    ) -> Memory:
        """Store one fact; answers it (with its new ``mem_`` id)."""
        clean = self._checked_text(text)
        cat = clean_category(category)
        now = now_iso()
        memory = Memory(
            id=new_id("mem"),
            text=clean,
            category=cat,
            chat_id=chat_id,
            author=author,
            created=now,
            updated=now,
            run_id=run_id,
            owner=owner,
        )
        saved: Memory = await asyncio.to_thread(self.store.add_memory, memory)
        counts_of(self.store).memory_saved(owner, saved.category)
        await self._embed(saved)
        return saved

    async def get(self, memory_id: str, *, owner: str) -> Memory:
        """The fact, or ``NotFound``."""
        memory: Memory | None = await asyncio.to_thread(
            lambda: self.store.get_memory(memory_id, owner=owner)
        )
        if memory is None:
            raise _no_memory(memory_id)
        return memory

    async def update(
        self,
        memory_id: str,
        *,
        text: str | None = None,
        category: str | None = None,
        owner: str,
    ) -> Memory:
        """Change a fact's text and/or category (at least one); answers the new fact."""
        if text is None and category is None:
            raise BadRequest("nothing to change: give 'text' or 'category'", reason="bad_memory")
        clean = None if text is None else self._checked_text(text)
        cat = None if category is None else clean_category(category)
        memory: Memory | None = await asyncio.to_thread(
            lambda: self.store.update_memory(
                memory_id, text=clean, category=cat, now=now_iso(), owner=owner
            )
        )
        if memory is None:
            raise _no_memory(memory_id)
        if cat is not None:  # its category's count moved: read again when next needed
            counts_of(self.store).forget(owner)
        if clean is not None:
            await self._embed(memory)
        return memory

    async def delete(self, memory_id: str, *, owner: str) -> None:
        """Delete a fact (and, with ``vectors``, its vector from the in-memory index), or
        ``NotFound``."""
        if not await asyncio.to_thread(lambda: self.store.delete_memory(memory_id, owner=owner)):
            raise _no_memory(memory_id)
        counts_of(self.store).forget(owner)
        if self.vectors is not None:  # its vector leaves the in-memory index now
            self.vectors.on_deleted(memory_id, owner=owner)

    async def list(
        self, category: str | None = None, *, limit: int = DEFAULT_LIST, owner: str
    ) -> builtins.list[Memory]:
        """The owner's facts (of one category), the most recently updated first."""
        cat = None if category is None else clean_category(category)
        most = _count(limit, "limit", most=MAX_LIST)
        memories: builtins.list[Memory] = await asyncio.to_thread(
            lambda: self.store.list_memories(owner=owner, category=cat, limit=most)
        )
        return memories

    async def search(
        self,
        query: str,
        k: int = 5,
        history: bool = False,
        *,
        category: str | None = None,
        owner: str,
    ) -> builtins.list[RecallHit]:
        """The ``k`` best recall hits for ``query``: facts only, or (``history``) facts,
        turns and chunk summaries of the owner's chats (the searching chat's own included:
        its older turns may be out of its window). A query with no searchable word
        answers ``[]``. A hit whose text holds a credential is left out
        (:func:`~jupyter_agent.core.memory.recall.without_secrets`)."""
        if not isinstance(query, str):
            raise BadRequest("'query' must be a string", reason="bad_memory")
        if len(query) > _MAX_QUERY_CHARS or has_lone_surrogate(query):
            raise BadRequest(
                f"'query' must be valid text of at most {_MAX_QUERY_CHARS} characters",
                reason="bad_memory",
            )
        most = _count(k, "k", most=MAX_K)
        if not isinstance(history, bool):
            raise BadRequest("'history' must be true or false", reason="bad_memory")
        cat = None if category is None else clean_category(category)
        kinds = ("memory", "turn", "chunk") if history else ("memory",)
        hits = await recall_hits(
            self.store,
            self.vectors,
            query,
            owner=owner,
            kinds=kinds,
            k=most,
            category=cat,
            candidates=DEFAULT_CANDIDATES,  # the count every recall path reads
        )
        # A turn where the person pasted a key (or a fact holding a value the server came
        # to know later) is never shown: not to this chat, nor recalled into another.
        return without_secrets(hits, self.scrubber.spans)

    async def search_memories(
        self, query: str, *, category: str | None = None, limit: int = MAX_K, owner: str
    ) -> builtins.list[tuple[Memory, float]]:
        """Facts ranked by recall (``GET agent/memories?q=``): each with its score."""
        most = _count(limit, "limit", most=MAX_K)
        hits = await self.search(query, most, category=category, owner=owner)

        def read() -> builtins.list[tuple[Memory, float]]:
            found = [(self.store.get_memory(h.id, owner=owner), h.score) for h in hits]
            return [(m, score) for m, score in found if m is not None]

        return await asyncio.to_thread(read)

    async def categories(self, *, owner: str) -> builtins.list[tuple[str, int]]:
        """``(category, count)`` of the owner's facts, by category."""
        counts: builtins.list[tuple[str, int]] = await asyncio.to_thread(
            lambda: self.store.memory_categories(owner=owner)
        )
        return counts


# --- the in-cell app ---------------------------------------------------------------------


def refused_call(
    service: MemoryService | None, method: str, args: dict[str, Any]
) -> tuple[dict[str, Any], str] | None:
    """For a ``memory`` call whose text holds a secret: the arguments to record instead
    (the text replaced by ``[refused: credential]``) and the error; else None.

    The host checks this *before* it logs the call's intent, so the refused text is in no
    record of the call (the model's own code may still hold it: the model wrote it).
    """
    text = args.get("text")
    if service is None or method not in ("save", "update") or not isinstance(text, str):
        return None
    refusal = service.check_secret(text)
    if refusal is None:
        return None
    return {**args, "text": "[refused: credential]"}, refusal.message


def _arg(args: dict[str, Any], name: str, kind: type, what: str) -> Any:
    value = args.get(name)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise AgentError(f"memory: '{name}' must be {what}")
    return value


async def perform_memory_call(
    service: MemoryService | None,
    method: str,
    args: dict[str, Any],
    *,
    chat_id: str,
    run_id: str,
    owner: str,
) -> Any:
    """Perform ``memory.<method>(**args)`` for a cell of run ``run_id`` in ``chat_id``;
    answers the JSON value the cell gets (see :data:`jupyter_agent.core.loop.apps.ALL_APPS`).

    A refusal raises (a :class:`~jupyter_agent.exceptions.RequestError` or AgentError:
    the cell's ``AppCallError`` carries its message); ``forget`` of an unknown id is
    False, not an error.
    """
    if service is None:
        raise AgentError("memory is not available on this server")
    if method == "save":
        category = args.get("category")
        memory = await service.save(
            _arg(args, "text", str, "a string"),
            category=DEFAULT_CATEGORY if category is None else category,
            author="agent",
            chat_id=chat_id,
            run_id=run_id,
            owner=owner,
        )
        return memory.id
    if method == "search":
        hits = await service.search(
            _arg(args, "query", str, "a string"),
            args.get("k", 5),
            args.get("history", False),
            owner=owner,
        )
        return [hit.to_json() for hit in hits]
    if method == "forget":
        try:
            await service.delete(_arg(args, "id", str, "a memory id string"), owner=owner)
        except NotFound:
            return False
        return True
    if method == "list":
        memories = await service.list(args.get("category"), owner=owner)
        return [m.to_json() for m in memories]
    raise AgentError(f"unknown app method memory.{method}")
