"""Naming chats after their first turn, in the background (the host of ``title@v1``).

:class:`ChatNamer` is offered every chat the history scheduler looks at after a stored
turn, with the run config it read (:meth:`~ChatNamer.offer`: no I/O, never blocking). It
starts one naming run for a chat when all of these hold:

- naming is on (``JupyterAgent.name_chats``, default true);
- the chat's agent has a ready ``classify`` tier of its own (the codegen fallback does not
  count: naming then spends no call of the chat's model);
- the chat holds exactly one turn, not the demo model's, and its title is still the one
  its first message gave it (a chat the person titled or renamed keeps its name).

The run (:func:`run_title`) is logged like a summary run (``{runs_dir}/{run_id}.jsonl``,
header program ``title@v1``, its row in ``agent_runs``); its ``chat.retitle`` effect sets
the name only while the title is still the expected one (one conditional write: a rename
that lands first wins), then the chat's ``title`` event tells its open views. A failure
is logged and the chat keeps its title: naming is a nicety, never retried.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jupyter_agent.core.demo import is_demo_model
from jupyter_agent.core.events.types import TitleEvent
from jupyter_agent.core.history.naming import TITLE_PROGRAM, TitleJob
from jupyter_agent.core.history.program import HistoryOutcome
from jupyter_agent.effects import CHAT_RETITLE, CONFIG_GET, Effect
from jupyter_agent.runtime.history.driver import drive_logged, perform_shared, run_row
from jupyter_agent.runtime.ids import new_id, now_iso
from jupyter_agent.runtime.programs.resolve import RunProgram
from jupyter_agent.runtime.runs.chat_service import chat_title
from jupyter_agent.runtime.runs.parts import RunConfig
from jupyter_agent.runtime.runs.records import store_call
from jupyter_agent.trace.log import EffectLog

__all__ = ["ChatNamer", "run_title"]

log = logging.getLogger(__name__)


class _TitlePerformer:
    """Performs one naming run's effects: the job, the shared ones, ``chat.retitle``."""

    def __init__(
        self,
        *,
        job: TitleJob,
        config: RunConfig,
        store: Any,
        transport: Any,
        on_retitled: Callable[[str], None] | None,
    ) -> None:
        self.job, self.config, self.store, self.transport = job, config, store, transport
        self.on_retitled = on_retitled

    async def __call__(self, effect: Effect) -> tuple[Any, dict[str, Any] | None]:
        if effect.name == CONFIG_GET and effect.data.get("key") == "title_job":
            return self.job.to_json(), None
        shared = await perform_shared(effect, self.config, self.transport)
        if shared is not None:
            return shared
        if effect.name == CHAT_RETITLE:
            title = str(effect.data.get("title") or "")
            expected = str(effect.data.get("expected") or "")
            done = await asyncio.to_thread(
                self.store.retitle_chat_if, self.job.chat_id, expected, title
            )
            if done and self.on_retitled is not None:
                self.on_retitled(title)
            return {"retitled": bool(done)}, None
        return None, {"type": "UnknownEffect", "message": f"a naming run cannot {effect.name}"}


async def run_title(
    *,
    job: TitleJob,
    store: Any,
    transport: Any,
    config: RunConfig,
    runs_dir: Path,
    agent: str,
    owner: str,
    on_retitled: Callable[[str], None] | None = None,
    run_id: str | None = None,
) -> Any:
    """Make one naming run of ``job``; returns its ``agent_runs`` row (also stored).

    A failure of the program is the row's ``error``; only cancellation propagates."""
    run_id = run_id or new_id("run")
    started = now_iso()
    tier = config.get("llm.tier.classify") or {}
    model = tier.get("model") if isinstance(tier, dict) else None
    program = RunProgram.of_builtin(TITLE_PROGRAM)
    header = {
        "run_id": run_id,
        "chat_id": job.chat_id,
        "program": program.ref.key,
        "programs": list(program.programs),
        "agent": agent,
        "created": started,
        "tiers": config.tiers,
        "profile": model,
    }
    path = Path(runs_dir) / f"{run_id}.jsonl"
    effect_log = await asyncio.to_thread(EffectLog.create, path, header)
    performer = _TitlePerformer(
        job=job, config=config, store=store, transport=transport, on_retitled=on_retitled
    )
    try:
        outcome = await drive_logged(effect_log, performer, program, run_id, job.chat_id)
    except asyncio.CancelledError:
        raise
    except Exception as err:  # a bug must not reach the caller: the run is an error
        log.exception("naming run %s failed", run_id)
        outcome = HistoryOutcome(error=f"{type(err).__name__}: {err}")
    finally:
        await asyncio.to_thread(effect_log.close)
    row = run_row(
        run_id=run_id,
        chat_id=job.chat_id,
        owner=owner,
        program=program,
        agent=agent,
        started=started,
        outcome=outcome,
        model=str(model) if model else None,
    )
    await store_call(store.upsert_run, row, attempts=3)
    if outcome.error:
        log.warning("jupyter-agent: naming chat %s failed: %s", job.chat_id, outcome.error)
    return row


