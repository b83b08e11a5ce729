"""The agents of one server: the registry (trait and folders), the overlay of an agent's
space (package < agent < user < project), its tiers over the user's, the cached snapshot,
and the services' agent calls; over real folders and a real SQLite store."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.core.loop.prompt import RuntimeContext, build_system
from jupyter_agent.exceptions import BadRequest
from jupyter_agent.runtime.assembly import AdminConfig, Parts, assemble
from jupyter_agent.runtime.kernels.pool import KernelPool
from jupyter_agent.runtime.settings.agents import (
    DEFAULT_AGENT,
    AgentRegistry,
    check_agent_name,
    soul_fingerprint,
)
from jupyter_agent.runtime.settings.keypolicy import KeyPolicy
from jupyter_agent.runtime.settings.spaces import SpacesCache, load_spaces

FAKE = {"provider": "fake", "model": "m", "base_url": "http://127.0.0.1:9"}
REVIEWER_TIER = {"provider": "fake", "model": "reviewer-model", "base_url": "http://127.0.0.1:8"}


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# --- the registry -------------------------------------------------------------------------


def test_the_default_agent_always_exists(tmp_path: Path) -> None:
    registry = AgentRegistry.build({}, data_dir=tmp_path)
    assert registry.names() == [DEFAULT_AGENT]
    agent = registry.get("agent")
    assert (agent.space, dict(agent.tiers), agent.is_default) == (None, {}, True)
    assert registry.warnings == ()


def test_trait_and_folder_agents(tmp_path: Path) -> None:
    write(tmp_path / "agents" / "reviewer" / "_soul.md", "REVIEWER")
    write(
        tmp_path / "agents" / "reviewer" / "agent.json",
        json.dumps({"description": "Reviews code", "tiers": {"codegen": REVIEWER_TIER}}),
    )
    (tmp_path / "admin-space").mkdir()
    registry = AgentRegistry.build(
        {"analyst": {"space": str(tmp_path / "admin-space"), "description": " Analyses "}},
        data_dir=tmp_path,
    )
    assert registry.names() == ["agent", "analyst", "reviewer"]
    reviewer = registry.get("reviewer")
    assert reviewer.space == tmp_path / "agents" / "reviewer"
    assert dict(reviewer.tiers) == {"codegen": REVIEWER_TIER}
    assert (reviewer.description, reviewer.source) == ("Reviews code", "folder")
    analyst = registry.get("analyst")
    assert (analyst.space, analyst.description, analyst.source) == (
        tmp_path / "admin-space",
        "Analyses",
        "trait",
    )
    assert registry.warnings == ()


def test_the_trait_wins_on_a_clash_field_by_field(tmp_path: Path) -> None:
    folder = tmp_path / "agents" / "reviewer"
    write(folder / "agent.json", json.dumps({"description": "folder's", "tiers": {}}))
    registry = AgentRegistry.build(
        {"reviewer": {"tiers": {"codegen": REVIEWER_TIER}}, "agent": {"space": "mine"}},
        data_dir=tmp_path,
    )
    reviewer = registry.get("reviewer")
    assert reviewer.space == folder  # no space in the trait: the folder's
    assert reviewer.description == "folder's"
    assert dict(reviewer.tiers) == {"codegen": REVIEWER_TIER}
    assert reviewer.source == "trait+folder"
    # A relative space is under the data dir; a missing one is warned about, kept.
    assert registry.get("agent").space == tmp_path / "mine"
    assert any("mine is not a folder" in w for w in registry.warnings)


def test_bad_names_and_folders_warn_and_are_skipped(tmp_path: Path) -> None:
    agents = tmp_path / "agents"
    (agents / "Bad Name").mkdir(parents=True)
    write(agents / "broken" / "agent.json", "{not json")
    write(agents / "stray" / "agent.json", json.dumps({"soul": "x"}))
    stray_key = {"tiers": {"codegen": {"api_key": "sk-stray-1"}}}
    write(agents / "keyed" / "agent.json", json.dumps(stray_key))
    write(agents / "ok" / "_soul.md", "OK")
    write(agents / "file.md", "not a folder")
    (agents / ".hidden").mkdir()
    registry = AgentRegistry.build(
        {
            "Upper": {},
            "x" * 41: {},
            "typo": {"spaec": "x"},
            "tiered": {"tiers": {"codegen": {"provider": "nope", "model": "m"}}},
            "good": {"description": "fine"},
        },
        data_dir=tmp_path,
    )
    assert registry.names() == ["agent", "good", "ok"]
    text = "\n".join(registry.warnings)
    for word in ("'Upper'", "x" * 41, "spaec", "provider", "Bad Name", "broken", "stray", "keyed"):
        assert word in text, word
    assert "api_key" in text
    assert "sk-stray-1" not in text  # a stray key is named, never echoed


def test_a_folder_tier_goes_through_the_key_policy(tmp_path: Path) -> None:
    tier = {"provider": "anthropic", "model": "m", "api_key_ref": "env:ANTHROPIC_API_KEY"}
    write(tmp_path / "agents" / "sneaky" / "agent.json", json.dumps({"tiers": {"codegen": tier}}))
    registry = AgentRegistry.build({"trusted": {"tiers": {"codegen": tier}}}, data_dir=tmp_path)
    assert dict(registry.get("sneaky").tiers) == {}  # no binding for that reference: dropped
    assert dict(registry.get("trusted").tiers) == {"codegen": tier}  # the admin's: trusted
    bound = KeyPolicy(bindings={"env:ANTHROPIC_API_KEY": ("https://api.anthropic.com",)})
    again = AgentRegistry.build({}, data_dir=tmp_path, policy=bound)
    assert dict(again.get("sneaky").tiers) == {"codegen": tier}
    assert again.tier_refs() == ["env:ANTHROPIC_API_KEY"]


def test_unknown_agents_are_refused_or_fall_back(tmp_path: Path) -> None:
    registry = AgentRegistry.build({"reviewer": {}}, data_dir=tmp_path)
    for name in ("nobody", "Bad", ""):
        with pytest.raises(BadRequest) as info:
            registry.get(name)
        assert info.value.reason == "unknown_agent"
    with pytest.raises(BadRequest):
        check_agent_name(3)
    assert registry.for_run("removed").name == DEFAULT_AGENT
    assert registry.for_run("reviewer").name == "reviewer"


# --- the spaces overlay -------------------------------------------------------------------


def test_overlay_order_package_agent_user_project(tmp_path: Path) -> None:
    data, root, space = tmp_path / "data", tmp_path / "root", tmp_path / "space"
    write(space / "_soul.md", "AGENT SOUL")
    write(space / "_core.md", "AGENT CORE")
    write(space / "skills" / "review.md", "# AGENT REVIEW")
    write(space / "skills" / "etl.md", "# AGENT ETL")
    write(data / "spaces" / "_core.md", "USER CORE")
    write(data / "spaces" / "skills" / "etl.md", "# USER ETL")
    write(root / ".jupyter-agent" / "skills" / "etl.md", "# PROJECT ETL")
    snap = load_spaces(data_dir=data, root_dir=root, agent_name="reviewer", agent_space=space)
    files = snap["files"]
    assert files["_soul"] == "AGENT SOUL"  # agent over package
    assert files["_core"] == "USER CORE"  # user over agent
    assert files["skills/etl"] == "# PROJECT ETL"  # project over user
    assert files["skills/review"] == "# AGENT REVIEW"
    assert "Any task" in files["_any"]  # package default kept
    assert snap["paths"]["skills/review"] == str(space / "skills" / "review.md")
    assert snap["agent_name"] == "reviewer"
    assert snap["agent_space"] == str(root / ".jupyter-agent")  # notes: not the admin's space
    # No agent space, or a missing one: the three layers as before.
    plain = load_spaces(data_dir=data, root_dir=root)
    assert load_spaces(data_dir=data, root_dir=root, agent_space=tmp_path / "none") == plain


def test_the_soul_fingerprint_is_the_prompts_identity_fingerprint(tmp_path: Path) -> None:
    space = tmp_path / "space"
    write(space / "_soul.md", "AGENT SOUL\n")
    snap = load_spaces(data_dir=tmp_path / "data", root_dir=None, agent_space=space)
    context = RuntimeContext(agent_space="x", chat_id="c", agent_name="a", installed_apps=("v",))
    prompt = build_system(snap, tools=(), apps=(), context=context)
    assert soul_fingerprint(snap) == prompt.fingerprint_identity == sha("AGENT SOUL\n")
    default = load_spaces(data_dir=tmp_path / "data", root_dir=None)
    assert soul_fingerprint(default) != soul_fingerprint(snap)


def test_the_cache_answers_the_same_until_a_layer_changes(tmp_path: Path) -> None:
    data, space = tmp_path / "data", tmp_path / "space"
    write(space / "_soul.md", "ONE")
    old = time.time_ns() - 10 * SpacesCache.RACY_NS
    for path in (space, space / "_soul.md"):
        os.utime(path, ns=(old, old))
    cache = SpacesCache()
    first = cache.snapshot(data_dir=data, root_dir=None, agent_name="r", agent_space=space)
    assert first == load_spaces(data_dir=data, root_dir=None, agent_name="r", agent_space=space)
    first["files"]["_soul"] = "mutated"  # a caller's copy: the cache is not touched
    assert cache.snapshot(data_dir=data, root_dir=None, agent_space=space)["files"]["_soul"] == (
        "ONE"
    )
    # Same size, in place: the mtime tells.
    write(space / "_soul.md", "TWO")
    assert cache.snapshot(data_dir=data, root_dir=None, agent_space=space)["files"]["_soul"] == (
        "TWO"
    )
    # A new user layer file (a folder that did not exist) shows at once.
    write(data / "spaces" / "skills" / "x.md", "# X")
    snap = cache.snapshot(data_dir=data, root_dir=None, agent_space=space)
    assert snap["files"]["skills/x"] == "# X"


def test_the_cache_reuses_a_snapshot_without_reading(tmp_path: Path, monkeypatch: Any) -> None:
    data, space = tmp_path / "data", tmp_path / "space"
    write(space / "_soul.md", "ONE")
    old = time.time_ns() - 10 * SpacesCache.RACY_NS
    for path in (space, space / "_soul.md"):
        os.utime(path, ns=(old, old))
    cache = SpacesCache()
    cache.snapshot(data_dir=data, root_dir=None, agent_space=space)
    loads: list[int] = []
    import jupyter_agent.runtime.settings.spaces as spaces

    real = spaces.load_spaces

    def counting(**kw: Any) -> dict[str, Any]:
        loads.append(1)
        return real(**kw)

    monkeypatch.setattr(spaces, "load_spaces", counting)
    for _ in range(3):
        cache.snapshot(data_dir=data, root_dir=None, agent_space=space)
    assert loads == []
    # A file written just now is "racy": its snapshot is loaded again next time.
    write(space / "skills" / "new.md", "# NEW")
    cache.snapshot(data_dir=data, root_dir=None, agent_space=space)
    cache.snapshot(data_dir=data, root_dir=None, agent_space=space)
    assert loads == [1, 1]


# --- the assembly: run_config(agent), tiers, the services --------------------------------


def _parts(tmp_path: Path, agents: dict[str, Any], **user_tiers: Any) -> Parts:
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    admin = AdminConfig(
        tiers={"codegen": FAKE, "classify": FAKE},
        db_url=f"sqlite:///{tmp_path / 'agent.sqlite'}",
        pool_size=0,
        agents=agents,
    )
    if user_tiers:
        write(tmp_path / "data" / "settings.json", json.dumps({"tiers": user_tiers}))
    parts = assemble(
        admin=admin,
        data_dir=tmp_path / "data",
        root_dir=str(root),
        pool=KernelPool(None, size=0),
        environ={},
    )
    return parts


@pytest.fixture
async def parts(tmp_path: Path) -> AsyncIterator[Parts]:
    write(tmp_path / "data" / "agents" / "reviewer" / "_soul.md", "REVIEWER SOUL")
    user_vision = {"provider": "fake", "model": "user-vision", "base_url": "http://127.0.0.1:7"}
    built = _parts(
        tmp_path,
        {"reviewer": {"tiers": {"codegen": REVIEWER_TIER}, "description": "Reviews"}},
        vision=user_vision,
        codegen={"provider": "fake", "model": "user-codegen", "base_url": "http://127.0.0.1:6"},
    )
    yield built
    await built.stop()


async def test_run_config_of_an_agent(parts: Parts) -> None:
    default = parts.run_config(owner="")
    reviewer = parts.run_config("reviewer", owner="")
    assert (default.agent, reviewer.agent) == ("agent", "reviewer")
    assert default.spaces["agent_name"] == "agent"
    assert reviewer.spaces["agent_name"] == "reviewer"
    assert reviewer.spaces["files"]["_soul"] == "REVIEWER SOUL"
    assert default.spaces["files"]["_soul"] != "REVIEWER SOUL"
    # The agent's codegen over the user's; the user's vision stays; the admin's classify.
    assert reviewer.tiers["codegen"]["model"] == "reviewer-model"
    assert default.tiers["codegen"]["model"] == "user-codegen"
    assert reviewer.tiers["vision"]["model"] == default.tiers["vision"]["model"] == "user-vision"
    assert reviewer.tiers["classify"] == FAKE
    # An agent removed from the config since: the default agent answers.
    assert parts.run_config("gone", owner="").agent == "agent"
    history = parts.history_config("reviewer", owner="")
    assert (history.agent, history.tiers["codegen"]["model"]) == ("reviewer", "reviewer-model")


async def test_agents_list_and_chat_creation(parts: Parts) -> None:
    chats = parts.services.chats
    listed = (await parts.services.settings.agents(owner=""))["agents"]
    assert [a["name"] for a in listed] == ["agent", "reviewer"]
    default, reviewer = listed
    assert (default["default"], reviewer["default"]) == (True, False)
    assert reviewer["soul_fingerprint"] == sha("REVIEWER SOUL")
    assert default["soul_fingerprint"] != reviewer["soul_fingerprint"]
    assert reviewer["description"] == "Reviews"
    assert reviewer["tiers"]["codegen"] == {"provider": "fake", "model": "reviewer-model"}
    assert default["tiers"]["codegen"] == {"provider": "fake", "model": "user-codegen"}
    assert "base_url" not in json.dumps(listed)

    chat = await chats.create(title="t", agent="reviewer", owner="")
    assert chat["agent"] == "reviewer"
    assert (await chats.create(owner=""))["agent"] == "agent"
    assert (await chats.get(chat["id"], owner=""))["agent"] == "reviewer"
    assert parts.store.chat_agent(chat["id"]) == "reviewer"
    for name in ("nobody", "Reviewer"):
        with pytest.raises(BadRequest) as info:
            await chats.create(agent=name, owner="")
        assert info.value.reason == "unknown_agent"
    assert len((await chats.list(owner=""))["chats"]) == 2  # nothing stored when refused


async def test_an_agent_tier_key_is_scrubbed(tmp_path: Path) -> None:
    tier = {"provider": "anthropic", "model": "m", "api_key_ref": "env:REVIEWER_KEY"}
    built = _parts(tmp_path, {"reviewer": {"tiers": {"codegen": tier}}})
    built._environ = {"REVIEWER_KEY": "sk-reviewer-secret-value-1234567890"}
    try:
        scrubber = built.build_scrubber(None)
        text = scrubber.scrub("key sk-reviewer-secret-value-1234567890 here")
        assert "sk-reviewer-secret" not in text
        assert "REVIEWER_KEY" in built.pool.env_drop
    finally:
        await built.stop()


async def test_the_database_password_is_scrubbed(tmp_path: Path) -> None:
    built = _parts(tmp_path, {})
    url = "postgresql://agent:pg-password-1234567890@db.internal:5432/agent"
    built.admin = dataclasses.replace(built.admin, db_url=url)
    try:
        scrubber = built.build_scrubber(None)
        text = scrubber.scrub(f"c.JupyterAgent.db_url = {url!r}")
        assert "pg-password-1234567890" not in text
        assert "[redacted: database password]" in text
    finally:
        await built.stop()
