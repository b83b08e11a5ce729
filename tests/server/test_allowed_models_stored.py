"""``JupyterAgent.allowed_models`` and an override stored before the admin narrowed the list:
reported not ready (naming the model) and left out of runs: the refused tier never runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.server.helpers import call
from tests.server.test_allowed_models import ADMIN, LOCAL

STORED = {"codegen": {**LOCAL, "model": "llama-3"}}


@pytest.fixture
def stored_override(jp_data_dir: Path) -> None:
    """A user override saved while the admin allowed every model (before the server starts)."""
    folder = jp_data_dir / "jupyter_agent"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "settings.json").write_text(json.dumps({"tiers": STORED}), encoding="utf-8")


@pytest.fixture
def jp_server_config(agent_config: dict[str, Any], stored_override: None) -> dict[str, Any]:
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_agent": True}},
        "JupyterAgent": agent_config,
    }


@pytest.mark.parametrize("agent_config", [ADMIN])
def test_an_override_stored_before_the_list_narrowed_is_left_out(fetch: Any) -> None:
    _, status = call(fetch, "agent", "status")
    codegen = status["tiers"]["codegen"]
    assert codegen["model"] == "llama-3"
    assert codegen["ready"] is False
    assert codegen["reason"].startswith("model not allowed")
    assert status["demo"] is True  # the refused tier never runs
