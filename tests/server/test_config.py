"""Config on the parts: ``c.KernelPool.*``, ``c.Transport.*``, ``c.RunManager.*``,
``c.EventBus.*`` through a real server's config, the old ``c.JupyterAgent.*`` names as
aliases, and the help text."""

from __future__ import annotations

import contextlib
import io
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from traitlets import TraitError
from traitlets.config import Config

from jupyter_agent.core.loop.runstate import Ceilings
from jupyter_agent.llm.transport import Transport
from jupyter_agent.runtime.events import EventBus
from jupyter_agent.runtime.kernels.pool import KernelPool
from jupyter_agent.runtime.kernels.sandbox import SandboxUnavailable, check_sandbox, parse_sandbox
from jupyter_agent.runtime.runs.manager import RunManager
from jupyter_agent.server.app import JupyterAgent
from jupyter_agent.server.config_aliases import MOVED
from tests.server.helpers import call

#: (class, trait, a value that is not its default): every new trait of the parts.
NEW_TRAITS: list[tuple[str, str, Any]] = [
    ("KernelPool", "size", 0),
    ("KernelPool", "pool_max", 6),
    ("KernelPool", "pool_idle_s", 5.0),
    ("KernelPool", "kernel_name", "python3"),
    ("KernelPool", "python", "auto"),
    ("KernelPool", "env_keep", ["KEEP_ME_TOKEN"]),
    ("KernelPool", "liveness_interval_s", 0.25),
    ("KernelPool", "start_delay_s", 0.5),
    ("KernelPool", "kernel_sandbox", "bwrap"),  # checked at start: skipped where unavailable
    ("Transport", "retry_after_cap_s", 7.0),
    ("Transport", "max_attempts", 2),
    ("Transport", "backoff_base_s", 0.1),
    ("Transport", "backoff_max_s", 2.0),
    ("Transport", "connect_timeout_s", 3.0),
    ("RunManager", "max_model_calls", 5),
    ("RunManager", "max_cells", 9),
    ("RunManager", "max_wall_s", 60.0),
    ("RunManager", "max_cost_usd", 0.5),
    ("RunManager", "cell_timeout_s", 30.0),
    ("RunManager", "model_deadline_s", 45.0),
    ("RunManager", "bash_enabled", False),
    ("RunManager", "history_budget_tokens", 1000),
    ("RunManager", "value_budget_tokens", 300),
    ("RunManager", "total_budget_tokens", 1500),
    ("EventBus", "tail_bytes", 4096),
    ("EventBus", "max_bytes", 1 << 20),
    ("RunManager", "log_sync", "effect"),
    ("RunManager", "log_sync_interval_ms", 50),
    ("RunManager", "chunk_turns", 4),
    ("RunManager", "l2_chunks", 3),
    ("RunManager", "recall", False),
    ("RunManager", "recall_k", 3),
    ("RunManager", "recall_budget_tokens", 400),
    ("RunManager", "recall_threshold", 0.5),
    ("RunManager", "recall_timeout_ms", 400),
    ("RunManager", "program_step_timeout_s", 5.0),
]

PARTS = {
    "KernelPool": KernelPool,
    "Transport": Transport,
    "RunManager": RunManager,
    "EventBus": EventBus,
}


@pytest.fixture
def parts_config() -> dict[str, dict[str, Any]]:
    """Config sections beside ``JupyterAgent`` (override with parametrize)."""
    return {}


