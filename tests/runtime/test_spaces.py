"""Loading the spaces from real folders: package < user < project."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

from jupyter_agent.runtime.settings.spaces import MAX_FILE_BYTES, load_spaces


def write(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")


def test_package_defaults_only(tmp_path):
    snap = load_spaces(data_dir=tmp_path / "data", root_dir=None)
    files = snap["files"]
    assert {"_soul", "_core", "_any"} <= set(files)
    assert "JupyterLab" in files["_soul"]
    assert 'values.get("c3", 2)' in files["_core"]
    assert snap["agent_name"] == "agent"
    assert snap["agent_space"] == str(tmp_path / "data" / "spaces")
    assert snap["repos"] == []
    assert snap["memory_categories"] == []
    assert snap["env_prefix"] == sys.prefix
    assert snap["home"] == str(Path.home())
    json.dumps(snap)  # a JSON snapshot, as config.get returns it


def test_override_order(tmp_path):
    data, root = tmp_path / "data", tmp_path / "root"
    write(data / "spaces" / "_soul.md", "USER SOUL")
    write(data / "spaces" / "_core.md", "USER CORE")
    write(data / "spaces" / "skills" / "etl.md", "# USER ETL")
    write(data / "spaces" / "skills" / "plots.md", "# USER PLOTS")
    write(root / ".jupyter-agent" / "_core.md", "PROJECT CORE")
    write(root / ".jupyter-agent" / "skills" / "etl.md", "# PROJECT ETL")
    write(root / ".jupyter-agent" / "notes.txt", "not markdown")
    write(root / ".jupyter-agent" / ".hidden.md", "hidden")
    snap = load_spaces(data_dir=data, root_dir=root, agent_name="analyst")
    files = snap["files"]
    assert files["_soul"] == "USER SOUL"  # user over package
    assert files["_core"] == "PROJECT CORE"  # project over user
    assert "Any task" in files["_any"]  # package default kept
    assert files["skills/etl"] == "# PROJECT ETL"
    assert files["skills/plots"] == "# USER PLOTS"
    assert "notes" not in files
    assert ".hidden" not in files
    assert snap["paths"]["skills/etl"] == str(root / ".jupyter-agent" / "skills" / "etl.md")
    assert snap["paths"]["skills/plots"] == str(data / "spaces" / "skills" / "plots.md")
    assert snap["agent_name"] == "analyst"
    assert snap["agent_space"] == str(root / ".jupyter-agent")
    assert list(files) == sorted(files)


def test_repos_and_memory(tmp_path):
    data, root = tmp_path / "data", tmp_path / "root"
    write(
        data / "spaces" / "repos.json",
        json.dumps([{"name": "lib", "url": "https://example.org/lib.git"}, {"nope": 1}]),
    )
    write(
        root / ".jupyter-agent" / "repos.json",
        json.dumps([{"name": "lib", "path": "/src/lib", "description": "local"}]),
    )
    snap = load_spaces(
        data_dir=data, root_dir=root, memory_categories=["people", "datasets", "people"]
    )
    assert snap["repos"] == [{"name": "lib", "path": "/src/lib", "description": "local"}]
    assert snap["memory_categories"] == ["datasets", "people"]


def test_bad_files_are_skipped_with_a_warning(tmp_path, caplog):
    data = tmp_path / "data"
    write(data / "spaces" / "_soul.md", b"\xff\xfe not utf-8 \x80")
    write(data / "spaces" / "skills" / "good.md", "# Good")
    write(data / "spaces" / "skills" / "huge.md", "x" * (MAX_FILE_BYTES + 1))
    write(data / "spaces" / "repos.json", "{not json")
    with caplog.at_level(logging.WARNING, logger="jupyter_agent.runtime.settings.spaces"):
        snap = load_spaces(data_dir=data, root_dir=tmp_path / "no-such-root")
    assert "JupyterLab" in snap["files"]["_soul"]  # the package default stays
    assert snap["files"]["skills/good"] == "# Good"
    assert "skills/huge" not in snap["files"]
    assert snap["repos"] == []
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "not UTF-8" in messages
    assert "huge.md" in messages
    assert "repos.json" in messages


def test_symlinked_folder_not_followed(tmp_path):
    data = tmp_path / "data"
    outside = tmp_path / "outside"
    write(outside / "secret.md", "outside the space")
    (data / "spaces").mkdir(parents=True)
    (data / "spaces" / "skills").symlink_to(outside, target_is_directory=True)
    snap = load_spaces(data_dir=data, root_dir=None)
    assert not any(k.startswith("skills/") for k in snap["files"])


def test_default_space_builds_a_prompt(tmp_path):
    from importlib import resources

    from jupyter_agent.core.loop.apps import APPS
    from jupyter_agent.core.loop.prompt import RuntimeContext, build_system
    from jupyter_agent.tools import tools_for

    snap = load_spaces(data_dir=tmp_path / "data", root_dir=tmp_path)
    soul = (resources.files("jupyter_agent") / "spaces" / "_soul.md").read_text("utf-8")
    ctx = RuntimeContext(
        agent_space=snap["agent_space"], chat_id="chat_1", agent_name="agent", installed_apps=()
    )
    prompt = build_system(
        json.loads(json.dumps(snap)), tools=tools_for(bash_enabled=False), apps=APPS, context=ctx
    )
    assert prompt.text.startswith(soul)
    again = load_spaces(data_dir=tmp_path / "data", root_dir=tmp_path)
    assert (
        build_system(again, tools=tools_for(bash_enabled=False), apps=APPS, context=ctx) == prompt
    )
