"""Which performer answers which effect of the catalogue, one group per concern.

Each ``*_group`` function returns the performers of one concern of a run; :func:`table`
puts the groups together (an effect two groups claim is a bug: ValueError):

- :func:`config_group`: ``config.get`` (``history`` and ``memory`` read from the store,
  ``mcp`` the hub's catalogue, kept for the run's ``mcp.*`` calls; v7's ``start``, all
  of them at once: :mod:`.start_answer`, which may start the run's recall early),
  ``clock.now``, ``id.new``;
- :func:`mail_group`: ``mailbox.drain`` and ``chat.post`` (:class:`~.run_inbox.RunInbox`);
- :func:`model_group`: ``http.post`` (the configured deadline caps the adapter's; deltas
  go live for the loop's own calls, not for a cell's);
- :func:`tool_group`: ``cell.run`` and ``bash.run`` (:class:`~.tools.CellRunner`);
- :func:`turn_group`: ``turn.append`` (the turn stored with the run's end summary);
- :func:`recall_group`: ``recall.search`` (the search the start answer began when the
  intent is the one it planned, else a new one; a search that found something is
  published as a ``recall`` event: the hits the model is shown);
- :func:`approval_group`: ``approval.wait``
  (:func:`~jupyter_agent.runtime.runs.approvals.perform_wait`; cancellable).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import replace

from jupyter_agent.core.events.types import Delta, RecallEvent, Retry
from jupyter_agent.core.loop.start import START_KEY
from jupyter_agent.core.mcp.catalogue import McpCatalogue
from jupyter_agent.core.memory.program import AUTORECALL_PROGRAM
from jupyter_agent.core.memory.recall import recall_tokens
from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.effects import (
    APPROVAL_WAIT,
    BASH_RUN,
    CELL_RUN,
    CHAT_POST,
    CLOCK_NOW,
    CONFIG_GET,
    HTTP_POST,
    ID_NEW,
    MAILBOX_DRAIN,
    RECALL_SEARCH,
    TURN_APPEND,
    Effect,
)
from jupyter_agent.runtime.ids import new_id, now_iso
from jupyter_agent.runtime.loop.context import RunContext, StoredTurn
from jupyter_agent.runtime.loop.effects import EffectError, Outcome, Performer
from jupyter_agent.runtime.loop.model_calls import perform
from jupyter_agent.runtime.loop.run_inbox import RunInbox
from jupyter_agent.runtime.loop.start_answer import recall_hits, start_answer
from jupyter_agent.runtime.loop.tools import CellRunner
from jupyter_agent.runtime.mcp.app import mcp_answer
from jupyter_agent.runtime.memory.counts import counts_of
from jupyter_agent.runtime.memory.search import memory_answer
from jupyter_agent.runtime.runs.approvals import perform_wait
from jupyter_agent.runtime.runs.parts import read_history
from jupyter_agent.runtime.runs.records import ended_by

__all__ = [
    "approval_group",
    "config_group",
    "mail_group",
    "model_group",
    "recall_group",
    "table",
    "tool_group",
    "turn_group",
]

Group = Mapping[str, Performer]


def table(*groups: Group) -> dict[str, Performer]:
    """The groups' performers by effect name; ValueError if two claim one effect."""
    out: dict[str, Performer] = {}
    for group in groups:
        for name, performer in group.items():
            if name in out:
                raise ValueError(f"two performers for {name}")
            out[name] = performer
    return out


def config_group(run: RunContext) -> Group:
    """``config.get``, ``clock.now``, ``id.new``."""

    async def config_get(effect: Effect, seq: int) -> Outcome:
        key = effect.data.get("key")
        services = run.services
        if key == "history":
            budget, layout = effect.data.get("budget_tokens"), run.config.history_layout
            return await read_history(services.store, run.chat_id, budget, layout), None
        if key == "memory":
            return await memory_answer(services.store, run.config.recall, owner=run.owner), None
        if key == START_KEY:  # v7: everything its set-up reads, in one answer
            return await start_answer(run, effect.data), None
        if key == "mcp":  # recorded: this run's calls use it
            answer = await mcp_answer(services.mcp)
            run.mcp.catalogue = McpCatalogue.from_json(answer)
            return answer, None
        return run.config.get(str(key)), None

    async def clock_now(effect: Effect, seq: int) -> Outcome:
        return now_iso(), None

    async def id_new(effect: Effect, seq: int) -> Outcome:
        return new_id(str(effect.data.get("kind") or "id")), None

    return {CONFIG_GET: config_get, CLOCK_NOW: clock_now, ID_NEW: id_new}


