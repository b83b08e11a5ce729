"""The host's side of ``toolcaller@v4``'s memory steps: ``config.get memory`` and
``recall.search``, performed by the run driver.

- :func:`memory_answer`: the categories in use with their counts, read from the store in a
  worker thread at that moment (``store.memory_categories``), and the run's recall
  settings (its :class:`~jupyter_agent.runtime.runs.parts.RunConfig`'s ``recall``, from the
  RunManager traits). A store that cannot be read answers no categories (logged): the run
  goes on, its prompt saying "none yet".
- :func:`begin_search`: the recall of one message: ``store.recall`` in a worker thread (the
  window's own turns and summaries left out), ranked hybrid when the server has an embed
  tier (the ``rank`` hook), then packed with :func:`~jupyter_agent.core.memory.recall.pack_hits`
  (threshold and budget), so what the result holds, what the ``recall`` event shows and
  what the model reads are the same hits. A failure raises: the driver answers the effect
  with the error and the loop goes on without recall. The search has a deadline
  (``timeout_s``, the RunManager trait ``recall_timeout_ms``): it runs before the run's
  first model call, so its time is time to first token. Past it, :class:`RecallTimeout`
  (an error result, as for a failed search); the worker thread is left to finish and its
  late answer is dropped. The hybrid ranking's query vector gets :data:`VECTOR_SHARE` of
  the deadline, embedded while the lexical candidates are read: a slow endpoint makes the
  answer lexical, not late (a failing one also cools the embedder down; one that is only
  slower than this shortened deadline does not), and so does a vector index still
  loading (in the background: a search never waits for it).

Owner: ``""``, the server's user (the multi-user issue gives runs their own).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

from jupyter_agent.core.memory.recall import pack_hits, without_secrets
from jupyter_agent.core.memory.records import RecallHit
from jupyter_agent.store.memory.recall_queries import DEFAULT_CANDIDATES

__all__ = [
    "VECTOR_SHARE",
    "Prefetch",
    "Rank",
    "RecallTimeout",
    "begin_search",
    "memory_answer",
    "search_args",
]

log = logging.getLogger(__name__)

Rank = Callable[..., Awaitable[list[RecallHit]]]
"""``rank(store, query, **store_recall_args) -> hits``: recall ranked another way (hybrid,
section E; with a deadline, also ``vector_deadline_s``); None: the store's own (lexical)
ranking."""

#: The share of a search's deadline the hybrid ranking's query vector may take (the rest
#: is the lexical recall's and the merge's).
VECTOR_SHARE: Final = 0.6


@dataclass(frozen=True)
class Prefetch:
    """A ``recall.search`` started before the program asked (``toolcaller@v7``): the
    intent the host planned and its search. :meth:`take` hands the search over only for an
    equal intent; a search not taken is cancelled (its failure never reported)."""

    data: Mapping[str, Any]
    task: asyncio.Future[list[RecallHit]]

    def __post_init__(self) -> None:
        self.task.add_done_callback(_retrieved)

    def take(self, data: Mapping[str, Any]) -> asyncio.Future[list[RecallHit]] | None:
        """The search, when ``data`` is the planned intent; else None (and it is cancelled)."""
        if dict(data) == dict(self.data):
            return self.task
        self.task.cancel()
        return None


def _retrieved(task: asyncio.Future[list[RecallHit]]) -> None:
    if not task.cancelled():
        task.exception()  # a search nobody took: its failure is not "never retrieved"


class RecallTimeout(Exception):
    """The search took longer than its deadline (the run goes on without recall)."""


async def memory_answer(store: Any, recall: Mapping[str, Any], *, owner: str) -> Any:
    """The ``config.get memory`` answer (see the module docstring)."""
    try:
        rows = await asyncio.to_thread(store.memory_categories, owner=owner)
    except Exception as err:  # the prompt's list is not worth a run: "none yet"
        log.warning("memory categories could not be read (%s): none listed", type(err).__name__)
        rows = []
    return {
        "categories": [{"category": str(c), "count": int(n)} for c, n in rows],
        "recall": dict(recall),
    }


def search_args(data: Mapping[str, Any]) -> dict[str, Any]:
    """The store's recall arguments of a ``recall.search`` intent (ValueError if bad);
    ``candidates`` is the store's ``DEFAULT_CANDIDATES``, as on every recall path
    (``memory.search``, ``GET agent/memories?q=``), with or without an embed tier."""
    query, k, chat_id = data.get("query"), data.get("k"), data.get("chat_id")
    if not isinstance(query, str) or not isinstance(k, int) or isinstance(k, bool) or k < 0:
        raise ValueError("recall.search needs a query and k")
    since = data.get("exclude_since")
    chunks: list[tuple[int, int]] = []
    for pair in data.get("exclude_chunks") or ():
        if not (isinstance(pair, Sequence) and len(pair) == 2):
            raise ValueError(f"bad exclude_chunks item {pair!r}")
        chunks.append((int(pair[0]), int(pair[1])))
    return {
        "k": k,
        "exclude_chat": chat_id if isinstance(chat_id, str) else None,
        "exclude_since": since if isinstance(since, str) else None,
        "exclude_chunks": tuple(chunks),
        "candidates": DEFAULT_CANDIDATES,
    }


def begin_search(
    store: Any,
    data: Mapping[str, Any],
    *,
    owner: str,
    rank: Rank | None = None,
    known: Callable[[str], object] | None = None,
    timeout_s: float | None = None,
) -> asyncio.Future[list[RecallHit]]:
    """The hits of a ``recall.search`` intent, packed (see the module docstring), as a
    future; ``known(text)`` truthy when ``text`` holds a secret the server knows
    (``Scrubber.spans``); :class:`RecallTimeout` past ``timeout_s`` (None: no deadline).
    Begun now: the store's read is in a worker thread before this
    returns (the lexical ranking; the hybrid one starts at the loop's next step), so a
    search begun ahead of its intent (:class:`Prefetch`) runs while the caller goes on
    without yielding. Call on the loop; a bad intent raises ValueError here. The deadline
    (``timeout_s``) counts from the search's first wait, so a read begun early has its head
    start on top of it: the bound on the time to the first model call holds the same."""
    args = search_args(data)
    query = str(data["query"])
    threshold = float(data.get("threshold") or 0.0)
    budget = int(data.get("budget_tokens") or 0)
    loop = asyncio.get_running_loop()
    if args["k"] == 0 or budget <= 0:
        done: asyncio.Future[list[RecallHit]] = loop.create_future()
        done.set_result([])
        return done
    raw: asyncio.Future[list[RecallHit]]
    if rank is None:
        # As asyncio.to_thread, but submitted at once (to_thread's coroutine would submit
        # it at its first step, after the caller yields).
        read = partial(contextvars.copy_context().run, _recall, store, query, owner, args)
        raw = loop.run_in_executor(None, read)
    else:
        more = {} if timeout_s is None else {"vector_deadline_s": timeout_s * VECTOR_SHARE}
        raw = asyncio.ensure_future(rank(store, query, owner=owner, **args, **more))

    async def packed() -> list[RecallHit]:
        try:
            # On timeout the awaited read is cancelled: its late answer is dropped.
            hits = await asyncio.wait_for(raw, timeout_s)
        except asyncio.TimeoutError:  # (TimeoutError itself from Python 3.11)
            ms = round((timeout_s or 0) * 1000)
            raise RecallTimeout(f"recall took longer than {ms} ms: no recall this run") from None
        safe = without_secrets(hits, known)[: args["k"]]
        return pack_hits(safe, threshold, budget, args["exclude_chat"])

    task = asyncio.ensure_future(packed())
    task.add_done_callback(lambda _: _drop(raw))  # a search cancelled: its read too
    return task


def _drop(read: asyncio.Future[list[RecallHit]]) -> None:
    """Cancel a read nobody awaits any more; a failure it already had is not reported."""
    if not read.cancel() and not read.cancelled():
        read.exception()


def _recall(store: Any, query: str, owner: str, args: Mapping[str, Any]) -> list[RecallHit]:
    return list(store.recall(query, owner=owner, **args))
