"""The approval policy of ``toolcaller@v5`` (pure): which cells wait for the person.

``ceilings.approval`` (the admin trait ``c.JupyterAgent.approval``; absent in a recorded
config = ``none``, so older logs replay) is one of :data:`POLICIES`:

- ``none``: nothing waits;
- ``writes``: a ``run_cell`` / ``bash`` call whose ``writes`` argument is true (the model
  says the cell writes or deletes files) waits;
- ``every_cell``: every ``run_cell`` / ``bash`` call waits.

A wait is one ``approval.wait`` effect ``{approval_id, kind ("cell" | "bash"), code,
summary, timeout_s}`` (``timeout_s``: the run's wall time left, so a wait counts against
``max_wall_s``) answered ``{approve: bool, rest: bool, by: "person" | "break" |
"timeout"}`` (:class:`Decision`). ``rest`` (the person's "approve the rest of this turn")
sets the turn-wide flag :attr:`Approvals.rest`: no later call of the turn waits. A denied
call is answered with an ``is_error`` tool result (:func:`refusal`) and never runs. A
decision made ``by`` a soft break means the person asked the run to stop: the loop answers
the remaining calls as not run and ends at its next drain.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from jupyter_agent.effects import APPROVAL_WAIT, Effect, EffectGen
from jupyter_agent.exceptions import RunCancelled

__all__ = [
    "BREAK_REFUSAL",
    "POLICIES",
    "REFUSAL",
    "TIMEOUT_REFUSAL",
    "Approvals",
    "Decision",
    "Policy",
    "needs_wait",
    "refusal",
    "summary_of",
    "wait",
    "writes_of",
]

Policy = Literal["none", "writes", "every_cell"]
POLICIES: Final[tuple[Policy, ...]] = ("none", "writes", "every_cell")

#: The tool result of a cell the person denied.
REFUSAL: Final = "The person denied running this cell."
#: ... of a cell whose wait ran out of the turn's wall time.
TIMEOUT_REFUSAL: Final = "Not run: the person did not answer before the turn's time ran out."
#: ... of a cell whose wait a soft break answered (and of the calls after it).
BREAK_REFUSAL: Final = "Not run: the person asked you to stop."

_SUMMARY_MAX = 120


@dataclass(frozen=True, kw_only=True)
class Decision:
    """The answer of one ``approval.wait``."""

    approve: bool
    rest: bool = False
    by: Literal["person", "break", "timeout"] = "person"

    @classmethod
    def from_json(cls, data: Any) -> Decision:
        """Read a result's data; anything but an explicit ``approve: true`` denies."""
        if not isinstance(data, Mapping):
            return cls(approve=False)
        by = data.get("by")
        return cls(
            approve=data.get("approve") is True,
            rest=data.get("rest") is True,
            by=by if by in ("person", "break", "timeout") else "person",
        )

    def to_json(self) -> dict[str, Any]:
        return {"approve": self.approve, "rest": self.rest, "by": self.by}


@dataclass(kw_only=True)
class Approvals:
    """One turn's approval state: the policy and the "approve the rest" flag."""

    policy: Policy = "none"
    rest: bool = False

    def needs_wait(self, *, writes: bool) -> bool:
        """Whether a call (with its ``writes`` argument) waits for the person."""
        return needs_wait(self.policy, writes=writes, rest=self.rest)

    def take(self, decision: Decision) -> None:
        """Note a decision: an approval with ``rest`` approves the rest of the turn."""
        if decision.approve and decision.rest:
            self.rest = True


def needs_wait(policy: str, *, writes: bool, rest: bool) -> bool:
    """``every_cell``: every call; ``writes``: a call with ``writes`` true; never once the
    rest of the turn is approved, nor under ``none`` (or an unknown policy)."""
    if rest:
        return False
    if policy == "every_cell":
        return True
    return policy == "writes" and writes


def writes_of(args: Mapping[str, Any]) -> bool:
    """A call's ``writes`` argument: true only when the model said so (a JSON true)."""
    return args.get("writes") is True


def summary_of(kind: str, code: str) -> str:
    """One line saying what waits: the kind and the code's first non-blank line, cut."""
    first = next((ln.strip() for ln in code.splitlines() if ln.strip()), "")
    if len(first) > _SUMMARY_MAX:
        first = first[: _SUMMARY_MAX - 1] + "…"
    lines = len(code.strip().splitlines())
    more = f" (+{lines - 1} lines)" if lines > 1 else ""
    what = "Run the command" if kind == "bash" else "Run the cell"
    return f"{what}: {first}{more}"


def refusal(decision: Decision) -> str:
    """The tool result text of a call that was not approved."""
    if decision.by == "break":
        return BREAK_REFUSAL
    if decision.by == "timeout":
        return TIMEOUT_REFUSAL
    return REFUSAL


def wait(
    *, approval_id: str, kind: Literal["cell", "bash"], code: str, timeout_s: float
) -> EffectGen[Decision]:
    """Yield the ``approval.wait`` and return the decision; RunCancelled (with the cut
    result's detail) when a hard break cancelled it."""
    data = {
        "approval_id": approval_id,
        "kind": kind,
        "code": code,
        "summary": summary_of(kind, code),
        "timeout_s": max(0.0, round(timeout_s, 3)),
    }
    result = yield Effect(name=APPROVAL_WAIT, data=data)
    if result.cancelled:
        raise RunCancelled(detail=result.data)
    if result.error is not None:  # the host could not ask: nothing runs unapproved
        return Decision(approve=False)
    return Decision.from_json(result.data)
