"""Record a real ``toolcaller`` run into an effect log with a scripted world (no kernel).

The loop is the real one; the world answers its effects the way the driver would: the
config, a clock, one opening message, two Anthropic-format model replies (a ``run_cell``
tool call, then the answer), a structured cell result, the reply and the turn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jupyter_agent.core.digest.cells import CellResult, LastValue, Value
from jupyter_agent.core.loop.drive import drive
from jupyter_agent.core.loop.machine import toolcaller
from jupyter_agent.core.turns import TurnRecord
from jupyter_agent.effects import Effect
from jupyter_agent.trace.log import EffectLog

MODEL = "claude-sonnet-4-5"


def _anthropic(content: list[dict[str, Any]], stop: str, out: int) -> dict[str, Any]:
    return {
        "id": "msg_01canary",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 1200,
            "cache_creation_input_tokens": 300,
            "cache_read_input_tokens": 4000,
            "output_tokens": out,
        },
    }


REPLIES = [
    _anthropic(
        [
            {"type": "text", "text": "Computing."},
            {"type": "tool_use", "id": "toolu_01", "name": "run_cell", "input": {"code": "6 * 7"}},
        ],
        "tool_use",
        40,
    ),
    _anthropic([{"type": "text", "text": "The answer is **42**."}], "end_turn", 12),
]


class World:
    """Answers the loop's effects (what the driver, the model and the kernel would do)."""

    def __init__(self, question: str, retries: int = 0) -> None:
        self.question = question
        self.retries = retries  # 529s before the first model call's 200
        self.drains = 0
        self.calls = 0
        self.ticks = 0

    def answer(self, effect: Effect) -> Any:
        name, data = effect.name, effect.data
        if name == "clock.now":
            self.ticks += 1
            return f"2025-03-01T10:00:{self.ticks:02d}.000Z"
        if name == "config.get":
            return {
                "ceilings": {},
                "spaces": {"agent_name": "ada"},
                "llm.tier.codegen": {"provider": "anthropic", "model": MODEL},
                "history": [],
            }.get(data["key"])
        if name == "mailbox.drain":
            self.drains += 1
            if self.drains > 1:
                return []
            return [{"kind": "message", "text": self.question, "at": "2025-03-01T10:00:00.000Z"}]
        if name == "http.post":
            body = REPLIES[min(self.calls, len(REPLIES) - 1)]
            busy = [{"status": 529, "wait_s": 1.0}] * (self.retries if self.calls == 0 else 0)
            self.calls += 1
            attempts = [*busy, {"status": 200, "wait_s": 0.0}]
            return {"status": 200, "json": body, "attempts": attempts}
        if name == "cell.run":
            return CellResult(
                cell_id=data["cell_id"],
                last=LastValue(repr=Value(text="42"), type_name="int"),
                outputs=(
                    {
                        "output_type": "execute_result",
                        "execution_count": 1,
                        "data": {"text/plain": "42"},
                        "metadata": {},
                    },
                ),
                execution_count=1,
                duration_s=0.002,
            ).to_json()
        if name == "chat.post":
            return "msg_1"
        if name == "id.new":
            return f"{data.get('kind', 'x')}_01canary"
        return {"ok": True}


#: The version the recorded runs are of: a v6 log (its world answers v6's config keys), as
#: runs recorded before v7 are; the CLI reads, shows, replays and exports it as such.
RECORDED = "toolcaller@v6"


def record_run(
    path: Path,
    run_id: str = "run_01CLI",
    chat_id: str = "chat_01CLI",
    question: str = "6*7?",
    retries: int = 0,
) -> TurnRecord:
    """Run the real loop against :class:`World`, logging every effect; returns the turn.

    ``retries``: the first model call took that many 529 answers before its 200."""
    header = {
        "run_id": run_id,
        "chat_id": chat_id,
        "program": RECORDED,
        "profile": {},
        "tiers": {"codegen": {"provider": "anthropic", "model": MODEL}},
        "created": "2025-03-01T10:00:00.000Z",
    }
    world = World(question, retries)
    gen = toolcaller(run_id, chat_id, version=6)
    with EffectLog.create(path, header) as log:
        return drive(
            gen, lambda effect: log.result(log.intent(effect), effect.name, world.answer(effect))
        )
