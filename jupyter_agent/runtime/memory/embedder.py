"""The embedder: facts' vectors through the ``embed`` tier, and hybrid recall.

:class:`Embedder` is built once per server (``runtime/assembly.py``) with the store, the
transport and a callable giving the ``embed`` tier as configured now (the admin's, or the
person's override from the browser; None when there is none or it is not ready). With no
``embed`` tier every method is a cheap no-op and recall is lexical.

- :meth:`Embedder.on_saved` is the hook the memory service calls after a save or an
  update: it embeds the fact in the background and stores its vector (``put_vector``);
  the save never waits for it and never fails because of it. An edit drops the fact from
  the index first (the store dropped the old text's vector with it); a vector is stored
  only while the fact's ``updated`` is the one embedded (out-of-order edits keep the
  newest). :meth:`Embedder.on_deleted` (the service's delete) drops it at once. The index
  (:mod:`.vector_index`) is read once per (owner, model), kept current by these hooks.
- :meth:`Embedder.kick` starts the background backfill: facts without a vector for the
  tier's model (``memories_without_vector``) are embedded in batches. It runs at start,
  after a failure heals, and when the model changes (a new model has no vectors yet).
- :meth:`Embedder.query_vector` embeds a recall query within ``query_deadline_s`` (2 s),
  or the shorter deadline of its caller (a run's recall): past that deadline the answer is
  None (lexical recall) and nothing else happens: the caller's deadline is not the tier's
  failure (no cooldown, a debug line).
- The in-memory index of an (owner, model) is loaded in the background, started early
  (:meth:`Embedder.kick` at the server's start, the first save); until it is loaded,
  recall is lexical (a search never waits for the load). It is checked against the store
  at most every ``reload_every_s`` (60 s; in the background) for vectors another server
  wrote.
- Recall that uses these vectors (the hybrid ranking) is
  :mod:`jupyter_agent.runtime.memory.hybrid`'s.

Failures (the endpoint down, answering 500, a bad reply, a key not set, a store error in
the background) are logged, never raised: one warning when a streak of failures starts
(then debug lines), one info line when the tier answers again. For ``cooldown_s`` after a
failure no call is tried (a run does not wait 2 s for an endpoint known to be down). Log
lines name the model and the endpoint's host, never a key or a request header: the
transport's errors are redacted, and every message also goes through the server's
:class:`~jupyter_agent.runtime.secrets.Scrubber`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from jupyter_agent.core.memory.records import Memory
from jupyter_agent.exceptions import AgentError, ProviderTimeout
from jupyter_agent.llm.embeddings import (
    MAX_BATCH,
    build_embed_request,
    embed_tier,
    parse_embed_reply,
)
from jupyter_agent.llm.tiers import Tier
from jupyter_agent.runtime.memory.vector_index import VectorIndex
from jupyter_agent.runtime.secrets import NO_SECRETS, Scrubber
from jupyter_agent.store.memory.vector_search import nearest_vectors, pgvector_installed

__all__ = ["Embedder"]

log = logging.getLogger(__name__)

#: ``owner`` -> that owner's ``embed`` tier as configured now (None: none or not ready).
TierSource = Callable[[str], Mapping[str, Any] | None]


class Embedder:
    """Embeds facts and queries through the ``embed`` tier (see the module docstring)."""

    def __init__(
        self,
        *,
        store: Any,
        transport: Any,
        tier: TierSource,
        scrubber: Scrubber = NO_SECRETS,
        query_deadline_s: float = 2.0,
        save_deadline_s: float = 30.0,
        cooldown_s: float = 30.0,
        batch: int = 32,
        pgvector: bool | None = None,
        reload_every_s: float = 60.0,
        owners: tuple[str, ...] = ("",),
    ) -> None:
        self.store = store
        self.transport = transport
        self._tier_source = tier
        self.scrubber = scrubber
        self.query_deadline_s = query_deadline_s
        self.save_deadline_s = save_deadline_s
        self.cooldown_s = cooldown_s
        self.batch = max(1, min(batch, MAX_BATCH))
        self.reload_every_s = reload_every_s
        self._tier_cache: dict[str, tuple[dict[str, Any], Tier | None]] = {}
        self._indexes: dict[tuple[str, str], VectorIndex] = {}
        # whose facts the backfill looks at (more join as they save or search)
        self._owners: set[str] = set(owners)
        self._backfilled: set[tuple[str, str]] = set()  # (owner, model) with none missing
        self._backfill: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._down_until = 0.0
        self._failing = False
        # None: detected at the first search; off for good after a pgvector search fails
        self._pgvector = pgvector
        # stale-vector guard: each drop of a fact's vector (deleted, text changed) stamps
        # the fact with a new epoch; a vector computed before that stamp is not indexed
        self._epoch = 0
        self._stamped: dict[str, int] = {}

    # --- the tier ----------------------------------------------------------------------------

    def tier(self, owner: str) -> Tier | None:
        """``owner``'s ``embed`` tier as configured now (each owner may set their own),
        or None (none, not ready, or unusable)."""
        data = self._tier_source(owner)
        if not data:
            return None
        data = dict(data)
        cached = self._tier_cache.get(owner)
        if cached is not None and cached[0] == data:
            return cached[1]
        try:
            tier: Tier | None = embed_tier(data)
        except AgentError as exc:
            log.warning("jupyter-agent: the embed tier is unusable: %s", self._clean(exc))
            tier = None
        self._tier_cache[owner] = (data, tier)
        return tier

    def enabled(self, owner: str) -> bool:
        """True when ``owner`` has an ``embed`` tier configured and ready."""
        return self.tier(owner) is not None

    def _cooling(self) -> bool:
        return time.monotonic() < self._down_until

    # --- embedding ---------------------------------------------------------------------------

    async def embed(
        self, texts: Sequence[str], *, owner: str, deadline_s: float, shortened: bool = False
    ) -> list[list[float]] | None:
        """Unit vectors of ``texts`` (in order) from ``owner``'s tier, or None: no tier, cooling
        down after a failure, or this call failed (logged). Never raises but on cancel.
        ``shortened``: ``deadline_s`` is the caller's, shorter than the tier's own; a call
        that only ran out of it (no error answer, the endpoint merely slower) is no
        failure of the tier: a debug line, no cooldown. The cooldown is the server's (one
        failing endpoint makes every owner's recall lexical for ``cooldown_s``)."""
        tier = self.tier(owner)
        if tier is None or self._cooling() or not texts:
            return None
        vectors: list[list[float]] = []
        try:
            for start in range(0, len(texts), self.batch):
                chunk = list(texts[start : start + self.batch])
                spec = build_embed_request(tier, chunk, deadline_s=deadline_s)
                reply = await self.transport.post(spec)
                vectors.extend(parse_embed_reply(reply.json, len(chunk)))
        except (AgentError, ValueError, OSError) as exc:
            if shortened and _only_slow(exc):
                log.debug(
                    "jupyter-agent: no vector from the embed tier (%s) within the caller's "
                    "%g ms: lexical this time",
                    _where(tier),
                    round(deadline_s * 1000),
                )
                return None
            self._failed(tier, exc)
            return None
        if self._failing:
            self._failing = False
            log.info("jupyter-agent: the embed tier (%s) answers again", _where(tier))
        return vectors

    def _failed(self, tier: Tier, exc: BaseException) -> None:
        self._down_until = time.monotonic() + self.cooldown_s
        self._backfilled.clear()  # what failed to embed is the backfill's, later
        line = "jupyter-agent: the embed tier (%s) failed: %s; recall is lexical (retry in %g s)"
        level = logging.DEBUG if self._failing else logging.WARNING
        log.log(level, line, _where(tier), self._clean(exc), self.cooldown_s)
        self._failing = True

    def _clean(self, exc: BaseException) -> str:
        return self.scrubber.scrub(f"{type(exc).__name__}: {exc}")[:300]

    async def query_vector(
        self, text: str, *, owner: str = "", deadline_s: float | None = None
    ) -> list[float] | None:
        """The query's unit vector within ``query_deadline_s`` (or the shorter
        ``deadline_s``: a search's own deadline), or None (lexical recall).

        Also kicks the backfill (of ``owner``'s facts too), so facts saved before the tier
        existed, or under another model, get vectors.
        """
        shortened = deadline_s is not None and deadline_s < self.query_deadline_s
        deadline = deadline_s if deadline_s is not None and shortened else self.query_deadline_s
        vectors = await self.embed([text], owner=owner, deadline_s=deadline, shortened=shortened)
        if vectors is None:
            return None
        self._owners.add(owner)
        self.kick()
        return vectors[0]

    def index(self, owner: str, model: str) -> VectorIndex:
        """The in-memory vectors of ``(owner, model)``: read from the store once, then kept
        current by this embedder's puts and drops. A new model (the tier changed) starts a
        new index and frees the owner's others."""
        key = (owner, model)
        if key not in self._indexes:
            for old in [k for k in self._indexes if k[0] == owner]:
                del self._indexes[old]
            self._indexes[key] = VectorIndex(self.store, owner=owner, model=model)
        return self._indexes[key]

    def invalidate(self) -> None:
        """Read every index from the store again, in the background (vectors written by
        another server on the same database)."""
        for index in self._indexes.values():
            self._track(index.start_load(force=True))

    def warm(self, owner: str, model: str) -> None:
        """Start loading the ``(owner, model)`` index in the background (if not loaded)."""
        if self._pgvector:
            return
        with contextlib.suppress(RuntimeError):  # no loop (a sync caller): a search starts it
            self._track(self.index(owner, model).start_load())

    def _track(self, task: asyncio.Task[Any] | None) -> None:
        if task is not None and task not in self._tasks:
            self._tasks.add(task)
            task.add_done_callback(self._done)

    def vectors_ready(self, owner: str, model: str) -> bool:
        """True when a search can have cosines now: pgvector (or not yet detected), or the
        in-memory index loaded; else starts its load and the owner's backfill (recall is
        lexical meanwhile)."""
        if self._pgvector is not False:
            return True
        if self.index(owner, model).loaded:
            return True
        self._owners.add(owner)
        self.warm(owner, model)
        self.kick()
        return False

    async def cosines(
        self,
        vector: Sequence[float],
        *,
        owner: str,
        model: str,
        limit: int,
        ids: Sequence[str] = (),
    ) -> dict[str, float] | None:
        """``{memory_id: cosine}`` of the ``limit`` nearest facts and of ``ids``: in SQL on
        PostgreSQL with pgvector (:mod:`jupyter_agent.store.memory.vector_search`, untested
        here), else from the in-memory index. A pgvector search that fails (any error)
        is logged once and turns pgvector off: this answer and the later ones come from
        the in-memory index. None while that index is not loaded yet (its load started:
        recall is lexical; a search never waits for it); a loaded one is checked against
        the store in the background at most every ``reload_every_s``."""
        if self._pgvector is None:
            self._pgvector = await asyncio.to_thread(pgvector_installed, self.store)
        if self._pgvector:
            try:
                return await asyncio.to_thread(
                    lambda: nearest_vectors(
                        self.store, vector, owner=owner, model=model, limit=limit, ids=ids
                    )
                )
            except Exception as exc:  # untested SQL must never stop recall
                self._pgvector = False
                log.warning(
                    "jupyter-agent: the pgvector search failed (%s): vectors are searched "
                    "in memory from now on",
                    self._clean(exc),
                )
        index = self.index(owner, model)
        if not index.loaded:
            self.warm(owner, model)
            return None
        self._track(index.refresh(every_s=self.reload_every_s))
        return await index.nearest(vector, limit=limit, ids=ids)

    # --- hooks and the backfill --------------------------------------------------------------

    async def on_saved(self, memory: Memory) -> None:
        """The memory service's hook: embed ``memory`` (just saved or updated) in the
        background and return at once (a save never waits for the endpoint).

        An updated fact (``updated`` after ``created``) first leaves the in-memory indexes
        (the store dropped its vectors with the old text), so neither a slow nor a failed
        re-embedding leaves the old text's vector searchable.
        """
        if memory.updated != memory.created:
            self._forget(memory.id, memory.owner)
        tier = self.tier(memory.owner)
        if tier is None:
            return
        self._owners.add(memory.owner)
        self.warm(memory.owner, tier.model)
        self._spawn(self._embed_saved(memory, self._epoch))

    def on_deleted(self, memory_id: str, *, owner: str = "") -> None:
        """Forget a deleted fact's vector at once (the store's cascade removed the row)."""
        self._forget(memory_id, owner)

    def _forget(self, memory_id: str, owner: str) -> None:
        self._epoch += 1
        self._stamped[memory_id] = self._epoch
        for (o, _model), index in self._indexes.items():
            if o == owner:
                index.drop(memory_id)

    async def _embed_saved(self, memory: Memory, epoch: int) -> None:
        tier = self.tier(memory.owner)
        if tier is None:
            return
        vectors = await self.embed(
            [memory.text], owner=memory.owner, deadline_s=self.save_deadline_s
        )
        if vectors is None:
            return
        await self._store_vectors(tier, memory.owner, [(memory, vectors[0])], epoch)

    async def _store_vectors(
        self, tier: Tier, owner: str, pairs: Sequence[tuple[Memory, list[float]]], epoch: int
    ) -> None:
        """Store the vectors of the facts as they were embedded (``updated``: the store
        discards the vector of a fact updated since) and index the stored ones, unless the
        fact was dropped after ``epoch`` (the epoch before its text was read)."""

        def put() -> list[tuple[str, list[float]]]:
            return [
                (m.id, vector)
                for m, vector in pairs
                if self.store.put_vector(m.id, tier.model, vector, updated=m.updated)
            ]

        stored = await asyncio.to_thread(put)
        index = self.index(owner, tier.model)
        for memory_id, vector in stored:
            if self._stamped.get(memory_id, 0) <= epoch:
                index.put(memory_id, vector)
        self._track(index.start_fold())

    def kick(self) -> None:
        """Start loading the owners' indexes (if not loaded), and the backfill unless it
        runs, has nothing to do, or the tier is down (each owner's own tier)."""
        models = {o: t.model for o in sorted(self._owners) if (t := self.tier(o)) is not None}
        if not models:
            return
        for owner, model in models.items():
            self.warm(owner, model)
        if self._cooling():
            return
        if all(pair in self._backfilled for pair in models.items()):
            return
        if self._backfill is not None and not self._backfill.done():
            return
        self._backfill = self._spawn(self._run_backfill())

    async def backfill(self) -> int:
        """Embed every fact without a vector for the tier's model; how many were stored.

        Stops at the first failure (logged; the next :meth:`kick` after the cooldown goes
        on). Facts saved meanwhile are picked up by the next batch or by their own hook.
        """
        done = 0
        for owner in sorted(self._owners):
            while True:
                tier = self.tier(owner)
                if tier is None:
                    break
                epoch = self._epoch
                rows: list[Memory] = await asyncio.to_thread(
                    self.store.memories_without_vector,
                    owner=owner,
                    model=tier.model,
                    limit=self.batch,
                )
                if not rows:
                    self._backfilled.add((owner, tier.model))
                    break
                vectors = await self.embed([m.text for m in rows], owner=owner, deadline_s=60.0)
                if vectors is None:
                    return done
                await self._store_vectors(tier, owner, list(zip(rows, vectors, strict=True)), epoch)
                done += len(rows)
        if done:
            log.info("jupyter-agent: embedded %d fact(s) that had no vector", done)
        return done

    async def _run_backfill(self) -> None:
        try:
            await self.backfill()
        except Exception as exc:  # a store error: the next kick tries again
            log.warning("jupyter-agent: the embeddings backfill stopped: %s", self._clean(exc))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None] | None:
        try:
            task = asyncio.get_running_loop().create_task(coro)
        except RuntimeError:  # no loop (a sync caller): nothing runs in the background
            coro.close()
            return None
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        error = None if task.cancelled() else task.exception()
        if error is not None:
            log.warning("jupyter-agent: embedding failed: %s", self._clean(error))

    async def drain(self) -> None:
        """Wait until no background embedding runs (tests; the end of a benchmark)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def stop(self) -> None:
        """Cancel the background work (the server stops)."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _only_slow(exc: BaseException) -> bool:
    """True for a deadline that passed with no attempt answered in error (the endpoint was
    only slower than the caller's deadline)."""
    if not isinstance(exc, ProviderTimeout):
        return False
    return all(
        a.get("status") is None and a.get("error") in (None, "deadline") for a in exc.attempts
    )


def _where(tier: Tier) -> str:
    # host and port only: a base URL may hold user:password@ (never logged)
    parts = urlsplit(tier.base_url)
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # not a number: the call fails and says so; the log names the host
        port = ""
    return f"{tier.model} at {parts.hostname or '?'}{port}"
