"""The turn record and the run summary: what a run leaves in the agent database.

:class:`TurnRecord` is ``agent_turns`` as REST JSON (DESIGN section 3)::

    {id, chat_id, run_id, userText, steering: [{text, at}], replies: [{text, done}],
     fromAgent, traceRef, interrupted, created, durationMs, model,
     llm: {stopReason, endCause, modelCalls, cells,
           usage: {in, out, cacheRead, cacheWrite, reasoning}, cost,
           fingerprints: {system, identity}}}

``stopReason`` is one of ``done``, ``wrapup``, ``break_hard``, ``error``; ``endCause`` one
of :data:`END_CAUSES`. :class:`RunSummary` is the one ``agent_runs`` row per run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from jupyter_agent.messages import Usage, usage_from_json, usage_to_json

__all__ = [
    "END_CAUSES",
    "EndCause",
    "Reply",
    "RunStatus",
    "RunSummary",
    "Steering",
    "StopReason",
    "TurnLLM",
    "TurnRecord",
]

StopReason = Literal["done", "wrapup", "break_hard", "error"]
EndCause = Literal[
    "done",
    "length",
    "ceiling:model_calls",
    "ceiling:cells",
    "ceiling:wall_s",
    "ceiling:cost_usd",
    "break_soft",
    "break_hard",
    "error",
    "restart",
]
END_CAUSES: Final = frozenset(
    {
        "done",
        "length",
        "ceiling:model_calls",
        "ceiling:cells",
        "ceiling:wall_s",
        "ceiling:cost_usd",
        "break_soft",
        "break_hard",
        "error",
        "restart",
    }
)
RunStatus = Literal["running", "done", "interrupted", "error"]


@dataclass(frozen=True, kw_only=True)
class Steering:
    """A user message that reached a run mid-way through its mailbox."""

    text: str
    at: str

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "at": self.at}


@dataclass(frozen=True, kw_only=True)
class Reply:
    """A message the user saw: a progress bubble (``done`` false) or the final reply."""

    text: str
    done: bool

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "done": self.done}


@dataclass(frozen=True, kw_only=True)
class TurnLLM:
    """The ``llm`` object of a turn record."""

    stop_reason: StopReason
    end_cause: EndCause
    model_calls: int = 0
    cells: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    fingerprints: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "stopReason": self.stop_reason,
            "endCause": self.end_cause,
            "modelCalls": self.model_calls,
            "cells": self.cells,
            "usage": usage_to_json(self.usage),
            "cost": self.cost,
            "fingerprints": dict(self.fingerprints),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TurnLLM:
        return cls(
            stop_reason=data["stopReason"],
            end_cause=data["endCause"],
            model_calls=int(data.get("modelCalls", 0)),
            cells=int(data.get("cells", 0)),
            usage=usage_from_json(data.get("usage") or {}),
            cost=data.get("cost"),
            fingerprints=dict(data.get("fingerprints") or {}),
        )


@dataclass(frozen=True, kw_only=True)
class TurnRecord:
    """One conversation turn as stored and served (REST JSON via :meth:`to_json`)."""

    id: str
    chat_id: str
    run_id: str
    user_text: str
    created: str
    llm: TurnLLM
    steering: tuple[Steering, ...] = ()
    replies: tuple[Reply, ...] = ()
    from_agent: str = "agent"
    interrupted: bool = False
    duration_ms: int = 0
    model: str | None = None

    @property
    def trace_ref(self) -> str:
        """The run id whose effect log holds this turn's trace."""
        return self.run_id

    @property
    def final_text(self) -> str:
        """The text of the final reply (``done`` true), or empty."""
        finals = [r.text for r in self.replies if r.done]
        return finals[-1] if finals else ""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "chat_id": self.chat_id,
            "run_id": self.run_id,
            "userText": self.user_text,
            "steering": [s.to_json() for s in self.steering],
            "replies": [r.to_json() for r in self.replies],
            "fromAgent": self.from_agent,
            "traceRef": self.trace_ref,
            "interrupted": self.interrupted,
            "created": self.created,
            "durationMs": self.duration_ms,
            "model": self.model,
            "llm": self.llm.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TurnRecord:
        return cls(
            id=data["id"],
            chat_id=data["chat_id"],
            run_id=data["run_id"],
            user_text=data["userText"],
            created=data["created"],
            llm=TurnLLM.from_json(data["llm"]),
            steering=tuple(Steering(text=s["text"], at=s["at"]) for s in data.get("steering", ())),
            replies=tuple(Reply(text=r["text"], done=r["done"]) for r in data.get("replies", ())),
            from_agent=data.get("fromAgent", "agent"),
            interrupted=bool(data.get("interrupted", False)),
            duration_ms=int(data.get("durationMs", 0)),
            model=data.get("model"),
        )


@dataclass(frozen=True, kw_only=True)
class RunSummary:
    """One ``agent_runs`` row: the lean summary of a run (its trace body stays in the log)."""

    run_id: str
    chat_id: str
    program: str
    status: RunStatus
    started: str
    ended: str | None = None
    model: str | None = None
    model_calls: int = 0
    cells: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    stop_reason: StopReason | None = None
    end_cause: EndCause | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "chat_id": self.chat_id,
            "program": self.program,
            "status": self.status,
            "started": self.started,
            "ended": self.ended,
            "model": self.model,
            "modelCalls": self.model_calls,
            "cells": self.cells,
            "usage": usage_to_json(self.usage),
            "cost": self.cost,
            "stopReason": self.stop_reason,
            "endCause": self.end_cause,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunSummary:
        return cls(
            run_id=data["run_id"],
            chat_id=data["chat_id"],
            program=data["program"],
            status=data["status"],
            started=data["started"],
            ended=data.get("ended"),
            model=data.get("model"),
            model_calls=int(data.get("modelCalls", 0)),
            cells=int(data.get("cells", 0)),
            usage=usage_from_json(data.get("usage") or {}),
            cost=data.get("cost"),
            stop_reason=data.get("stopReason"),
            end_cause=data.get("endCause"),
        )
