"""Realistic effect logs for the stats / show / CLI tests, written in the loop's order.

Model replies are the real-format payloads of ``tests/llm/fixtures`` (Anthropic and OpenAI).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jupyter_agent.core.digest.cells import CellResult, LastValue, Value
from jupyter_agent.effects import Effect
from jupyter_agent.trace.log import PROGRAM, EffectLog

FIXTURES = Path(__file__).parent.parent / "llm" / "fixtures"
CODEGEN_MODEL = "claude-sonnet-4-5"
CLASSIFY_MODEL = "o3"


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return data


def anthropic_request(model: str = CODEGEN_MODEL) -> dict[str, Any]:
    return {
        "url": "https://api.anthropic.com/v1/messages",
        "headers": {"anthropic-version": "2023-06-01"},
        "json": {"model": model, "messages": [{"role": "user", "content": "hi"}]},
        "wire": "anthropic",
        "credential_ref": "env:ANTHROPIC_API_KEY",
        "stream": True,
        "deadline_s": 300,
    }


def openai_request(model: str = CLASSIFY_MODEL) -> dict[str, Any]:
    return {
        "url": "https://api.openai.com/v1/chat/completions",
        "headers": {},
        "json": {"model": model, "messages": [{"role": "user", "content": "sum"}]},
        "wire": "openai-chat",
        "credential_ref": "env:OPENAI_API_KEY",
        "stream": False,
        "deadline_s": 300,
    }


def reply(body: dict[str, Any], tries: int = 1) -> dict[str, Any]:
    attempts = [{"status": 200, "error": None, "wait_s": 0.0}] * tries
    return {"status": 200, "json": body, "attempts": attempts}


class LogWriter:
    """Writes one run's log effect by effect (intent, then result)."""

    def __init__(self, path: Path, run_id: str = "run_01ST", chat_id: str = "chat_01ST") -> None:
        self.path = path
        self.run_id, self.chat_id = run_id, chat_id
        header = {
            "run_id": run_id,
            "chat_id": chat_id,
            "program": PROGRAM,
            "profile": {"context_window": 200000},
            "tiers": {"codegen": {"provider": "anthropic", "model": CODEGEN_MODEL}},
            "created": "2025-03-01T10:00:00.000Z",
        }
        self.log = EffectLog.create(path, header)

    def effect(
        self,
        name: str,
        data: dict[str, Any],
        result: Any,
        *,
        parent: int | None = None,
        error: dict[str, Any] | None = None,
    ) -> int:
        seq = self.log.intent(Effect(name=name, data=data, parent=parent))
        self.log.result(seq, name, result, error=error)
        return seq

    def opening(self, text: str = "Summarise the data", codegen: dict[str, Any] | None = None):
        tier = codegen or {"provider": "anthropic", "model": CODEGEN_MODEL}
        self.effect("clock.now", {}, "2025-03-01T10:00:01.000Z")
        self.effect("config.get", {"key": "ceilings"}, {"value_budget_tokens": 500})
        self.effect("config.get", {"key": "spaces"}, {"agent_name": "ada"})
        self.effect("config.get", {"key": "llm.tier.codegen"}, tier)
        self.effect("config.get", {"key": f"llm.profile.{tier['model']}"}, None)
        self.effect("config.get", {"key": "history"}, [])
        msg = {"kind": "message", "text": text, "at": "2025-03-01T10:00:00.500Z"}
        self.effect("mailbox.drain", {}, [msg])

    def cell(self, cell_id: str, code: str, result: CellResult) -> int:
        data = {"cell_id": cell_id, "code": code, "timeout_s": 120}
        return self.effect("cell.run", data, result.to_json())

    def close(self) -> None:
        self.log.close()


def simple_cell(cell_id: str = "c1", text: str = "42\n") -> CellResult:
    return CellResult(
        cell_id=cell_id,
        prints=(Value(text=text),),
        last=LastValue(repr=Value(text="6"), type_name="int"),
        outputs=(
            {"output_type": "stream", "name": "stdout", "text": text},
            {
                "output_type": "execute_result",
                "execution_count": 1,
                "data": {"text/plain": "6"},
                "metadata": {},
            },
        ),
        execution_count=1,
        duration_s=0.01,
    )


def write_stats_run(path: Path) -> dict[str, int]:
    """A run with: an Anthropic call (cache read/write), a cell whose ``llm.chat`` makes a
    nested OpenAI call (cached + reasoning tokens, a profile override), a failed call after
    3 tries, a top-level call after the nested one, and a cancelled call."""
    w = LogWriter(path)
    w.opening()
    seqs: dict[str, int] = {}
    seqs["first"] = w.effect(
        "http.post", anthropic_request(), reply(fixture("anthropic_thinking.json"))
    )
    cell = w.log.intent(
        Effect(name="cell.run", data={"cell_id": "c1", "code": 'llm.chat("sum")', "timeout_s": 120})
    )
    app = w.log.intent(
        Effect(name="app.call", data={"app": "llm", "method": "chat", "args": {}}, parent=cell)
    )
    w.effect(
        "config.get",
        {"key": "llm.tier.classify"},
        {"provider": "openai", "model": "o3"},
        parent=app,
    )
    w.effect("config.get", {"key": "llm.profile.o3"}, {"price_in": 4.0}, parent=app)
    seqs["nested"] = w.effect(
        "http.post",
        openai_request(),
        reply(fixture("openai_chat_cached_reasoning.json")),
        parent=app,
    )
    w.log.result(app, "app.call", {"value": "a summary"})
    w.log.result(cell, "cell.run", simple_cell("c1", "a summary\n").to_json())
    seqs["cell"] = cell
    failed = {
        "type": "ProviderStatusError",
        "error": "ProviderStatusError",
        "message": "provider answered 529",
        "status": 529,
        "body": {"error": {"type": "overloaded_error"}},
        "attempts": [{"status": 529, "error": None, "wait_s": 1.0}] * 3,
    }
    seqs["failed"] = w.effect("http.post", anthropic_request(), None, error=failed)
    seqs["after"] = w.effect(
        "http.post", anthropic_request(), reply(fixture("anthropic_tool_use.json"), tries=2)
    )
    seqs["cancelled"] = w.effect("http.post", anthropic_request(), {"cancelled": "break_hard"})
    w.close()
    return seqs


def without_setup(nb: Any, at: int = 0) -> Any:
    """``nb`` with the export's hidden setup cell (checked at index ``at``) dropped: the
    cells after it are the run's, as the tests of the cells compare them."""
    cell = nb.cells[at]
    assert cell.id == "replay-setup", cell.id
    assert cell.cell_type == "code"
    assert cell.metadata["jupyter_agent"] == {"kind": "setup"}
    assert cell.metadata["jupyter"] == {"source_hidden": True}
    assert "from jupyter_agent.kernel.recorded import play_recorded\n" in cell.source
    assert cell.source.count("play_recorded(") == 1
    assert not [c for c in nb.cells if c is not cell and c.id == "replay-setup"]
    del nb.cells[at]
    return nb
