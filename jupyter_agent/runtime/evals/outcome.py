"""What one case of an eval came to, and the eval's tally (the answer of ``GET agent/evals/{id}``).

A case's ``status``: ``pending`` (not started), ``running``, then ``passed`` (its turn
ended ``done`` and its checks ran without raising), ``failed`` (a check raised: its
message is the exception's, an ``AssertionError``'s text or the failing line), or
``error`` (the turn did not end ``done``, or the checks could not run). A rerun case
(a recorded run re-run) has no checks: it passes when its turn ends ``done``; its
``reference`` is the original's final reply and ``similarity`` how close the new reply
is to it (``difflib``'s ratio, 0..1).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any, Final

from jupyter_agent.core.digest.cells import CellResult
from jupyter_agent.core.turns import TurnRecord

__all__ = ["CaseOutcome", "check_message", "tally"]

_ANSI: Final = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_MESSAGE_CHARS: Final = 2000
_REPLY_CHARS: Final = 4000  # an eval keeps many: the run's own turn holds it whole
_ARROW: Final = re.compile(r"^---->\s*\d*\s*")  # IPython's mark of the failing line


@dataclass
class CaseOutcome:
    """One case's run on one model, one repeat (see the module docstring)."""

    case: str
    model: str | None
    repeat: int
    status: str = "pending"
    run_id: str | None = None
    message: str = ""
    reply: str = ""
    reference: str | None = None
    similarity: float | None = None
    stop_reason: str | None = None
    end_cause: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    duration_s: float | None = None
    checks_output: str = ""
    #: Filled from the turn, then the checks: what decides the status.
    checked: CellResult | None = field(default=None, repr=False)

    def ended(self, turn: TurnRecord, duration_s: float, *, has_checks: bool) -> None:
        """Set the outcome from the case's turn (and the checks already run)."""
        self.duration_s = round(duration_s, 3)
        self.stop_reason, self.end_cause = turn.llm.stop_reason, turn.llm.end_cause
        reply = turn.replies[-1].text if turn.replies else ""
        self.reply = reply if len(reply) <= _REPLY_CHARS else reply[: _REPLY_CHARS - 1] + "…"
        self.input_tokens = turn.llm.usage.input_tokens
        self.output_tokens = turn.llm.usage.output_tokens
        self.cost_usd = turn.llm.cost
        if self.reference is not None:
            ratio = difflib.SequenceMatcher(None, self.reference, reply).ratio()
            self.reference = self.reference[:_REPLY_CHARS]
            self.similarity = round(ratio, 3)
        if turn.llm.stop_reason != "done":
            self.status = "error"
            self.message = f"the turn ended {turn.llm.stop_reason} ({turn.llm.end_cause})"
            return
        if not has_checks:
            self.status = "passed"
            return
        if self.checked is None:
            self.status = "error"
            self.message = self.message or "the checks did not run"
            return
        self.checks_output = _printed(self.checked)
        if self.checked.error is not None:
            self.status = "failed"
            self.message = check_message(self.checked)
        else:
            self.status = "passed"

    def to_json(self) -> dict[str, Any]:
        """The outcome as the eval's answer holds it."""
        return {
            "case": self.case,
            "model": self.model,
            "repeat": self.repeat,
            "status": self.status,
            "run_id": self.run_id,
            "message": self.message,
            "reply": self.reply,
            "reference": self.reference,
            "similarity": self.similarity,
            "stop_reason": self.stop_reason,
            "end_cause": self.end_cause,
            "tokens": {"input": self.input_tokens, "output": self.output_tokens},
            "cost_usd": self.cost_usd,
            "duration_s": self.duration_s,
            "checks_output": self.checks_output,
        }


def _printed(result: CellResult) -> str:
    parts = [str(out.get("text", "")) for out in result.outputs if out.get("name") == "stdout"]
    return "".join(parts)[-_MESSAGE_CHARS:]


def check_message(result: CellResult) -> str:
    """Why the checks failed: the exception and its text, else the traceback's last lines
    (a bare ``assert``'s failing line)."""
    error = result.error
    if error is None:
        return ""
    if error.evalue:
        return f"{error.ename}: {error.evalue}"[:_MESSAGE_CHARS]
    lines = [_ANSI.sub("", line) for line in error.traceback]
    text = "\n".join(lines).strip().splitlines()
    where = [line.strip() for line in text if line.strip().startswith("---->")]
    said = _ARROW.sub("", where[-1]).strip() if where else ""
    return f"{error.ename}" + (f" at: {said}" if said else "")


def tally(outcomes: list[CaseOutcome]) -> dict[str, dict[str, Any]]:
    """Per model: ``{passed, failed, errors, total, pass_rate, cost_usd, tokens}``."""
    out: dict[str, dict[str, Any]] = {}
    for o in outcomes:
        key = o.model or "(the agent's tiers)"
        row = out.setdefault(
            key,
            {"passed": 0, "failed": 0, "errors": 0, "total": 0, "cost_usd": 0.0, "tokens": 0},
        )
        row["total"] += 1
        if o.status == "passed":
            row["passed"] += 1
        elif o.status == "failed":
            row["failed"] += 1
        elif o.status == "error":
            row["errors"] += 1
        row["cost_usd"] = round(row["cost_usd"] + (o.cost_usd or 0.0), 6)
        row["tokens"] += o.input_tokens + o.output_tokens
    for row in out.values():
        row["pass_rate"] = round(row["passed"] / row["total"], 4) if row["total"] else 0.0
    return out
