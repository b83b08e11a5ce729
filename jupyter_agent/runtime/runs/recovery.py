"""Crash recovery at a server's start: runs left ``running`` end, and no message is lost.

For each run the store still shows ``running`` (the server died during it, or the store
failed at its end):

- its turn: the one already stored, else the one its effect log holds (the loop's
  ``turn.append`` intent: the run finished and only the store write was lost), else a
  minimal turn holding the messages the log shows it took (opening text and steering),
  stopped ``error`` / ``restart``; written together with the deletion of those messages
  from the durable mailbox;
- its summary: ended as its turn says when the log held the turn, else ``interrupted``
  with stop ``error`` and cause ``restart``.

No cell is re-run. Messages still queued afterwards (acknowledged, never taken by a run)
are returned per chat, oldest first, for the run manager to start runs with.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from jupyter_agent.core.turns import RunSummary, TurnRecord
from jupyter_agent.exceptions import StoreUnavailable
from jupyter_agent.runtime.ids import now_iso
from jupyter_agent.runtime.runs.records import ended_by, ended_summary, log_facts, minimal_turn

__all__ = ["queued_by_chat", "recover_runs"]

log = logging.getLogger("jupyter_agent.runtime.runs.manager")


async def recover_runs(store: Any, log_path: Callable[[str], Path], *, skip: set[str]) -> list[str]:
    """End every run left ``running`` (but those in ``skip``); returns their ids.

    One run's failure (its chat deleted, a record that does not read) is logged and the
    others go on; a store that is unavailable raises (the start is retried).
    """
    left: list[RunSummary] = await asyncio.to_thread(store.runs_with_status, "running")
    recovered = []
    for summary in left:
        if summary.run_id in skip:
            continue
        try:
            await _recover_one(store, summary, log_path(summary.run_id))
        except StoreUnavailable:
            raise
        except Exception:
            log.exception("could not recover run %s", summary.run_id)
            continue
        recovered.append(summary.run_id)
    return recovered


async def _recover_one(store: Any, summary: RunSummary, path: Path) -> None:
    facts = await asyncio.to_thread(log_facts, path)
    stored = await asyncio.to_thread(store.get_turn_by_run, summary.run_id)
    from_log = None
    if stored is None and facts.turn is not None:
        try:
            from_log = TurnRecord.from_json(facts.turn)
            if summary.programs:  # the host names the programs, as a live run's store does
                from_log = replace(
                    from_log, programs=tuple(summary.programs), from_agent=summary.agent
                )
        except ValueError:
            log.warning("run %s: its logged turn does not read back", summary.run_id)
    turn = stored or from_log or minimal_turn(summary, "error", "restart", facts)
    now = now_iso()
    if from_log is not None or (stored is not None and not stored.interrupted):
        ended = ended_by(summary, turn, now)
    else:
        ended = ended_summary(summary, now, status="interrupted", stop="error", cause="restart")
    if summary.rerun_of is not None:
        # A rerun is no turn of its chat (and took no mail): its summary ends, nothing more.
        await asyncio.to_thread(store.upsert_run, ended)
    elif await asyncio.to_thread(store.get_chat, summary.chat_id) is None:
        # The chat was deleted: no turn to keep, and no mail for it to deliver.
        await asyncio.to_thread(store.delete_mail, facts.message_ids)
        await asyncio.to_thread(store.upsert_run, ended)
    else:
        await asyncio.to_thread(
            store.append_turn, turn, delivered=facts.message_ids, ended=ended, bump_to_end=False
        )


async def queued_by_chat(store: Any) -> dict[str, list[dict[str, Any]]]:
    """The durable mailbox's messages, per chat, oldest first (mailbox items); those of a
    deleted chat are forgotten."""
    queued: list[dict[str, Any]] = await asyncio.to_thread(store.queued_mail)
    chats: dict[str, list[dict[str, Any]]] = {}
    for item in queued:
        chat_id = str(item.pop("chat_id"))
        chats.setdefault(chat_id, []).append(item)
    for chat_id in list(chats):
        if await asyncio.to_thread(store.get_chat, chat_id) is None:  # deleted: nobody to answer
            await asyncio.to_thread(store.delete_mail, [str(i["id"]) for i in chats.pop(chat_id)])
    return chats
