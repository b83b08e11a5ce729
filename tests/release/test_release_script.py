"""``scripts/release``'s parts that need no build (issue 32): the version's one place, the
changelog's new section from a real git history, PATH without Node."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import jupyter_agent
from tests.plugins.fresh_venv import REPO


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


release = _load("release")
release_smoke = sys.modules["release_smoke"]  # the one release.py imported (its Failed)


def test_the_version_has_one_value() -> None:
    package = json.loads((REPO / "labextension" / "package.json").read_text())
    assert release.current_version() == jupyter_agent.__version__
    assert package["version"] == release.npm_version(jupyter_agent.__version__)


def test_a_prerelease_is_written_in_each_ecosystem_s_form() -> None:
    assert release.npm_version("1.2.0") == "1.2.0"
    assert release.npm_version("1.2.0rc1") == "1.2.0-rc.1"
    assert release.npm_version("1.2.0a3") == "1.2.0-alpha.3"
    with pytest.raises(release_smoke.Failed):
        release.npm_version("1.2")


def test_the_labextension_names_its_server_part_for_the_extension_manager() -> None:
    package = json.loads((REPO / "labextension" / "package.json").read_text())
    server = package["jupyterlab"]["discovery"]["server"]
    assert server["base"]["name"] == "jupyter-agent-runtime"  # the pip distribution
    assert server["managers"] == ["pip"]
    install = json.loads((REPO / "labextension" / "install.json").read_text())
    assert install["packageName"] == server["base"]["name"]


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def _commit(repo: Path, subject: str) -> None:
    (repo / "f.txt").write_text(subject)
    _git(repo, "add", "f.txt")
    _git(repo, "commit", "-q", "-m", subject)


@pytest.fixture
def history(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.fail("this test needs git")
    _git(tmp_path, "init", "-q")
    _commit(tmp_path, "Add the first thing")
    _git(tmp_path, "tag", "v0.1.0")
    for subject in [
        "Add a memory view",
        "fix: the stop button waited forever",
        "review: names",
        "tests: more",
        "Remove the old flag",
        "security: refuse keys in titles",
        "The panel says which model answers",
    ]:
        _commit(tmp_path, subject)
    return tmp_path


def test_the_changelog_section_lists_user_visible_commits_since_the_tag(history: Path) -> None:
    assert release.last_tag(history) == "v0.1.0"
    curated = "\n### Added (issue 32)\n- a wheel with no Node\n\n"
    section = release.changelog_section(
        "0.2.0", dt.date(2026, 12, 5), "v0.1.0", curated, repo=history
    )
    assert section == (
        "## [0.2.0] - 2026-12-05\n\n"
        "### Added (issue 32)\n- a wheel with no Node\n\n"
        "### Added (the commits since v0.1.0)\n- Add a memory view\n\n"
        "### Changed (the commits since v0.1.0)\n- The panel says which model answers\n\n"
        "### Removed (the commits since v0.1.0)\n- Remove the old flag\n\n"
        "### Fixed (the commits since v0.1.0)\n- fix: the stop button waited forever\n\n"
        "### Security (the commits since v0.1.0)\n- security: refuse keys in titles\n"
    )


def test_with_no_tag_the_section_says_so_and_takes_every_commit(history: Path) -> None:
    _git(history, "tag", "-d", "v0.1.0")
    assert release.last_tag(history) is None
    section = release.changelog_section("0.1.0", dt.date(2026, 12, 5), None, "", repo=history)
    assert "### Added (every commit (no earlier tag))\n- Add the first thing\n" in section


def test_the_new_section_goes_under_an_emptied_unreleased() -> None:
    text = "# Changelog\n\nIntro.\n\n## [Unreleased]\n\n### Added\n- x\n\n## Before\n- y\n"
    _head, curated, rest = release.split_unreleased(text)
    assert (curated, rest) == ("\n### Added\n- x\n\n", "## Before\n- y\n")
    new = release.new_changelog(text, "## [1.0.0] - 2026-12-05\n\n### Added\n- x\n")
    assert new == (
        "# Changelog\n\nIntro.\n\n## [Unreleased]\n\n"
        "## [1.0.0] - 2026-12-05\n\n### Added\n- x\n\n## Before\n- y\n"
    )


def test_path_without_node_keeps_the_other_commands(tmp_path: Path) -> None:
    tools = tmp_path / "usr-bin"
    tools.mkdir()
    for name in ("node", "npm", "jlpm", "bash-like"):
        (tools / name).write_text("#!/bin/sh\n")
        (tools / name).chmod(0o755)
    path = release_smoke.node_free_path(f"{tools}{os.pathsep}/nonexistent", tmp_path / "shadow")
    assert shutil.which("node", path=path) is None
    assert shutil.which("jlpm", path=path) is None
    found = shutil.which("bash-like", path=path)
    assert found is not None
    assert Path(found).resolve() == (tools / "bash-like").resolve()
    assert path.endswith(f"{os.pathsep}/nonexistent")
