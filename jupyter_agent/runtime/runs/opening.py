"""Opening a run: its records written in the order that loses nothing, at the cost of one
commit.

What a message writes before it is acknowledged (the 202) is one
:class:`~jupyter_agent.store.repo.MessageWrite`: the message in the durable mailbox, the
run it opens (its ``running`` summary, the chat's active run), the chat's title; and
:class:`MessageWrites` commits the writes of messages sent at the same time (several
chats) together: one transaction, one sync of the database, each sender its own answer.

:func:`open_run` stores the run's summary (and the message opening it, when it is new)
that way; its effect log is made then but created on disk by the run itself, after the
acknowledgement and before its first effect (:meth:`EffectLog.later
<jupyter_agent.trace.log.EffectLog.later>`): the message is durable in the store, and a
crash before the log exists is recovered as a run killed before its first line (its
message starts a new run). If the run cannot be launched it is ended ``error`` and a new
message taken back (:func:`unstart`), so a refused message leaves nothing behind. Every
store and file call runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jupyter_agent.core.turns import RunSummary
from jupyter_agent.exceptions import NotFound, StoreUnavailable
from jupyter_agent.runtime.ids import new_id, now_iso
from jupyter_agent.runtime.programs.guard import DEFAULT_STEP_TIMEOUT_S
from jupyter_agent.runtime.programs.resolve import RunProgram, resolve_run_program
from jupyter_agent.runtime.runs.mailbox import MailItem, MessageItem
from jupyter_agent.runtime.runs.parts import RunConfig, RunServices
from jupyter_agent.runtime.runs.records import ended_summary, store_call
from jupyter_agent.store.repo import MessageWrite, Store
from jupyter_agent.trace.log import EffectLog, GroupSyncer

__all__ = ["MessageWrites", "Opening", "open_run", "unstart"]

log = logging.getLogger("jupyter_agent.runtime.runs.manager")

_Pending = tuple[MessageWrite, "asyncio.Future[bool]"]


class MessageWrites:
    """Group commit of the writes messages make before their acknowledgement.

    :meth:`write` queues one and waits for its commit. The writes queued in the same turn
    of the event loop, or while a commit is in flight, are committed together
    (:meth:`Store.store_messages <jupyter_agent.store.repo.Store.store_messages>`: one
    worker-thread call, one transaction). Each caller gets its own answer: a group the
    database refuses is tried again one write per transaction, so one bad write (a
    duplicate id, ...) fails its own sender only; a store that is unavailable (locked,
    unreachable) fails the whole group at once, each sender with its StoreUnavailable.
    Order: a chat's messages are sent under its lock (one write of a chat in flight at a
    time), so they commit in the order sent.
    ``commits`` counts the group transactions (for tests and benchmarks).
    """

    def __init__(self, store: Store | Any) -> None:
        """``store``: the Store (anything else only in a test's manager that stores none)."""
        self._store = store
        self._queued: list[_Pending] = []
        self._flushing: asyncio.Task[None] | None = None
        self.commits = 0

    async def write(self, write: MessageWrite) -> bool:
        """Commit ``write`` (with whatever else is queued); False: its chat does not
        exist (nothing of it stored). Raises what the store raised for it."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[bool] = loop.create_future()
        self._queued.append((write, done))
        if self._flushing is None:
            # Started at the loop's next turn: writes queued in this one join the group.
            self._flushing = loop.create_task(self._flush())
        return await done

    async def _flush(self) -> None:
        try:
            while self._queued:
                group, self._queued = self._queued, []
                await self._commit(group)
        finally:
            self._flushing = None

    async def _commit(self, group: list[_Pending]) -> None:
        writes = [write for write, _ in group]
        answers: Sequence[bool | BaseException]
        try:
            self.commits += 1
            answers = await asyncio.to_thread(self._store.store_messages, writes)
        except StoreUnavailable as exc:  # locked, unreachable: no write would pass now
            answers = [exc] * len(group)
        except Exception as exc:
            if len(group) == 1:
                answers = [exc]
            else:  # whose write was it? Each in its own transaction.
                log.warning("a group of %d messages failed (%s): one by one", len(group), exc)
                answers = await asyncio.to_thread(self._one_by_one, writes)
        except BaseException:  # cancelled (a stop): no sender may wait forever
            for _, done in group:
                done.cancel()
            raise
        for (_, done), answer in zip(group, answers, strict=True):
            if done.done():  # the sender gave up waiting
                continue
            if isinstance(answer, BaseException):
                done.set_exception(answer)
            else:
                done.set_result(answer)

    def _one_by_one(self, writes: Sequence[MessageWrite]) -> list[bool | BaseException]:
        answers: list[bool | BaseException] = []
        for write in writes:
            try:
                self.commits += 1
                answers.append(self._store.store_messages([write])[0])
            except Exception as exc:
                answers.append(exc)
        return answers


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
    writes: MessageWrites,
    run_id: str | None = None,
    new: MessageItem | None = None,
    title: str | None = None,
    syncer: GroupSyncer | None = None,
    step_timeout_s: float = DEFAULT_STEP_TIMEOUT_S,
    owner: str = "",
    activations: int | None = None,
) -> Opening:
    """Write a new run's records; its first message in ``items`` opens it.

    ``new``: the one item not stored yet (the message just sent); it is stored with the
    run (and ``title``, the chat's if it has none), in one transaction committed by
    ``writes`` (with other chats' messages of the moment). Raises NotFound when the chat
    is gone, else what the store raised, with nothing of the run stored and ``new`` not
    kept. The effect log is made, not created: the run creates it (``effect_log.open()``,
    after the acknowledgement, before its first effect).
    ``syncer``: the log's sync policy (see :meth:`EffectLog.create`; None: ``effect``).
    The run's program is resolved first (:func:`resolve_run_program`, for ``config.agent``):
    the header, the summary and the opening name it. ``step_timeout_s``: a deployed
    program's step deadline, recorded in the header for replay. ``owner``: the chat's
    owner, the run's (its summary records it). ``activations``: the store's activation
    mark as the sender just read it, if it did (see :func:`resolve_run_program`).
    """
    first = next(i for i in items if isinstance(i, MessageItem))
    run_id = run_id or new_id("run")
    program = await resolve_run_program(
        services.programs, config.agent, "toolcaller", mark=activations
    )
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
    # The chat's history is not read here: the run reads its window through an effect.
    write = MessageWrite(
        chat_id=chat_id,
        item=new.to_json() if new is not None else None,
        run=summary,
        title=title,
        now=started,
    )
    if not await writes.write(write):
        raise NotFound(f"no chat {chat_id[:120]}")  # deleted meanwhile: nothing was stored
    effect_log = EffectLog.later(log_path(run_id), header, syncer=syncer)
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
