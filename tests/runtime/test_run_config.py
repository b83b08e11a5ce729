"""What a run reads of its config snapshot: ``RunConfig.get`` and the driver's digest options."""

from __future__ import annotations

from typing import Any

from jupyter_agent.core.digest.render import DigestOptions
from jupyter_agent.runtime.events import EventBus
from jupyter_agent.runtime.loop.driver import RunConfig, RunDriver
from jupyter_agent.runtime.runs.mailbox import Mailbox
from jupyter_agent.runtime.runs.parts import RunServices

TIER = {"provider": "fake", "model": "m", "base_url": "http://127.0.0.1:9"}


def config(**kw: Any) -> RunConfig:
    values: dict[str, Any] = {"tiers": {"codegen": TIER}, "ceilings": {}, "spaces": {}}
    values.update(kw)
    return RunConfig(**values)


def test_get_answers_each_key() -> None:
    cfg = config(ceilings={"max_cells": 3}, spaces={"home": "/h"}, profiles={"m": {"vision": 1}})
    assert cfg.get("ceilings") == {"max_cells": 3}
    assert cfg.get("spaces") == {"home": "/h"}
    assert cfg.get("history") is None  # not config: the driver reads it from the store
    assert cfg.get("llm.tier.codegen") == TIER
    assert cfg.get("llm.tier.vision") == TIER  # falls back to codegen
    assert cfg.get("llm.tier.other") is None
    assert cfg.get("llm.profile.m") == {"vision": 1}
    assert cfg.get("unknown") is None


def test_driver_digest_options_are_what_it_built_by_hand() -> None:
    cfg = config(
        ceilings={"value_budget_tokens": 450, "total_budget_tokens": 1800},
        spaces={"env_prefix": "/opt/env", "home": "/home/me"},
    )
    driver = RunDriver(
        run_id="run_1",
        chat_id="chat_1",
        log_=None,  # type: ignore[arg-type]
        config=cfg,
        # Services nothing uses here: the driver is built, never run.
        services=RunServices(
            transport=None, pool=None, store=None, mailbox=Mailbox(), events=EventBus(), root_dir=""
        ),
        gen=iter(()),  # type: ignore[arg-type]
    )
    # Budgets from the ceilings, <env> and ~ from the spaces; the driver has no profile.
    assert driver.cells.digest_options == DigestOptions(
        value_budget_tokens=450, total_budget_tokens=1800, env_prefix="/opt/env", home="/home/me"
    )
