"""Rollback walks back through a layer's versions (a second rollback in a row goes further
back, never toggles to the version just left), through the real service and store."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from jupyter_agent.exceptions import BadRequest, NotFound
from jupyter_agent.programs.builtin import builtin_ref
from jupyter_agent.programs.registry import ProgramRegistry
from jupyter_agent.programs.service import ProgramService
from jupyter_agent.store import Store

SOURCE = """from jupyter_agent.core.loop.machine import toolcaller


def program(run_id, chat_id):
    # {mark}
    return (yield from toolcaller(run_id, chat_id))
"""


def service(store: Store, tmp_path: Path) -> tuple[ProgramService, ProgramRegistry]:
    registry = ProgramRegistry(store, cache_dir=tmp_path / "programs")
    return ProgramService(store, registry), registry


def deploy(svc: ProgramService, mark: str, agent: str = "") -> str:
    answer = asyncio.run(
        svc.deploy("toolcaller", {"program.py": SOURCE.format(mark=mark)}, agent=agent)
    )
    return str(answer["active"])


def rollback(svc: ProgramService, agent: str = "", to: int | None = None) -> str:
    return str(asyncio.run(svc.rollback("toolcaller", agent=agent, to=to))["active"])


def test_rollbacks_walk_back_then_refuse(store: Store, tmp_path: Path) -> None:
    svc, registry = service(store, tmp_path)
    v6 = builtin_ref("toolcaller@v8").text  # the default (v8); deploys are v9 on
    v7 = deploy(svc, "seven")
    v8 = deploy(svc, "eight")
    v9 = deploy(svc, "nine")
    assert registry.resolve("agent", "toolcaller").ref.text == v9
    assert rollback(svc) == v8
    assert rollback(svc) == v7  # not back to v9
    assert rollback(svc) == v6
    assert registry.resolve("agent", "toolcaller").ref.text == v6
    with pytest.raises(BadRequest) as refused:
        rollback(svc)
    assert refused.value.reason == "no_rollback"
    # `to` pushes: a rollback after it returns to where it was.
    assert rollback(svc, to=10) == v8  # "eight" is deployed as v10
    assert rollback(svc) == v6
    with pytest.raises(NotFound):
        rollback(svc, to=99)


def test_an_agent_layer_rolls_back_to_the_server_wide_one(store: Store, tmp_path: Path) -> None:
    svc, registry = service(store, tmp_path)
    server = deploy(svc, "server")
    first = deploy(svc, "planner one", agent="planner")
    second = deploy(svc, "planner two", agent="planner")
    assert registry.resolve("planner", "toolcaller").ref.text == second
    assert rollback(svc, agent="planner") == first
    assert rollback(svc, agent="planner") == server  # the override cleared
    assert registry.resolve("planner", "toolcaller").ref.text == server
    assert registry.resolve("agent", "toolcaller").ref.text == server
