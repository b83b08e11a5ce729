"""The host's side of ``approval.wait`` (``toolcaller@v5``): the open waits and their answers.

:class:`ApprovalWaits` is the registry of the waits open on one server (one per run
manager, in :class:`~jupyter_agent.runtime.runs.parts.RunServices`), keyed by ``(run_id,
approval_id)``. :func:`perform_wait` is the driver's performer: it publishes ``approval``
(the code and a one-line summary), waits for the answer, publishes ``approval_end`` and
returns the result data ``{approve, rest, by}``:

- ``by: "person"``: :meth:`ApprovalWaits.decide` (``POST
  agent/runs/{run_id}/approvals/{approval_id}``); ``rest``: approve the rest of the turn;
- ``by: "timeout"``: nobody answered within the intent's ``timeout_s`` (the run's wall
  time left): not approved;
- ``by: "break"``: a soft break (:meth:`ApprovalWaits.break_run`) answers every open wait
  of the run at once, not approved; the loop then ends at its next drain. The run stays
  marked broken: a wait it opens later (the break landed while the model was answering,
  before the loop's next drain) is answered the same way at once, and nobody is asked
  (no ``approval`` event): the person asked the run to stop.

A hard break cancels the wait like any effect in flight (the driver's task): the result is
``{"cancelled": "break_hard"}`` and ``approval_end`` says not approved. A decision for an
unknown wait is :class:`~jupyter_agent.exceptions.NotFound` (404); for one already answered
(or ended) :class:`~jupyter_agent.exceptions.ApprovalDecided` (409). Everything runs on the
event loop (no lock needed: there is no await between a check and its change).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final

from jupyter_agent.core.events.types import ApprovalEnd, ApprovalEvent, Event
from jupyter_agent.exceptions import ApprovalDecided, BadRequest, NotFound

__all__ = ["ApprovalWaits", "perform_wait"]

#: How many ended waits are remembered (to answer a late decision 409, not 404).
_ENDED_KEPT: Final = 4096

Key = tuple[str, str]

#: What may wait: a cell, a bash command, a mutating MCP tool, code for the person's kernel.
_KINDS: Final = ("cell", "bash", "mcp", "kernel")

#: The answer of a wait a soft break ended (or found the run broken before it opened).
_BREAK: Final = {"approve": False, "rest": False, "by": "break"}


class ApprovalWaits:
    """The open approval waits of one server (see the module docstring)."""

    def __init__(self) -> None:
        self._open: dict[Key, asyncio.Future[dict[str, Any]]] = {}
        self._ended: OrderedDict[Key, bool] = OrderedDict()
        self._broken: OrderedDict[str, None] = OrderedDict()  # runs a soft break stopped

    def open(self, run_id: str, approval_id: str) -> asyncio.Future[dict[str, Any]]:
        """Register a wait; its future gets the decision's data."""
        key = (run_id, approval_id)
        if key in self._open or key in self._ended:
            raise ValueError(f"approval {approval_id} of run {run_id} was already asked")
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._open[key] = future
        return future

    def close(self, run_id: str, approval_id: str, *, approve: bool) -> None:
        """The wait ended (answered, timed out, cancelled): forget it, remember its end."""
        key = (run_id, approval_id)
        self._open.pop(key, None)
        self._ended[key] = approve
        while len(self._ended) > _ENDED_KEPT:
            self._ended.popitem(last=False)

    def pending(self, run_id: str) -> list[str]:
        """The ids of the run's open waits, oldest first."""
        return [a for (r, a), f in self._open.items() if r == run_id and not f.done()]

    def decide(self, run_id: str, approval_id: str, *, approve: bool, rest: bool = False) -> None:
        """The person's answer. NotFound for a wait never asked (or long forgotten),
        ApprovalDecided for one already answered or ended."""
        key = (run_id, approval_id)
        future = self._open.get(key)
        if future is None:
            if key in self._ended:
                raise ApprovalDecided(f"approval {approval_id} was already decided")
            raise NotFound(f"no approval {approval_id[:80]} waits in run {run_id[:80]}")
        if future.done():
            raise ApprovalDecided(f"approval {approval_id} was already decided")
        future.set_result(
            {"approve": bool(approve), "rest": bool(approve and rest), "by": "person"}
        )

    def broken(self, run_id: str) -> bool:
        """Whether a soft break stopped the run (its later waits ask nobody)."""
        return run_id in self._broken

    def break_run(self, run_id: str) -> int:
        """A soft break: answer every open wait of the run ``{approve: false, by: "break"}``
        and mark the run broken (see :meth:`broken`); returns how many were answered."""
        self._broken[run_id] = None
        while len(self._broken) > _ENDED_KEPT:
            self._broken.popitem(last=False)
        answered = 0
        for (r, _a), future in list(self._open.items()):
            if r == run_id and not future.done():
                future.set_result(dict(_BREAK))
                answered += 1
        return answered


async def perform_wait(
    waits: ApprovalWaits, run_id: str, data: dict[str, Any], publish: Callable[[Event], None]
) -> dict[str, Any]:
    """Perform one ``approval.wait`` (intent ``data``); see the module docstring."""
    approval_id = data.get("approval_id")
    kind = data.get("kind")
    if not isinstance(approval_id, str) or not approval_id or kind not in _KINDS:
        raise BadRequest(
            "approval.wait needs an approval_id and a kind (cell, bash, mcp or kernel)"
        )
    timeout_s = max(0.0, float(data.get("timeout_s") or 0))
    if waits.broken(run_id):  # the person asked the run to stop: ask them nothing
        return dict(_BREAK)
    future = waits.open(run_id, approval_id)
    publish(
        ApprovalEvent(
            approval_id=approval_id,
            kind=kind,
            code=str(data.get("code") or ""),
            summary=str(data.get("summary") or ""),
        )
    )
    answer: dict[str, Any] = {"approve": False, "rest": False, "by": "timeout"}
    try:
        answer = await asyncio.wait_for(asyncio.shield(future), timeout_s)
    except asyncio.TimeoutError:
        pass  # nobody answered in time: not approved
    finally:  # cancelled by a hard break too: the card closes, not approved
        approve = bool(answer.get("approve"))
        waits.close(run_id, approval_id, approve=approve)
        publish(ApprovalEnd(approval_id=approval_id, approve=approve))
    return answer