@pytest.fixture
def jp_server_config(
    agent_config: dict[str, Any], parts_config: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """The extension enabled, no warm kernels (unless a test says so), and the parts' config."""
    config: dict[str, Any] = {
        "ServerApp": {"jpserver_extensions": {"jupyter_agent": True}},
        "JupyterAgent": agent_config,
        "KernelPool": {"size": 0},
    }
    for section, values in parts_config.items():
        config.setdefault(section, {}).update(values)
    return config


def part(service: Any, section: str) -> Any:
    """The service's instance of a part."""
    parts = {"KernelPool": service.pool, "Transport": service.transport, "EventBus": service.events}
    return parts.get(section, service.manager)


def test_every_part_trait_is_listed() -> None:
    for section, cls in PARTS.items():
        listed = {name for s, name, _ in NEW_TRAITS if s == section}
        assert listed == set(cls.class_own_traits(config=True)), section


def _available(section: str, name: str, value: Any) -> list[pytest.MarkDecorator]:
    if (section, name) != ("KernelPool", "kernel_sandbox"):
        return []
    try:
        check_sandbox(parse_sandbox(value))
    except SandboxUnavailable as exc:  # the server would refuse to start
        return [pytest.mark.skip(reason=str(exc))]
    return []


@pytest.mark.parametrize(
    "parts_config",
    [
        pytest.param({section: {name: value}}, marks=_available(section, name, value))
        for section, name, value in NEW_TRAITS
    ],
    ids=[f"{section}.{name}" for section, name, _ in NEW_TRAITS],
)
def test_new_name_through_server_config(
    parts_config: dict[str, dict[str, Any]], agent_service: Any
) -> None:
    [(section, values)] = parts_config.items()
    [(name, value)] = values.items()
    instance = part(agent_service, section)
    assert isinstance(instance, PARTS[section])
    assert getattr(instance, name) == value
    assert instance.trait_defaults(name) != value  # the test sets something new


@pytest.mark.parametrize(
    "parts_config",
    [{"RunManager": {"recall": False, "recall_k": 2, "recall_threshold": 0.6}}],
    ids=["recall"],
)
def test_recall_traits_reach_runs(agent_service: Any) -> None:
    assert agent_service.run_config(owner="").recall == {
        "enabled": False,
        "k": 2,
        "budget_tokens": 800,
        "threshold": 0.6,
    }
    assert "recall_k" not in agent_service.manager.ceilings  # not a ceiling


@pytest.mark.parametrize(
    "parts_config", [{"RunManager": {"max_cells": 9, "bash_enabled": False}}], ids=["run"]
)
def test_run_ceilings_reach_settings_and_runs(fetch: Any, agent_service: Any) -> None:
    _, settings = call(fetch, "agent", "settings")
    assert settings["ceilings"]["max_cells"] == 9
    assert settings["ceilings"]["bash_enabled"] is False
    # The approval policy is the JupyterAgent trait (issue 17), joined by the run config.
    expected = {**agent_service.manager.ceilings, "approval": "writes"}
    assert agent_service.run_config(owner="").ceilings == expected
    assert agent_service.run_config(owner="").ceilings["max_cells"] == 9
    # The log's sync policy is the server's, not a run's: never recorded as a ceiling.
    assert not {"log_sync", "log_sync_interval_ms"} & set(settings["ceilings"])


ALIASES = {
    "pool_size": 0,
    "kernel_env_keep": ["KEEP_ME_TOKEN"],
    "retry_after_cap_s": 5.0,
    "max_model_calls": 4,
    "max_cells": 7,
    "max_wall_s": 30.0,
    "max_cost_usd": 0.25,
    "cell_timeout_s": 20.0,
    "model_deadline_s": 40.0,
    "bash_enabled": False,
}


def test_aliases_cover_every_moved_name() -> None:
    assert set(ALIASES) == set(MOVED)


def _deprecations(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for phase in ("setup", "call")
        for r in caplog.get_records(phase)  # type: ignore[arg-type]
        if "deprecated config names" in r.getMessage()
    ]


@pytest.mark.parametrize("agent_config", [ALIASES], ids=["old"])
def test_old_names_still_work(
    fetch: Any, agent_service: Any, caplog: pytest.LogCaptureFixture
) -> None:
    fetch("agent", "settings")
    for old, value in ALIASES.items():
        section, new = MOVED[old]
        assert getattr(part(agent_service, section), new) == value, old
    _, settings = call(fetch, "agent", "settings")
    assert settings["ceilings"]["max_cells"] == 7
    lines = _deprecations(caplog)
    assert len(lines) == 1, lines  # once, naming each old name and its new one
    assert "JupyterAgent.pool_size -> KernelPool.size" in lines[0]
    assert "JupyterAgent.max_cells -> RunManager.max_cells" in lines[0]


@pytest.mark.parametrize("agent_config", [{}], ids=["none"])
def test_no_deprecation_line_without_old_names(
    fetch: Any, caplog: pytest.LogCaptureFixture
) -> None:
    fetch("agent", "settings")  # the service has started (and logged its warnings)
    assert _deprecations(caplog) == []


@pytest.mark.parametrize(
    ("agent_config", "parts_config"),
    [
        (
            {"pool_size": 3, "max_cells": 7, "retry_after_cap_s": 5.0},
            {"KernelPool": {"size": 0}, "RunManager": {"max_cells": 9}},
        )
    ],
    ids=["both"],
)
def test_new_name_wins_over_old(fetch: Any, agent_service: Any) -> None:
    assert agent_service.pool.size == 0
    assert agent_service.manager.max_cells == 9
    assert agent_service.transport.retry_after_cap_s == 5.0  # only the old name: it applies
    _, settings = call(fetch, "agent", "settings")
    assert settings["ceilings"]["max_cells"] == 9


def test_parts_config_counts_a_value_set_on_the_app(tmp_path: Path) -> None:
    config = Config()
    config.RunManager.max_wall_s = 10.0
    app = JupyterAgent(config=config)
    app.max_cells = 3  # not from a config file: still an old name in use
    app.max_wall_s = 99.0  # the new name is set: it wins
    merged, used = app.parts_config()
    assert sorted(used) == ["max_cells", "max_wall_s"]
    assert merged.RunManager.max_cells == 3
    assert merged.RunManager.max_wall_s == 10.0
    assert "max_cells" not in config.RunManager  # the app's own config is not changed
    manager = RunManager(services=None, run_config=dict, runs_dir=tmp_path, config=merged)
    assert (manager.max_cells, manager.max_wall_s) == (3, 10.0)


def test_parts_config_of_defaults_is_the_app_config() -> None:
    app = JupyterAgent()
    merged, used = app.parts_config()
    assert used == []
    assert merged == app.config


def test_help_all_lists_the_parts() -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        JupyterAgent().print_help(classes=True)
    text = out.getvalue()
    for section, name, _ in NEW_TRAITS:
        assert f"--{section}.{name}=" in text, (section, name)
    assert "Number of warm agent kernels kept ready" in text
    assert "Deprecated: use KernelPool.size" in text
    assert "RunCeilings" not in text


@pytest.mark.parametrize("cls", list(PARTS.values()), ids=list(PARTS))
def test_every_part_trait_has_help(cls: type[Any]) -> None:
    for name, trait in cls.class_own_traits(config=True).items():
        assert trait.help, name
        assert not trait.help.startswith("Deprecated"), name
        assert f"--{cls.__name__}.{name}=" in cls.class_get_help()


def test_old_names_have_deprecated_help() -> None:
    traits = JupyterAgent.class_own_traits(config=True)
    for old, (section, new) in MOVED.items():
        assert traits[old].help.startswith(f"Deprecated: use {section}.{new}"), old


def test_defaults_match_the_old_traits_and_ceilings(tmp_path: Path) -> None:
    app = JupyterAgent()
    traits = JupyterAgent.class_own_traits(config=True)
    for old, (section, new) in MOVED.items():
        assert PARTS[section].class_traits()[new].default() == traits[old].default(), old
    assert app.pool_size == KernelPool.class_traits()["size"].default()
    manager = RunManager(services=None, run_config=dict, runs_dir=tmp_path)
    ceilings = manager.ceilings
    # ``approval`` is JupyterAgent's trait (the run config adds it), not the manager's.
    assert set(ceilings) == {f.name for f in fields(Ceilings)} - {"approval"} | {"model_deadline_s"}
    assert Ceilings.from_json(ceilings) == Ceilings()


@pytest.mark.parametrize(
    ("cls", "kwargs"),
    [
        (RunManager, {"max_wall_s": 0.0}),
        (RunManager, {"max_cells": -1}),
        (RunManager, {"cell_timeout_s": -5.0}),
        (RunManager, {"chunk_turns": 0}),
        (RunManager, {"l2_chunks": 1}),
        (Transport, {"retry_after_cap_s": 0.0}),
        (Transport, {"max_attempts": 0}),
    ],
)
def test_bad_values_are_refused(cls: type[Any], kwargs: dict[str, Any], tmp_path: Path) -> None:
    extra: dict[str, Any] = (
        {"services": None, "run_config": dict, "runs_dir": "/nonexistent"}
        if cls is RunManager
        else {}
    )
    with pytest.raises(TraitError):
        cls(**extra, **kwargs)


def test_a_negative_pool_size_is_refused() -> None:
    with pytest.raises(TraitError):
        KernelPool(None, size=-1)
