"""The MCP endpoint's time-travel and evaluation tools (issue 31): ``fork_chat``,
``diff_runs``, ``rerun``, ``run_eval``, ``eval_status``.

Each translates a call into one of the agent's services, as the REST routes do
(``POST agent/chats/{id}/fork``, ``GET agent/runs/{a}/diff/{b}``, ``POST
agent/runs/{id}/rerun``, ``POST agent/evals``, ``GET agent/evals/{id}``), scoped to the
caller's owner (an admin reads any run's diff); the services' refusals become tool errors
(:mod:`.tools`). Each answers ``(value, text)``: the structured content and, when not
None, the text shown instead of the JSON.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from jupyter_agent.runtime.services import Services
from jupyter_agent.server.mcp.schemas import Args

__all__ = ["TIME_TOOLS", "Call", "TimeTools"]

_POLL_S: Final = 0.25
Answer = tuple[dict[str, Any], str | None]


@dataclass(frozen=True)
class Call:
    """One call: whose it is, its arguments, how to report progress."""

    owner: str
    admin: bool
    args: Args
    progress: Callable[[float, float | None, str], Awaitable[None]]


class TimeTools:
    """The tools' bodies over the endpoint's services."""

    def __init__(self, services: Callable[[], Awaitable[Services]]) -> None:
        self._services = services

    async def fork_chat(self, call: Call) -> Answer:
        args = call.args
        chats = (await self._services()).chats
        made = await chats.fork(
            args.string("chat_id"),
            owner=call.owner,
            turn=args.integer("turn", default=0, low=0, high=1_000_000),
            title=args.optional_string("title"),
        )
        return made, None

    async def diff_runs(self, call: Call) -> Answer:
        runs = (await self._services()).runs
        a, b = call.args.string("run_a"), call.args.string("run_b")
        return await runs.diff(a, b, owner=call.owner, admin=call.admin), None

    async def rerun(self, call: Call) -> Answer:
        runs = (await self._services()).runs
        answer = await runs.rerun(
            call.args.string("run_id"),
            owner=call.owner,
            model=call.args.optional_string("model"),
            program=call.args.optional_string("program"),
        )
        return answer, None

    async def run_eval(self, call: Call) -> Answer:
        args = call.args
        evals = (await self._services()).evals
        wait = args.flag("wait", default=False)
        timeout_s = args.number("timeout_s", default=600.0, low=1.0, high=3600.0)
        state = await evals.start(
            owner=call.owner,
            suite=args.optional_string("suite"),
            runs=args.strings("runs"),
            models=[m.strip() or None for m in args.strings("models")] or [None],
            program=args.optional_string("program"),
            repeats=args.integer("repeats", default=1, low=1, high=20),
            concurrency=args.integer("concurrency", default=4, low=1, high=16),
        )
        if not wait:
            return state, None
        deadline = time.monotonic() + timeout_s
        finished = 0
        while state["status"] != "done" and time.monotonic() < deadline:
            await asyncio.sleep(_POLL_S)
            state = await evals.get(state["eval_id"], owner=call.owner)
            if state["finished"] != finished:
                finished = state["finished"]
                await call.progress(finished, state["total"], "cases ended")
        if state["status"] != "done":
            return state, f"eval {state['eval_id']} still going after {timeout_s:g} s"
        return (
            state,
            f"{state['passed']} of {state['total']} case runs passed; report: {state['report']}",
        )

    async def eval_status(self, call: Call) -> Answer:
        evals = (await self._services()).evals
        return await evals.get(call.args.string("eval_id"), owner=call.owner), None


#: The tools :class:`TimeTools` answers, by name.
TIME_TOOLS: Final = frozenset({"fork_chat", "diff_runs", "rerun", "run_eval", "eval_status"})
