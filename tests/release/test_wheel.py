"""The wheel a person installs (issue 32): built from this clone, checked, installed into a
fresh venv with no Node on PATH, smoke-tested, through ``scripts/release`` itself.

Marked ``wheel`` (``pytest -m "not wheel"`` skips it locally). It runs the release script
in its test mode: ``--dry-run`` (nothing in the clone is written), ``--no-isolation`` (the
build requirements are the test extra's), ``--reuse-bundle`` (the extension ``pip install
-e .`` built; the builder's skip-if-exists keeps it) and ``--lend-site-packages`` (no
registry: the wheel goes in with ``--no-deps --no-index`` and the dependencies are this
venv's). About 20-60 seconds.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.plugins.fresh_venv import REPO

pytestmark = [pytest.mark.wheel, pytest.mark.timeout(600)]

DATA = "jupyter_agent_runtime-{version}.data/data/"


def _watched() -> dict[str, bytes]:
    """The files a release writes, which a dry run must leave alone."""
    names = ["CHANGELOG.md", "jupyter_agent/__init__.py", "labextension/package.json"]
    return {name: (REPO / name).read_bytes() for name in names}


def test_the_wheel_installs_without_node_and_passes_the_smoke_test(tmp_path: Path) -> None:
    if not (REPO / "jupyter_agent" / "labextension" / "static" / "style.js").exists():
        pytest.fail("no built extension: run `pip install -e .` (it builds labextension/)")
    before = _watched()
    report_path = tmp_path / "report.json"
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "release.py"),
            "--dry-run",
            "--no-isolation",
            "--reuse-bundle",
            "--lend-site-packages",
            "--out",
            str(tmp_path / "dist"),
            "--report",
            str(report_path),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=540,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-6000:]
    assert _watched() == before  # a dry run writes nothing in the clone
    report = json.loads(report_path.read_text())
    import jupyter_agent

    assert report["version"] == jupyter_agent.__version__
    # the smoke test ran: the server got ready, the demo turn ended (their times are figures)
    assert report["server_ready_s"] > 0
    assert report["demo_turn_s"] > 0
    assert "## [" in done.stdout  # the changelog section it would write

    wheel = Path(report["wheel"])
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    data = DATA.format(version=report["version"])
    for path in (
        "share/jupyter/labextensions/jupyter-agent/package.json",
        "share/jupyter/labextensions/jupyter-agent/static/style.js",
        "etc/jupyter/jupyter_server_config.d/jupyter_agent.json",
        "share/jupyter/kernels/jupyter-agent/kernel.json",
    ):
        assert data + path in names, path
    # the bundle is in the wheel once (as data), not also inside the package
    assert not [n for n in names if n.startswith("jupyter_agent/labextension/")]
    assert report["wheel_bytes"] < 3_000_000

    # the sdist carries what a wheel build from it needs: the TypeScript and its lock
    with tarfile.open(report["sdist"]) as tf:
        members = {m.name.split("/", 1)[1] for m in tf.getmembers() if "/" in m.name}
    for path in ("package.json", "yarn.lock", ".yarnrc.yml", "src/index.ts"):
        assert f"labextension/{path}" in members, path
    assert not [m for m in members if "node_modules" in m]
    print(json.dumps(report, indent=2))
