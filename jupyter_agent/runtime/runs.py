"""The run manager: starts runs, routes messages to mailboxes, breaks runs, recovers.

One run at a time per chat; chats run concurrently, each in its own kernel. A message
for a chat whose run is going lands in that run's mailbox (``routed: "mailbox"``) and
never starts a second run; at a run's end the driver's last drain leaves what is left in
the mailbox, and a waiting message starts the next run: nothing is dropped.

Handlers (``server/``) translate HTTP into these calls and nothing else.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from jupyter_agent.core.loop import PROGRAM
from jupyter_agent.core.turns import RunSummary, TurnLLM, TurnRecord
from jupyter_agent.exceptions import RunCancelled
from jupyter_agent.runtime.driver import RunConfig, RunDriver, RunServices
from jupyter_agent.runtime.ids import new_id, now_iso
from jupyter_agent.trace.log import EffectLog

__all__ = ["ActiveRun", "BreakState", "RunManager"]

log = logging.getLogger(__name__)

BreakState = Literal["breaking", "ended"]


@dataclass(kw_only=True)
class ActiveRun:
    """A run in progress: its driver and the task running it."""

    run_id: str
    chat_id: str
    driver: RunDriver
    task: asyncio.Task[None]
    soft_break: bool = False


class RunManager:
    """Owns the runs of one server (see the module docstring)."""

    def __init__(
        self,
        *,
        services: RunServices,
        config: Callable[[], RunConfig],
        runs_dir: Path,
    ) -> None:
        self.services = services
        self._config = config
        self.runs_dir = Path(runs_dir)
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self._active: dict[str, ActiveRun] = {}  # chat id -> run
        self._by_run: dict[str, ActiveRun] = {}
        self._after_break: dict[str, list[dict[str, Any]]] = {}  # for the next run

    # --- queries ---------------------------------------------------------------------

    def active_run_id(self, chat_id: str) -> str | None:
        """The id of the chat's run in progress, if any."""
        run = self._active.get(chat_id)
        return run.run_id if run else None

    def active_runs(self) -> list[str]:
        """The ids of every run in progress."""
        return list(self._by_run)

    def log_path(self, run_id: str) -> Path:
        """Where the run's effect log lives."""
        return self.runs_dir / f"{run_id}.jsonl"

    # --- commands --------------------------------------------------------------------

    def send(
        self,
        chat_id: str,
        *,
        text: str,
        view: dict[str, Any] | None = None,
        attachments: Sequence[dict[str, Any]] = (),
    ) -> dict[str, Any]:
        """Queue a user message; start a run unless one is going. ``{run_id, routed}``."""
        item: dict[str, Any] = {"kind": "message", "text": text, "at": now_iso()}
        if view:
            item["view"] = view
        if attachments:
            item["attachments"] = list(attachments)
        active = self._active.get(chat_id)
        if active is not None:
            if active.soft_break:
                # The run is wrapping up on the person's request: this message is for the
                # next run, not steering for the one that is stopping.
                self._after_break.setdefault(chat_id, []).append(item)
            else:
                self.services.mailbox.put(chat_id, item)
            return {"run_id": active.run_id, "routed": "mailbox"}
        run_id = self._start(chat_id, view=view, text=text)
        # Queued only once the run exists (its first drain comes after this returns).
        self.services.mailbox.put(chat_id, item)
        return {"run_id": run_id, "routed": "run"}

    async def break_run(self, run_id: str, *, hard: bool) -> BreakState | None:
        """Break a run: soft at its next drain, hard at once. None for an unknown run."""
        active = self._by_run.get(run_id)
        if active is None:
            exists = await asyncio.to_thread(self.services.store.get_run, run_id)
            return "ended" if exists is not None or self.log_path(run_id).exists() else None
        if hard:
            await active.driver.hard_break()
        else:
            active.soft_break = True
            self.services.mailbox.put(
                active.chat_id, {"kind": "break", "hard": False, "at": now_iso()}
            )
        return "breaking"

    async def wait(self, run_id: str) -> None:
        """Wait until the run (if in progress) has ended."""
        active = self._by_run.get(run_id)
        if active is not None:
            await asyncio.shield(active.task)

    async def shutdown(self) -> None:
        """Hard-break every run and wait for them to end."""
        runs = list(self._by_run.values())
        for run in runs:
            await run.driver.hard_break()
        if runs:
            await asyncio.gather(*(r.task for r in runs), return_exceptions=True)

    async def recover(self) -> list[str]:
        """Runs left running by a crashed server become interrupted, with a minimal turn.

        No cell is re-run: the run simply ends as ``error`` / ``restart``.
        """
        store = self.services.store
        left = await asyncio.to_thread(store.runs_with_status, "running")
        recovered = []
        for summary in left:
            if summary.run_id in self._by_run:
                continue
            now = now_iso()
            if await asyncio.to_thread(store.get_turn_by_run, summary.run_id) is None:
                turn = _minimal_turn(summary, now, "error", "restart", self._user_text(summary))
                await asyncio.to_thread(store.append_turn, turn)
            await asyncio.to_thread(
                store.upsert_run,
                _ended_summary(summary, now, status="interrupted", stop="error", cause="restart"),
            )
            recovered.append(summary.run_id)
        return recovered

    # --- internals -------------------------------------------------------------------

    def _user_text(self, summary: RunSummary) -> str:
        """The opening message of a run, read back from its log (best effort)."""
        try:
            from jupyter_agent.trace.log import read_log

            for line in read_log(self.log_path(summary.run_id)).lines:
                if line.name == "mailbox.drain" and line.phase == "result":
                    for item in line.data or []:
                        if isinstance(item, dict) and item.get("kind") == "message":
                            return str(item.get("text", ""))
                    break
        except Exception:
            log.debug("could not read the log of %s", summary.run_id, exc_info=True)
        return ""

    def _start(self, chat_id: str, *, view: dict[str, Any] | None, text: str) -> str:
        run_id = new_id("run")
        config = self._config()
        started = now_iso()
        model = (config.tiers.get("codegen") or {}).get("model")
        header = {
            "run_id": run_id,
            "chat_id": chat_id,
            "program": PROGRAM,
            "created": started,
            "tiers": config.tiers,
            "profile": model,
        }
        history = self.services.store.list_turns(chat_id)
        effect_log = EffectLog.create(self.log_path(run_id), header)
        summary = RunSummary(
            run_id=run_id,
            chat_id=chat_id,
            program=PROGRAM,
            status="running",
            started=started,
            model=str(model) if model else None,
        )
        self.services.store.upsert_run(summary)
        try:
            return self._launch(summary, effect_log, config, history, view, text)
        except Exception:
            # Nothing ran: the run must not stay "running" until the next restart.
            effect_log.close()
            self.services.store.upsert_run(
                _ended_summary(summary, now_iso(), status="error", stop="error", cause="error")
            )
            raise

    def _launch(
        self,
        summary: RunSummary,
        effect_log: EffectLog,
        config: RunConfig,
        history: list[TurnRecord],
        view: dict[str, Any] | None,
        text: str,
    ) -> str:
        run_id, chat_id, started = summary.run_id, summary.chat_id, summary.started
        path = (view or {}).get("path")
        cwd = str(Path(path).parent) if isinstance(path, str) and path else None
        driver = RunDriver(
            run_id=run_id,
            chat_id=chat_id,
            log_=effect_log,
            config=config,
            history=history,
            services=self.services,
            cwd=cwd,
        )
        self.services.store.touch_chat(chat_id, now=started, active_run_id=run_id)
        # The opening message rides on run_start so every client shows it at once.
        self.services.events.publish(chat_id, run_id, "run_start", started=started, text=text)
        task = asyncio.get_running_loop().create_task(self._run(summary, driver))
        active = ActiveRun(run_id=run_id, chat_id=chat_id, driver=driver, task=task)
        self._active[chat_id] = active
        self._by_run[run_id] = active
        return run_id

    async def _run(self, summary: RunSummary, driver: RunDriver) -> None:
        """Run to the end; whatever happens, the run gets a turn, a summary and a successor."""
        store = self.services.store
        chat_id, run_id = summary.chat_id, summary.run_id
        turn: TurnRecord | None = None
        try:
            turn = await driver.run()
        except (Exception, RunCancelled):  # a bug must not wedge the chat: end the run
            log.exception("run %s failed", run_id)
        if turn is None:
            turn = _minimal_turn(summary, now_iso(), "error", "error", self._user_text(summary))
        if not driver.turn_written:
            await _store_call(store.append_turn, turn, attempts=3)
        status = {"done": "done", "wrapup": "done", "break_hard": "interrupted"}.get(
            turn.llm.stop_reason, "error"
        )
        ended = _ended_summary(
            summary, now_iso(), status=status, stop=turn.llm.stop_reason, cause=turn.llm.end_cause
        )
        await _store_call(store.upsert_run, _with_counts(ended, turn))
        # No await from here to the next start: a message arriving now either finds this
        # run gone and starts its own, or is already queued and starts the next one below.
        self._active.pop(chat_id, None)
        self._by_run.pop(run_id, None)
        mailbox = self.services.mailbox
        mailbox.drop_breaks(chat_id)
        for item in self._after_break.pop(chat_id, ()):
            mailbox.put(chat_id, item)
        waiting = mailbox.first_message(chat_id)
        self.services.events.publish(
            chat_id,
            run_id,
            "run_end",
            stopReason=turn.llm.stop_reason,
            endCause=turn.llm.end_cause,
            turn=turn.to_json(),
        )
        if waiting is not None and chat_id not in self._active:
            try:
                self._start(chat_id, view=waiting.get("view"), text=str(waiting.get("text", "")))
            except Exception:
                log.exception("could not start the next run of %s", chat_id)
        else:
            await _store_call(store.touch_chat, chat_id, now=ended.ended, active_run_id=None)


