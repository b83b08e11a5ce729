"""Opening a run: its records written in the order that loses nothing.

:func:`open_run` stores the run's summary (and the message opening it, when it is new)
in one transaction, then creates its effect log; if the log cannot be created, the run is
ended ``error`` and a new message taken back (:func:`unstart`), so a refused message
leaves nothing behind. Every store and file call runs in a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_agent.core.turns import RunSummary
from jupyter_agent.exceptions import NotFound
from jupyter_agent.runtime.ids import new_id, now_iso
from jupyter_agent.runtime.programs.guard import DEFAULT_STEP_TIMEOUT_S
from jupyter_agent.runtime.programs.resolve import RunProgram, resolve_run_program
from jupyter_agent.runtime.runs.mailbox import MailItem, MessageItem
from jupyter_agent.runtime.runs.parts import RunConfig, RunServices
from jupyter_agent.runtime.runs.records import ended_summary, store_call
from jupyter_agent.trace.log import EffectLog, GroupSyncer

__all__ = ["Opening", "open_run", "unstart"]


@dataclass(frozen=True, kw_only=True)
class Opening:
    """A run whose records are written: what launching it needs."""

    summary: RunSummary
    effect_log: EffectLog
    config: RunConfig
    view: dict[str, Any] | None
    text: str
    message_id: str | None
    #: The program the run runs (resolved for ``config.agent``).
    program: RunProgram

    @property
    def cwd(self) -> str | None:
        """The kernel's folder (relative to the root): the viewed document's folder."""
        path = (self.view or {}).get("path")
        return str(Path(path).parent) if isinstance(path, str) and path else None


async def open_run(
    services: RunServices,
    config: RunConfig,
    log_path: Callable[[str], Path],
    chat_id: str,
    items: Sequence[MailItem],
    *,
    run_id: str | None = None,
    new: MessageItem | None = None,
    syncer: GroupSyncer | None = None,
    step_timeout_s: float = DEFAULT_STEP_TIMEOUT_S,
    owner: str = "",
) -> Opening:
    """Write a new run's records; its first message in ``items`` opens it.

    ``new``: the one item not stored yet (the message just sent); it is stored with the
    run, in one transaction. Raises NotFound when the chat is gone, else what the store or
    the file system raised, with nothing of the run left ``running`` and ``new`` not kept.
    ``syncer``: the log's sync policy (see :meth:`EffectLog.create`; None: ``effect``).
    The run's program is resolved first (:func:`resolve_run_program`, for ``config.agent``):
    the header, the summary and the opening name it. ``step_timeout_s``: a deployed
    program's step deadline, recorded in the header for replay. ``owner``: the chat's
    owner, the run's (its summary records it).
    """
    first = next(i for i in items if isinstance(i, MessageItem))
    run_id = run_id or new_id("run")
    program = await resolve_run_program(services.programs, config.agent, "toolcaller")
    started = now_iso()
    model = (config.tiers.get("codegen") or {}).get("model")
    header: dict[str, Any] = {
        "run_id": run_id,
        "chat_id": chat_id,
        "program": program.ref.key,
        # Every program the run is made of, hashed (DESIGN section 7): its own first.
        "programs": list(program.programs),
        "agent": config.agent,
        "created": started,
        "tiers": config.tiers,
        "profile": model,
    }
    if not program.builtin:  # what a replay's guard counts with and steps it under
        header["step_timeout_s"] = step_timeout_s
        header["ceilings"] = config.ceilings.to_json()
    summary = RunSummary(
        run_id=run_id,
        chat_id=chat_id,
        program=program.ref.key,
        status="running",
        started=started,
        model=str(model) if model else None,
        programs=program.programs,
        agent=config.agent,
        owner=owner,
    )
    store = services.store
    # The chat's history is not read here: the run reads its window through an effect.
    message = new.to_json() if new is not None else None
    if not await asyncio.to_thread(store.open_run, summary, message=message):
        raise NotFound(f"no chat {chat_id[:120]}")  # deleted meanwhile: nothing was stored
    try:
        effect_log = await asyncio.to_thread(
            EffectLog.create, log_path(run_id), header, syncer=syncer
        )
    except Exception:
        await unstart(services, summary, new, None)
        raise
    return Opening(
        summary=summary,
        effect_log=effect_log,
        config=config,
        view=first.view,
        text=first.text,
        message_id=first.id,
        program=program,
    )


async def unstart(
    services: RunServices,
    summary: RunSummary,
    message: MessageItem | None,
    effect_log: EffectLog | None,
) -> None:
    """A run that could not start: nothing ran, so it must not stay ``running`` (and a
    message stored with it is taken back: the sender gets an error, not a run)."""
    if effect_log is not None:
        # Nothing ran: the log holds its header only, and must not be left behind.
        await asyncio.to_thread(effect_log.close)
        await asyncio.to_thread(effect_log.path.unlink, missing_ok=True)
    if message is not None:
        await store_call(services.store.delete_mail, [str(message.id)], attempts=3)
    await store_call(
        services.store.upsert_run,
        ended_summary(summary, now_iso(), status="error", stop="error", cause="error"),
    )
