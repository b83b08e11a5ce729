"""A run fed another run's recorded inputs, live against another model or program.

``POST agent/runs/{run_id}/rerun`` (and ``jupyter agent rerun``) starts a new run of the
original's chat that is **not a turn of that chat**: the chat, its mailbox and its events
are untouched; the rerun is a run of its own (``rerun_of`` names the original), with its
own effect log, summary row and events channel (``rerun:<run_id>``), and its own kernel.

What it is fed (:class:`RecordedInputs`, read from the original's effect log, its
top-level effects only) and what it does live:

- ``config.get``: the set-up reads answer as recorded (``start``: the history window,
  memory categories, MCP catalogue, spaces and ceilings the original read), except the
  tier and the model's profile, which are the rerun's (its ``model`` override); any other
  key answers from the rerun's config;
- ``mailbox.drain``: the original's drains, in order (its opening message with its view,
  then the steering it got at the same ordinal); later drains find nothing;
- ``recall.search``: the original's hits, in order (none past them);
- ``approval.wait``: the original's answer to the very same request (kind and code);
  any other is refused (``{approve: false, by: "timeout"}``): a rerun has no person
  watching it;
- ``chat.post``: its bubbles and reply go out on its own channel, nothing is queued;
- ``turn.append``: no turn is stored in the chat: the run's summary ends with it;
- the model calls, cells, commands and in-cell app calls are performed live, except what
  would change the person's things: a rerun has a mailbox of its own (it takes no mail of
  the chat, a break included), and no proposal service, memory or person's kernels (those
  calls answer that they are not available).

A program that asks for the set-up differently from the original's (another family or a
version that reads its set-up key by key) is answered live for the keys the original did
not read: the rerun still runs, with what that program reads today.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from jupyter_agent.core.events.types import BubbleEvent, ReplyEvent, RunEnd
from jupyter_agent.core.loop.start import START_KEY
from jupyter_agent.core.mcp.catalogue import McpCatalogue
from jupyter_agent.core.turns import RunSummary, TurnRecord
from jupyter_agent.effects import (
    APPROVAL_WAIT,
    CHAT_POST,
    CONFIG_GET,
    MAILBOX_DRAIN,
    RECALL_SEARCH,
    TURN_APPEND,
    Effect,
)
from jupyter_agent.exceptions import BadRequest, RunCancelled
from jupyter_agent.runtime.ids import new_id, now_iso
from jupyter_agent.runtime.loop.context import StoredTurn
from jupyter_agent.runtime.loop.driver import RunDriver
from jupyter_agent.runtime.loop.effects import Outcome, Performer
from jupyter_agent.runtime.loop.fed_runs import Reruns
from jupyter_agent.runtime.programs.resolve import RunProgram
from jupyter_agent.runtime.runs.mailbox import Mailbox
from jupyter_agent.runtime.runs.parts import RunConfig, RunServices
from jupyter_agent.runtime.runs.records import LogFacts, ended_by, minimal_turn, store_call
from jupyter_agent.trace.log import EffectLog, GroupSyncer
from jupyter_agent.trace.reader import TraceFile, pair_effects

__all__ = [
    "CHANNEL",
    "FedRun",
    "RecordedInputs",
    "Reruns",
    "rerun_overrides",
    "start_fed_run",
    "start_rerun",
]

log = logging.getLogger(__name__)

#: The events channel of a rerun (``rerun:<run_id>``): never a chat's.
CHANNEL: Final = "rerun:"
_NOBODY: Final = {"approve": False, "rest": False, "by": "timeout"}
_LIVE_START: Final = ("tier_name", "tier", "profile")


@dataclass
class RecordedInputs:
    """The answers a run got to the effects a rerun replays (see the module docstring)."""

    config: dict[str, list[Any]] = field(default_factory=lambda: defaultdict(list))
    drains: list[Any] = field(default_factory=list)
    recalls: list[Any] = field(default_factory=list)
    #: ((kind, code) the original asked about, the person's answer), in order.
    approvals: list[tuple[Any, Any]] = field(default_factory=list)
    #: The opening message's text and view (what the rerun answers).
    text: str = ""
    view: dict[str, Any] | None = None
    #: The kernel's folder (relative to the root; None: the view's folder, else the root).
    cwd: str | None = None

    @classmethod
    def message(
        cls, text: str, *, view: dict[str, Any] | None = None, cwd: str | None = None
    ) -> RecordedInputs:
        """Inputs that open with ``text`` (and ``view``) and hold nothing else: the set-up
        is read live, recall finds nothing, any approval is refused (an eval's case)."""
        item: dict[str, Any] = {"kind": "message", "text": text, "at": now_iso()}
        if view:
            item["view"] = dict(view)
        return cls(drains=[[item]], text=text, view=dict(view) if view else None, cwd=cwd)

    @classmethod
    def of(cls, trace: TraceFile) -> RecordedInputs:
        """The inputs of the run ``trace`` logged (top-level effects with a result)."""
        found = cls()
        for effect in pair_effects(trace):
            if effect.parent is not None or effect.result is None or effect.result.error:
                continue
            answer = effect.result.data
            if effect.name == CONFIG_GET and isinstance(effect.data, Mapping):
                found.config[str(effect.data.get("key"))].append(answer)
            elif effect.name == MAILBOX_DRAIN:
                found.drains.append(answer)
            elif effect.name == RECALL_SEARCH:
                found.recalls.append(answer)
            elif effect.name == APPROVAL_WAIT and isinstance(effect.data, Mapping):
                found.approvals.append(((effect.data.get("kind"), effect.data.get("code")), answer))
        for item in found.drains[0] if found.drains and isinstance(found.drains[0], list) else []:
            if isinstance(item, Mapping) and item.get("kind") == "message":
                found.text = str(item.get("text") or "")
                view = item.get("view")
                found.view = dict(view) if isinstance(view, Mapping) else None
                break
        return found

    @property
    def opened(self) -> bool:
        """Whether the original took an opening message (a rerun needs one)."""
        return bool(self.text) or self.view is not None


def _next(answers: list[Any], asked: dict[str, int], key: str) -> tuple[bool, Any]:
    """The next recorded answer of ``key`` (False when they are used up)."""
    index = asked.get(key, 0)
    asked[key] = index + 1
    return (True, answers[index]) if index < len(answers) else (False, None)


def rerun_overrides(inputs: RecordedInputs) -> dict[str, Callable[[Any, Performer], Performer]]:
    """The performers a rerun's driver uses in place of its own (by effect name); each is
    made with the driver (``RunDriver``) it performs for and the performer it replaces."""
    asked: dict[str, int] = {}

    def config(driver: Any, own: Performer) -> Performer:
        async def config_get(effect: Effect, seq: int) -> Outcome:
            key = str(effect.data.get("key"))
            found, answer = _next(inputs.config.get(key, []), asked, f"config:{key}")
            if not found:
                return await own(effect, seq)  # not read by the original: today's
            if key == START_KEY and isinstance(answer, Mapping):
                live, _ = await own(effect, seq)  # the tier and profile are the rerun's
                if isinstance(live, Mapping):
                    answer = {**answer, **{k: live.get(k) for k in _LIVE_START}}
                if driver.ctx.prefetch is not None:
                    driver.ctx.prefetch.task.cancel()
                driver.ctx.mcp.catalogue = McpCatalogue.from_json(answer.get("mcp") or {})
                driver.ctx.prefetch = None  # its recall answers as recorded
            elif key == "mcp" and isinstance(answer, Mapping):
                driver.ctx.mcp.catalogue = McpCatalogue.from_json(answer)
            return answer, None

        return config_get

    def drain(driver: Any, own: Performer) -> Performer:
        async def mailbox_drain(effect: Effect, seq: int) -> Outcome:
            found, items = _next(inputs.drains, asked, "drain")
            items = list(items) if found and isinstance(items, list) else []
            for item in items:
                if isinstance(item, Mapping) and isinstance(item.get("view"), Mapping):
                    driver.inbox.view = dict(item["view"])  # notebook.read()'s default
            return items, None

        return mailbox_drain

    def post(driver: Any, own: Performer) -> Performer:
        async def chat_post(effect: Effect, seq: int) -> Outcome:
            done, message_id = bool(effect.data.get("done")), new_id("msg")
            kind = ReplyEvent if done else BubbleEvent
            driver.ctx.publish(
                kind(text=str(effect.data.get("text", "")), done=done, message_id=message_id)
            )
            return message_id, None

        return chat_post

    def recall(driver: Any, own: Performer) -> Performer:
        async def recall_search(effect: Effect, seq: int) -> Outcome:
            found, answer = _next(inputs.recalls, asked, "recall")
            return (answer if found else {"hits": []}), None

        return recall_search

    def approval(driver: Any, own: Performer) -> Performer:
        async def approval_wait(effect: Effect, seq: int) -> Outcome:
            # The person's answer holds only for the very request they answered (kind and
            # code alike); any other is refused: a rerun has nobody to ask.
            key = (effect.data.get("kind"), effect.data.get("code"))
            for index, (asked_for, answer) in enumerate(inputs.approvals):
                if asked_for == key:
                    del inputs.approvals[index]
                    return answer, None
            return dict(_NOBODY), None

        return approval_wait

    def turn(driver: Any, own: Performer) -> Performer:
        async def turn_append(effect: Effect, seq: int) -> Outcome:
            run = driver.ctx
            if run.stored is not None:
                return None, None
            record = replace(
                TurnRecord.from_json(run.services.scrubber.clean_json(effect.data)),
                programs=run.program.programs,
                from_agent=run.agent,
            )
            ended = ended_by(run.summary, record, now_iso()) if run.summary else None
            if ended is not None:  # the rerun's summary ends with it; no chat turn
                await asyncio.to_thread(run.services.store.upsert_run, ended)
            run.lifecycle.move("store")
            run.stored = StoredTurn(record, ended)
            return {"ok": True}, None

        return turn_append

    return {
        CONFIG_GET: config,
        MAILBOX_DRAIN: drain,
        CHAT_POST: post,
        RECALL_SEARCH: recall,
        APPROVAL_WAIT: approval,
        TURN_APPEND: turn,
    }


async def start_rerun(
    *,
    original: RunSummary,
    trace: TraceFile,
    config: RunConfig,
    program: RunProgram,
    services: RunServices,
    log_path: Path,
    run_id: str,
    syncer: GroupSyncer | None = None,
    going: Reruns,
) -> RunSummary:
    """Start the rerun ``run_id`` of ``original`` (whose log is ``trace``) with ``config``
    and ``program``; its summary (status ``running``) once stored. ``BadRequest``
    ``bad_run`` when the original took no message (nothing to re-run). The run goes on
    in a task ``going`` keeps until it ends."""
    inputs = RecordedInputs.of(trace)
    if not inputs.opened:
        raise BadRequest(
            f"run {original.run_id} took no message: nothing to re-run", reason="bad_run"
        )
    summary, _task = await start_fed_run(
        FedRun(run_id=run_id, chat_id=original.chat_id, owner=original.owner),
        inputs=inputs,
        config=config,
        program=program,
        services=services,
        log_path=log_path,
        syncer=syncer,
        going=going,
        rerun_of=original.run_id,
    )
    return summary


@dataclass(frozen=True)
class FedRun:
    """Who a fed run is: its id, the chat it answers in (never as a turn) and its owner."""

    run_id: str
    chat_id: str
    owner: str


async def start_fed_run(
    run: FedRun,
    *,
    inputs: RecordedInputs,
    config: RunConfig,
    program: RunProgram,
    services: RunServices,
    log_path: Path,
    going: Reruns,
    syncer: GroupSyncer | None = None,
    rerun_of: str | None = None,
    after_turn: Callable[[RunDriver], Awaitable[None]] | None = None,
    capped: bool = True,
) -> tuple[RunSummary, asyncio.Task[TurnRecord]]:
    """Start a run fed ``inputs`` (a rerun's recorded ones, or an eval case's message);
    its summary (status ``running``) once stored and the task that ends with its turn.

    Its events go to ``rerun:<run_id>``; ``after_turn`` runs once its turn is stored,
    before its kernel goes (an eval's checks, in the kernel the agent used); ``capped``:
    a rerun counted in its owner's reruns going (an eval's are not: its eval bounds them)."""
    run_id = run.run_id
    started = now_iso()
    model = (config.tiers.get("codegen") or {}).get("model")
    summary = RunSummary(
        run_id=run_id,
        chat_id=run.chat_id,
        program=program.ref.key,
        status="running",
        started=started,
        model=str(model) if model else None,
        programs=program.programs,
        agent=config.agent,
        owner=run.owner,
        rerun_of=rerun_of,
    )
    header: dict[str, Any] = {
        "run_id": run_id,
        "chat_id": run.chat_id,
        "program": program.ref.key,
        "programs": list(program.programs),
        "agent": config.agent,
        "created": started,
        "tiers": config.tiers,
        "profile": model,
    }
    if rerun_of is not None:
        header["rerun_of"] = rerun_of
    await asyncio.to_thread(services.store.upsert_run, summary)
    path = (inputs.view or {}).get("path")
    # A fed run compares; it changes nothing of the person's: no mail of the chat taken (a
    # mailbox of its own), no notebook edit proposed, no memory written, nothing run in
    # the person's kernels (those in-cell calls answer that they are not available).
    own = replace(services, mailbox=Mailbox(), proposals=None, memory=None, person_kernels=None)
    effect_log = EffectLog.later(log_path, header, syncer=syncer)
    await asyncio.to_thread(effect_log.open)  # before the answer: its first poll finds it
    driver = RunDriver(
        run_id=run_id,
        chat_id=run.chat_id,
        log_=effect_log,
        config=config,
        services=own,
        cwd=inputs.cwd
        if inputs.cwd is not None
        else (str(Path(path).parent) if isinstance(path, str) and path else None),
        program=program,
        summary=summary,
        overrides=rerun_overrides(inputs),
        channel=CHANNEL + run_id,
        after_turn=after_turn,
    )
    task = asyncio.get_running_loop().create_task(_finish(driver, summary))
    going.add(run_id, driver, task, capped=capped and rerun_of is not None)
    return summary, task


async def _finish(driver: RunDriver, summary: RunSummary) -> TurnRecord:
    """Run the fed run to its end; whatever happens its summary ends and its end goes out;
    returns its turn."""
    store, events = driver.services.store, driver.services.events
    turn: TurnRecord | None = None
    try:
        turn = await driver.run()
    except (Exception, RunCancelled):
        log.exception("rerun %s failed", summary.run_id)
    finally:
        stored = driver.stored
        if stored is None or stored.ended is None:
            record = turn or minimal_turn(summary, "error", "error", LogFacts())
            await store_call(store.upsert_run, ended_by(summary, record, now_iso()))
            turn = record
        else:
            turn = stored.turn
        channel = CHANNEL + summary.run_id
        end = RunEnd(
            stop_reason=turn.llm.stop_reason, end_cause=turn.llm.end_cause, turn=turn.to_json()
        )
        events.publish(channel, summary.run_id, end)
        events.end_run(channel, summary.run_id)
    return turn