def mail_group(inbox: RunInbox) -> Group:
    """``mailbox.drain`` and ``chat.post``: the run's inbox and its closing."""

    async def mailbox_drain(effect: Effect, seq: int) -> Outcome:
        return inbox.drain(notices=effect.data.get("notices") is True), None

    async def chat_post(effect: Effect, seq: int) -> Outcome:
        return inbox.post(effect.data), None

    return {MAILBOX_DRAIN: mailbox_drain, CHAT_POST: chat_post}


def model_group(run: RunContext) -> Group:
    """``http.post``: one model call through the shared performer."""

    async def http_post(effect: Effect, seq: int) -> Outcome:
        live = effect.parent is None  # the loop's own call: its deltas go out
        deadline = run.config.ceilings.model_deadline_s
        if deadline > 0 and float(effect.data.get("deadline_s") or 0) > deadline:
            # The configured deadline caps the adapter's default; the intent stays as recorded.
            effect = replace(effect, data={**effect.data, "deadline_s": deadline})
        data, error = await perform(
            effect,
            config={},
            transport=run.services.transport,
            on_delta=(lambda text: run.publish(Delta(text=text))) if live else None,
            on_retry=lambda info: run.publish(
                Retry(attempt=info.attempt, status=info.status, wait_s=info.wait_s)
            ),
        )
        return data, EffectError.from_json(error) if error is not None else None

    return {HTTP_POST: http_post}


def tool_group(run: RunContext, cells: CellRunner) -> Group:
    """``cell.run`` and ``bash.run`` in the run's kernel."""

    async def cell_run(effect: Effect, seq: int) -> Outcome:
        run.mcp.tool_started(seq, cell=True)
        return await cells.cell_run(effect.data, seq), None

    async def bash_run(effect: Effect, seq: int) -> Outcome:
        run.mcp.tool_started(seq, cell=False)
        return await cells.bash_run(effect.data, seq), None

    return {CELL_RUN: cell_run, BASH_RUN: bash_run}


def turn_group(run: RunContext, inbox: RunInbox) -> Group:
    """``turn.append``: the turn stored with the run's end (one transaction, one sync)."""

    async def turn_append(effect: Effect, seq: int) -> Outcome:
        if run.stored is not None:  # a program asking twice: one turn per run, never two
            return None, EffectError.of("ProgramFault", "this run's turn is already stored")
        # Stored with what the host knows (the hashed refs, the agent); the intent stays
        # as the loop yielded it, so a replay compares like for like.
        turn = replace(
            TurnRecord.from_json(run.services.scrubber.clean_json(effect.data)),
            programs=run.program.programs,
            from_agent=run.agent,
        )
        delivered, _left = inbox.held_by(turn)
        ended = ended_by(run.summary, turn, now_iso()) if run.summary else None
        await asyncio.to_thread(
            run.services.store.append_turn, turn, delivered=delivered, ended=ended
        )
        counts_of(run.services.store).turn_stored(run.owner)  # what recall could find
        run.lifecycle.move("store")
        run.stored = StoredTurn(turn, ended)
        return {"ok": True}, None

    return {TURN_APPEND: turn_append}


def recall_group(run: RunContext) -> Group:
    """``recall.search``: memory and earlier chats searched for the message."""

    async def recall_search(effect: Effect, seq: int) -> Outcome:
        prefetch, run.prefetch = run.prefetch, None
        early = prefetch.take(effect.data) if prefetch is not None else None
        # The search started at the run's start answers only the very intent it planned.
        hits = await early if early is not None else await recall_hits(run, effect.data)
        if hits:  # what the model is shown, as it is shown, before its first call
            shown = tuple(h.to_json() for h in hits)
            tokens = recall_tokens(hits, run.chat_id)
            run.publish(RecallEvent(hits=shown, tokens=tokens, program=AUTORECALL_PROGRAM))
        return {"hits": [h.to_json() for h in hits]}, None

    return {RECALL_SEARCH: recall_search}


def approval_group(run: RunContext) -> Group:
    """``approval.wait``: the person's answer (cancellable: a hard break cuts it)."""

    async def approval_wait(effect: Effect, seq: int) -> Outcome:
        waits = run.services.approvals
        answer = await perform_wait(waits, run.run_id, effect.data, run.publish)
        if effect.parent is None:  # the loop's: an approved cell's MCP calls do not wait
            run.mcp.saw_wait(effect.data, answer)
        return answer, None

    return {APPROVAL_WAIT: approval_wait}
