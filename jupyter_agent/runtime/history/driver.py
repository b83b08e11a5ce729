"""The driver of one summary run (``history@v1``): performs its effects, writes its records.

Not the chat's :class:`~jupyter_agent.runtime.loop.driver.RunDriver`: a summary run has no
mailbox, no kernel and no reply. :func:`run_history` makes one run of
:func:`~jupyter_agent.core.history.program.history` for a :class:`HistoryJob`:

- its program: the ``history`` version active for the chat's agent (the
  built-in ``history@v1`` without a registry), under the program guard; a failure of it
  is the outcome's error and the log's ``program_error`` line;
- its effect log ``{runs_dir}/{run_id}.jsonl`` (:class:`~jupyter_agent.trace.log.EffectLog`,
  header program ``history@vN``, ``programs`` (hashed) and ``agent``, the chat summarised
  as ``chat_id``), every effect an intent line before it is performed and a result line
  after. The log uses the ``effect`` sync policy: its outside effects (the model call,
  the store write) are synced first, in a worker thread (a summary is not on any reply's
  path);
- the effects: ``config.get`` (``history_job``: the job; the rest from the
  :class:`~jupyter_agent.runtime.runs.parts.RunConfig` snapshot, tier fallback included),
  ``clock.now``, ``id.new``, ``http.post`` (:func:`~jupyter_agent.runtime.loop.model_calls.perform`
  with the shared :class:`~jupyter_agent.llm.transport.Transport`: the same retries as chat
  runs), ``chunk.store`` (``Store.add_chunk`` in a worker thread, ``{"stored": bool}``;
  a store error is answered as the effect's error);
- its summary row in ``agent_runs`` (``program="history@v1"``, status ``done`` or
  ``error``, model, model calls, usage and cost), written once at the run's end, so a run
  cut by a crash or a stop leaves no ``running`` row for crash recovery to take for a chat
  turn: its span has no summary and is simply made again later.

Cancelling the task running :func:`run_history` (a server stop) cancels the model call in
flight and closes the log; nothing is stored.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from jupyter_agent.core.history.chunks import StoredChunk
from jupyter_agent.core.history.program import (
    HISTORY_PROGRAM,
    HistoryJob,
    HistoryOutcome,
)
from jupyter_agent.core.turns import RunSummary
from jupyter_agent.effects import (
    CHUNK_STORE,
    CLOCK_NOW,
    CONFIG_GET,
    HTTP_POST,
    ID_NEW,
    Effect,
    Result,
)
from jupyter_agent.runtime.ids import new_id, now_iso
from jupyter_agent.runtime.loop.model_calls import perform
from jupyter_agent.runtime.programs.guard import (
    ProgramFailed,
    ProgramGuard,
    drive_program,
    monotonic_elapsed,
)
from jupyter_agent.runtime.programs.resolve import RunProgram, resolve_run_program
from jupyter_agent.runtime.runs.parts import RunConfig
from jupyter_agent.runtime.runs.records import store_call
from jupyter_agent.trace.log import EffectLog

__all__ = ["HistoryRun", "Performer", "drive_logged", "run_history", "run_row"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class HistoryRun:
    """One finished summary run: its summary row and what the program returned."""

    summary: RunSummary
    outcome: HistoryOutcome


class Performer(Protocol):
    """What performs a background run's effects: ``(data, error)`` of each; its ``config``
    holds the run's ceilings."""

    config: RunConfig

    async def __call__(self, effect: Effect) -> tuple[Any, dict[str, Any] | None]: ...


async def perform_shared(
    effect: Effect, config: RunConfig, transport: Any
) -> tuple[Any, dict[str, Any] | None] | None:
    """The effects every background run performs alike (``config.get`` of the snapshot,
    ``clock.now``, ``id.new``, ``http.post`` under the model deadline); None for another."""
    name = effect.name
    if name == CONFIG_GET:
        return config.get(str(effect.data.get("key"))), None
    if name == CLOCK_NOW:
        return now_iso(), None
    if name == ID_NEW:
        return new_id(str(effect.data.get("kind") or "id")), None
    if name == HTTP_POST:
        deadline = float(config.ceilings.get("model_deadline_s") or 0)
        if deadline > 0 and float(effect.data.get("deadline_s") or 0) > deadline:
            effect = Effect(
                name=name, data={**effect.data, "deadline_s": deadline}, parent=effect.parent
            )
        return await perform(effect, config={}, transport=transport)
    return None


class _Performer:
    """Performs the effects of one summary run (see the module docstring)."""

    def __init__(
        self,
        *,
        run_id: str,
        job: HistoryJob,
        config: RunConfig,
        store: Any,
        transport: Any,
        on_stored: Callable[[StoredChunk], None] | None = None,
    ) -> None:
        self.on_stored = on_stored
        self.run_id = run_id
        self.job = job
        self.config = config
        self.store = store
        self.transport = transport

    async def __call__(self, effect: Effect) -> tuple[Any, dict[str, Any] | None]:
        name = effect.name
        if name == CONFIG_GET and effect.data.get("key") == "history_job":
            return self.job.to_json(), None
        shared = await perform_shared(effect, self.config, self.transport)
        if shared is not None:
            return shared
        if name == CHUNK_STORE:
            return await self._store(effect.data), None
        return None, {"type": "UnknownEffect", "message": f"a summary run cannot {name}"}

    async def _store(self, data: dict[str, Any]) -> dict[str, Any]:
        chunk = StoredChunk(
            chat_id=self.job.chat_id,
            level=int(data["level"]),  # type: ignore[arg-type]
            first_turn=int(data["first_turn"]),
            last_turn=int(data["last_turn"]),
            text=str(data["text"]),
            run_id=self.run_id,
            model=str(data["model"]) if data.get("model") else None,
            created=now_iso(),
        )
        stored = await asyncio.to_thread(self.store.add_chunk, chunk)
        if stored and self.on_stored is not None:
            self.on_stored(chunk)  # the chat's ``summary`` event: history made
        return {"stored": bool(stored)}