class ChatNamer:
    """Names chats after their first turn (see the module docstring).

    ``events`` is the chats' event bus.
    """

    def __init__(
        self,
        *,
        store: Any,
        transport: Any,
        runs_dir: Path,
        events: Any = None,
        enabled: bool = True,
    ) -> None:
        self.store, self.transport, self.events = store, transport, events
        self.runs_dir = Path(runs_dir)
        self._enabled = enabled
        self._tasks: dict[str, asyncio.Task[None]] = {}
        # Chats looked at with a turn stored: never due again (bounded: cleared when big).
        self._seen: set[str] = set()
        self._stopping = False

    def offer(self, chat_id: str, config: RunConfig) -> None:
        """A turn of ``chat_id`` was stored and ``config`` is its agent's and owner's run
        config now: name the chat soon if it is due (see the module docstring). Call it
        on the event loop; no I/O (the store is read in the naming task)."""
        if self._stopping or not self._enabled or not config.tiers.get("classify"):
            return
        if chat_id in self._tasks or chat_id in self._seen:
            return
        task = asyncio.get_running_loop().create_task(self._name(chat_id, config))
        self._tasks[chat_id] = task
        task.add_done_callback(lambda _t: self._tasks.pop(chat_id, None))

    @property
    def busy(self) -> bool:
        """Whether a naming run is going."""
        return bool(self._tasks)

    async def idle(self) -> None:
        """Wait until no naming run is going (tests and benchmarks)."""
        while self._tasks:
            await asyncio.wait(list(self._tasks.values()))

    async def stop(self) -> None:
        """Cancel the naming runs going (the chats keep their titles)."""
        self._stopping = True
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _due(self, chat_id: str) -> tuple[bool, tuple[TitleJob, str] | None]:
        """``(seen, due)``: whether the chat has a turn stored (it is never due again),
        and its naming job and owner when it is due now (blocking: store reads)."""
        chat = self.store.get_chat(chat_id)
        if chat is None or not chat.title:
            return False, None
        turns = self.store.turns_at(chat_id, 1, 2)
        if len(turns) != 1:  # named after the first turn only
            return bool(turns), None
        turn = turns[0]
        if chat.title != chat_title(turn.user_text):
            return True, None  # titled or renamed by the person: theirs
        if is_demo_model(turn.model):
            return True, None  # the demo's script is not a conversation to name
        reply = "\n\n".join(r.text.strip() for r in turn.replies if r.text.strip())
        job = TitleJob(chat_id=chat_id, title=chat.title, user=turn.user_text, reply=reply)
        return True, (job, str(chat.owner or ""))

    async def _name(self, chat_id: str, config: RunConfig) -> None:
        try:
            seen, due = await asyncio.to_thread(self._due, chat_id)
            if seen:  # on the loop: offer() reads the set there
                if len(self._seen) > 100_000:
                    self._seen.clear()  # bounded; a chat seen again is looked at again
                self._seen.add(chat_id)
            if due is None:
                return
            job, owner = due
            run_id = new_id("run")
            await run_title(
                job=job,
                store=self.store,
                transport=self.transport,
                config=config,
                runs_dir=self.runs_dir,
                agent=config.agent,
                owner=owner,
                on_retitled=lambda title: self._named(chat_id, run_id, title),
                run_id=run_id,
            )
        except asyncio.CancelledError:
            raise
        except Exception:  # the store, or a bug: the chat keeps its title
            log.warning("jupyter-agent: naming chat %s failed", chat_id, exc_info=True)

    def _named(self, chat_id: str, run_id: str, title: str) -> None:
        """The chat's ``title`` event (the naming run's only one, kept at once)."""
        if self.events is None:
            return
        self.events.publish(chat_id, run_id, TitleEvent(title=title))
        self.events.end_run(chat_id, run_id)
