"""The agent's data folder follows Jupyter's data dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from jupyter_agent.runtime.paths import agent_data_dir, default_db_url, runs_dir, spaces_dir


def test_paths_follow_jupyter_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    assert agent_data_dir() == tmp_path / "data" / "jupyter_agent"
    assert runs_dir() == tmp_path / "data" / "jupyter_agent" / "runs"
    assert spaces_dir() == tmp_path / "data" / "jupyter_agent" / "spaces"
    url = default_db_url()
    assert url == "sqlite:///" + (tmp_path / "data" / "jupyter_agent" / "agent.sqlite").as_posix()
    assert url.startswith("sqlite:////")  # an absolute path: four slashes
    assert not (tmp_path / "data").exists()  # computing a path creates nothing