async def _store_call(fn: Callable[..., Any], *args: Any, attempts: int = 1, **kw: Any) -> None:
    """A store write at a run's end: retried, and logged rather than raised on failure."""
    for attempt in range(1, attempts + 1):
        try:
            await asyncio.to_thread(fn, *args, **kw)
            return
        except Exception:
            if attempt == attempts:
                log.exception("store write %s failed", getattr(fn, "__name__", fn))
            else:
                await asyncio.sleep(0.2 * attempt)


def _ended_summary(
    summary: RunSummary, now: str, *, status: str, stop: str, cause: str
) -> RunSummary:
    from dataclasses import replace

    return replace(
        summary,
        status=status,  # type: ignore[arg-type]
        ended=now,
        stop_reason=stop,  # type: ignore[arg-type]
        end_cause=cause,  # type: ignore[arg-type]
    )


def _with_counts(summary: RunSummary, turn: TurnRecord) -> RunSummary:
    from dataclasses import replace

    return replace(
        summary,
        model=turn.model or summary.model,
        model_calls=turn.llm.model_calls,
        cells=turn.llm.cells,
        usage=turn.llm.usage,
        cost=turn.llm.cost,
    )


def _minimal_turn(
    summary: RunSummary, now: str, stop: str, cause: str, user_text: str
) -> TurnRecord:
    """The turn the host writes for a run whose loop could not write one."""
    return TurnRecord(
        id=new_id("turn"),
        chat_id=summary.chat_id,
        run_id=summary.run_id,
        user_text=user_text,
        created=summary.started,
        interrupted=True,
        model=summary.model,
        llm=TurnLLM(stop_reason=stop, end_cause=cause),  # type: ignore[arg-type]
    )
