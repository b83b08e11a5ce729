"""The documentation site (issue 32, item 3): ``sphinx-build -W`` of ``docs/`` (warnings are
errors: a broken link, a page in no table of contents, a bad directive fail it), and its
generated references cover the code: every configurable trait on the configuration page,
every route on the REST page, every command on the CLI page."""

from __future__ import annotations

import html
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jupyter_agent.cli.main import build_parser
from jupyter_agent.server.routes import default_handlers
from tests.server.test_api_doc import documented_routes

pytestmark = [pytest.mark.docs, pytest.mark.timeout(300)]

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

from agent_reference import _commands, classes, own_traits  # noqa: E402


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "-d",
         str(out / ".doctrees"), str(ROOT / "docs"), str(out)],
        capture_output=True, text=True, cwd=ROOT, timeout=280,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-6000:]
    print(f"docs built in {time.monotonic() - started:.1f} s")
    return out


def _text(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))


def test_every_trait_is_in_the_configuration_reference(site: Path) -> None:
    text = _text(site / "reference" / "configuration.html")
    missing = [
        f"{cls.__name__}.{name}"
        for cls in classes()
        for name in own_traits(cls)
        if f"{cls.__name__}.{name}" not in text
    ]
    assert missing == []
    assert len(text) > 10_000
    assert "KernelPool.python" in text
    assert "(also set by the deprecated JupyterAgent.pool_size)" in text


def test_every_route_is_in_the_rest_reference(site: Path) -> None:
    text = _text(site / "api.html")
    routes = {path for _method, path in documented_routes()}
    assert len(routes) >= len({p for p, _h in default_handlers}) - 1
    assert [r for r in routes if r not in text] == []
    assert "agent/runs/{run_id}/diff/{other}" in text


def test_every_command_is_in_the_cli_reference(site: Path) -> None:
    text = _text(site / "reference" / "cli.html")
    commands = [name for name, _parser in _commands(build_parser(), "jupyter agent")]
    assert "jupyter agent trace diff" in commands
    assert [c for c in commands if c not in text] == []


def test_the_guides_hold_the_readme_and_the_panel_shows_its_screenshots(site: Path) -> None:
    start = _text(site / "guide" / "get-started.html")
    assert "pip install -e . && jupyter lab" in start
    panel = (site / "guide" / "panel.html").read_text()
    assert "Slash commands" in panel
    # Each screenshot named is shown (taken by the browser tests) or named as to come.
    for name in ("slash-popup", "rerun-diff"):
        shown = f"_images/screenshots/{name}.png" in panel
        assert shown or name.replace("-", " ") in panel
