"""End-to-end helper: run ``chat`` through ``run_gen`` with a real EffectLog and Transport
against the fake provider over loopback, with a canary key that must never reach the log."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jupyter_agent.llm.chat import ChatResult, chat
from jupyter_agent.llm.transport import Transport
from jupyter_agent.messages import Message
from jupyter_agent.tools import ToolSpec
from jupyter_agent.trace.log import EffectLog
from tests.llm.adapters_support import SYSTEM, TOOLS
from tests.plugins.model_calls import run_gen


def canary() -> str:
    return "sk-canary-" + secrets.token_hex(16)


class Harness:
    """One run's log, config and transport; ``call`` makes one model call by tier name."""

    def __init__(
        self, tmp_path: Path, tier: dict[str, Any], key: str, profile: dict[str, Any] | None = None
    ) -> None:
        self.key = key
        self.path = tmp_path / "runs" / f"run_{secrets.token_hex(4)}.jsonl"
        self.log = EffectLog.create(
            self.path, {"run_id": "run_test", "chat_id": "chat_test", "program": "toolcaller@v1"}
        )
        tier = {"api_key_ref": "env:JA_TEST_KEY", **tier}
        self.config: dict[str, Any] = {"llm.tier.codegen": tier}
        if profile is not None:
            self.config[f"llm.profile.{tier['model']}"] = profile
        self.transport = Transport(env={"JA_TEST_KEY": key}, max_attempts=1)
        self.deltas: list[str] = []

    async def call(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec] = TOOLS,
        stream: bool = True,
        system: str = SYSTEM,
    ) -> ChatResult:
        gen = chat(messages, system=system, tier="codegen", tools=tools, stream=stream)
        return await run_gen(
            gen,
            log=self.log,
            config=self.config,
            transport=self.transport,
            on_delta=self.deltas.append,
        )

    async def close(self) -> str:
        """Close everything; returns the log's text (checked for the canary)."""
        self.log.close()
        await self.transport.aclose()
        text = self.path.read_text()
        assert self.key not in text, "the API key reached the effect log"
        return text