async def drive_logged(
    log_: EffectLog, performer: Performer, program: RunProgram, run_id: str, chat_id: str
) -> Any:
    async def step(effect: Effect) -> Result:
        seq = log_.intent(effect, durable=False)
        if log_.sync_before(effect.name):
            await asyncio.to_thread(log_.sync)  # never an fsync on the event loop
        try:
            data, error = await performer(effect)
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except Exception as err:  # a failed effect, reported to the program
            log.warning("background run %s: %s failed: %s", run_id, effect.name, err)
            data, error = None, {"type": type(err).__name__, "message": str(err)}
        return log_.result(seq, effect.name, data, error=error)

    guard = ProgramGuard(program.text, performer.config.ceilings, elapsed=monotonic_elapsed())
    try:
        return await drive_program(
            program.factory(run_id, chat_id), step, guard, threaded=not program.builtin
        )
    except ProgramFailed as failed:  # recorded in the log; the run is an error, visibly
        log.error("background run %s: %s", run_id, failed, exc_info=failed)
        log_.program_error(failed.program, failed.error)
        return HistoryOutcome(error=failed.reply)


async def _history_program(programs: Any, store: Any, chat_id: str) -> tuple[RunProgram, str]:
    """The history version active for the chat's agent (the server-wide layer when the
    chat's agent cannot be read), and that agent; the built-in without a registry."""
    try:
        agent = str(await asyncio.to_thread(store.chat_agent, chat_id))
    except Exception:  # a deleted chat, a store without agents: the server-wide layer
        agent = ""
    if programs is None:
        return RunProgram.of_builtin(HISTORY_PROGRAM), agent or "agent"
    return await resolve_run_program(programs, agent, "history"), agent or "agent"


async def _chat_owner(store: Any, chat_id: str) -> str:
    """The chat's owner: its summary runs are theirs (``""`` for a chat gone)."""
    get_chat = getattr(store, "get_chat", None)
    chat = await asyncio.to_thread(get_chat, chat_id) if get_chat is not None else None
    return str(getattr(chat, "owner", "") or "")


async def run_history(
    *,
    job: HistoryJob,
    store: Any,
    transport: Any,
    config: RunConfig,
    runs_dir: Path,
    run_id: str | None = None,
    on_stored: Callable[[StoredChunk], None] | None = None,
    programs: Any = None,
) -> HistoryRun:
    """Make one summary run of ``job``; returns its row (also stored) and outcome.

    A failure of the program (no tier, the provider down, the store refusing) is the
    outcome's ``error`` and status ``error``; only cancellation propagates. The row's
    write is retried a few times and then logged, never raised.
    ``programs``: the program registry (None: the built-in
    ``history@v1``); the run records the version it resolved (``history@vN#hash``).
    """
    run_id = run_id or new_id("run")
    started = now_iso()
    tier = config.get("llm.tier.classify") or config.get("llm.tier.codegen") or {}
    model = tier.get("model") if isinstance(tier, dict) else None
    program, agent = await _history_program(programs, store, job.chat_id)
    owner = await _chat_owner(store, job.chat_id)
    header = {
        "run_id": run_id,
        "chat_id": job.chat_id,
        "program": program.ref.key,
        "programs": list(program.programs),
        "agent": agent,
        "created": started,
        "tiers": config.tiers,
        "profile": model,
        "span": {"level": job.level, "first_turn": job.first_turn, "last_turn": job.last_turn},
    }
    path = Path(runs_dir) / f"{run_id}.jsonl"
    effect_log = await asyncio.to_thread(EffectLog.create, path, header)
    performer = _Performer(
        run_id=run_id,
        job=job,
        config=config,
        store=store,
        transport=transport,
        on_stored=on_stored,
    )
    try:
        outcome = await drive_logged(effect_log, performer, program, run_id, job.chat_id)
    except asyncio.CancelledError:
        raise
    except Exception as err:  # a bug must not stop the scheduler: the run is an error
        log.exception("summary run %s failed", run_id)
        outcome = HistoryOutcome(error=f"{type(err).__name__}: {err}")
    finally:
        await asyncio.to_thread(effect_log.close)
    summary = run_row(
        run_id=run_id,
        chat_id=job.chat_id,
        owner=owner,
        program=program,
        agent=agent,
        started=started,
        outcome=outcome,
        model=str(model) if model else None,
    )
    await store_call(store.upsert_run, summary, attempts=3)
    return HistoryRun(summary=summary, outcome=outcome)


def run_row(
    *,
    run_id: str,
    chat_id: str,
    owner: str,
    program: RunProgram,
    agent: str,
    started: str,
    outcome: HistoryOutcome,
    model: str | None,
) -> RunSummary:
    """The ``agent_runs`` row of a finished background run (``done`` or ``error``)."""
    ok = outcome.ok
    return RunSummary(
        run_id=run_id,
        chat_id=chat_id,
        owner=owner,
        program=program.ref.key,
        programs=program.programs,
        agent=agent,
        status="done" if ok else "error",
        started=started,
        ended=now_iso(),
        model=outcome.model or model,
        model_calls=outcome.model_calls,
        usage=outcome.usage,
        cost=outcome.cost,
        stop_reason="done" if ok else "error",
        end_cause="done" if ok else "error",
    )
