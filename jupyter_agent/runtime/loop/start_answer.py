"""The host's answer to ``toolcaller@v7``'s one start read, ``config.get {key: "start"}``
(:mod:`jupyter_agent.core.loop.start`), and the recall it starts early.

:func:`start_answer` gathers the parts concurrently (``asyncio.gather``): the chat's window
read from the store in a worker thread (with v6's retries of an unavailable store); the
owner's memory categories and what recall could find from the in-process counters
(:mod:`jupyter_agent.runtime.memory.counts`: no query but an owner's first); the MCP
catalogue from the hub's cache (:func:`~jupyter_agent.runtime.mcp.app.mcp_current`); the
ceilings, spaces, tier and profile from the run's config snapshot. The window's budget is
:func:`~jupyter_agent.core.loop.start.history_budget`, the program's own formula.

Then, when the program will search (:func:`~jupyter_agent.core.loop.start.planned_recall`
of the answer and the opening message waiting in the mailbox, as the drain will hand it,
scrubbed), the search starts at once (:class:`~jupyter_agent.runtime.memory.search.Prefetch`:
with the lexical ranking its store read is in a worker thread before the answer returns;
the hybrid one, with an ``embed`` tier, starts at the loop's next step) and runs while the
answer is logged, the mailbox drained and the prompt built. The
``recall.search`` performer answers with it only when the program's intent equals the
planned one (else it searches afresh): the log holds what the program asked and got.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, Final

from jupyter_agent.core.ceilings import Ceilings
from jupyter_agent.core.history.answer import HistoryWindow
from jupyter_agent.core.loop.start import Findable, StartAnswer, history_budget, planned_recall
from jupyter_agent.core.mcp.catalogue import McpCatalogue
from jupyter_agent.core.memory.program import MemoryConfig, RecallSettings
from jupyter_agent.core.memory.records import RecallHit
from jupyter_agent.exceptions import ConfigError, StoreUnavailable
from jupyter_agent.llm.tiers import tier_from_config
from jupyter_agent.runtime.loop.context import RunContext
from jupyter_agent.runtime.mcp.app import mcp_current
from jupyter_agent.runtime.memory.counts import counts_of
from jupyter_agent.runtime.memory.hybrid import hybrid_rank
from jupyter_agent.runtime.memory.search import Prefetch, begin_search
from jupyter_agent.runtime.runs.mailbox import items_json
from jupyter_agent.runtime.runs.parts import read_anchored

__all__ = ["recall_hits", "start_answer"]

log = logging.getLogger(__name__)

_HISTORY_ATTEMPTS: Final = 3  # as parts.read_history: a store briefly unavailable


async def _window(run: RunContext, budget: int) -> HistoryWindow:
    services, layout = run.services, dict(run.config.history_layout)
    for attempt in range(1, _HISTORY_ATTEMPTS + 1):
        try:
            return await asyncio.to_thread(
                read_anchored, services.store, run.chat_id, budget, layout
            )
        except StoreUnavailable:
            if attempt == _HISTORY_ATTEMPTS:
                raise
            await asyncio.sleep(0.2 * attempt)
    raise AssertionError("unreachable")


async def _history(run: RunContext, budget: int | None) -> tuple[HistoryWindow | None, str | None]:
    if budget is None:  # a bad tier: the run ends before it reads a window
        return None, None
    try:
        return await _window(run, budget), None
    except Exception as err:  # the run ends saying so (as v6's failed history read)
        text = run.services.scrubber.scrub(f"{type(err).__name__}: {err}")
        log.warning("run %s: the history could not be read (%s)", run.run_id, text)
        return None, text


async def start_answer(run: RunContext, data: Mapping[str, Any]) -> dict[str, Any]:
    """The answer of ``config.get {key: "start", tier}`` (see the module docstring); may
    start the run's recall search (``run.prefetch``)."""
    config = run.config
    tier_name = str(data.get("tier") or "codegen")
    ceilings = config.get("ceilings")
    tier = config.get(f"llm.tier.{tier_name}")
    model = tier.get("model") if isinstance(tier, Mapping) else None
    profile = config.get(f"llm.profile.{model}") if isinstance(model, str) else None
    try:
        resolved = tier_from_config(tier_name, tier, profile)
        budget: int | None = history_budget(Ceilings.from_json(ceilings), resolved)
    except ConfigError:
        budget = None
    store = run.services.store
    (window, error), counts, catalogue = await asyncio.gather(
        _history(run, budget),
        counts_of(store).snapshot(run.owner),
        _catalogue(run),
    )
    settings = RecallSettings.from_json(config.recall)
    answer = StartAnswer(
        tier_name=tier_name,
        ceilings=dict(ceilings),
        spaces=config.get("spaces") or {},
        tier=dict(tier) if isinstance(tier, Mapping) else None,
        profile=dict(profile) if isinstance(profile, Mapping) else None,
        budget_tokens=budget,
        history=window,
        history_error=error,
        memory=MemoryConfig(categories=counts.categories, recall=settings),
        mcp=catalogue,
        findable=Findable(memories=counts.memories, turns=counts.turns),
    )
    run.mcp.catalogue = answer.mcp  # recorded: this run's mcp.* calls use it
    _prefetch(run, answer)
    return answer.to_json()


async def _catalogue(run: RunContext) -> McpCatalogue:
    try:
        return await mcp_current(run.services.mcp)
    except Exception as err:  # the prompt's MCP list is not worth a run: none
        log.warning("run %s: no MCP catalogue (%s)", run.run_id, type(err).__name__)
        return McpCatalogue()


def _prefetch(run: RunContext, answer: StartAnswer) -> None:
    """Start the search the program will ask for (when it will ask for one)."""
    first = run.services.mailbox.first_message(run.chat_id)
    if first is None:
        return
    item = run.services.scrubber.clean_json(items_json([first]))[0]
    planned = planned_recall(answer, str(item.get("text") or ""), run.chat_id)
    if planned is None:
        return
    try:
        task = _begin(run, planned)  # its store read is under way before the answer is logged
    except Exception as err:  # a bad plan, an executor shut down: the program's own intent
        log.debug("run %s: no early recall (%s)", run.run_id, type(err).__name__)
        return  # searches (and fails, if it does) as it would without the early start
    run.prefetch = Prefetch(data=planned, task=task)


async def recall_hits(run: RunContext, data: Mapping[str, Any]) -> list[RecallHit]:
    """The hits of the ``recall.search`` intent ``data`` for this run (packed; raises as
    :func:`~jupyter_agent.runtime.memory.search.begin_search`)."""
    return await _begin(run, data)


def _begin(run: RunContext, data: Mapping[str, Any]) -> asyncio.Future[list[RecallHit]]:
    services = run.services
    return begin_search(
        services.store,
        data,
        owner=run.owner,
        rank=hybrid_rank(services.embedder, run.owner),  # None: lexical
        known=services.scrubber.spans,
        timeout_s=run.config.recall_timeout_ms / 1000,
    )
