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
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

import jupyter_agent
from tests.plugins.fresh_venv import REPO

pytestmark = [pytest.mark.wheel, pytest.mark.timeout(600)]

DATA = "jupyter_agent_runtime-{version}.data/data/"


def _watched() -> dict[str, bytes]:
    """The files a release writes, which a dry run must leave alone."""
    names = ["CHANGELOG.md", "jupyter_agent/__init__.py", "labextension/package.json"]
    return {name: (REPO / name).read_bytes() for name in names}


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``scripts/release``'s dry run in test mode: its report, and its output as ``stdout``."""
    tmp_path = tmp_path_factory.mktemp("release")
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
    report: dict[str, Any] = json.loads(report_path.read_text())
    return report | {"stdout": done.stdout}


def test_the_wheel_installs_without_node_and_passes_the_smoke_test(
    released: dict[str, Any],
) -> None:
    report = released
    done_stdout = report.pop("stdout")

    assert report["version"] == jupyter_agent.__version__
    # the smoke test ran: the server got ready, the demo turn ended (their times are figures)
    assert report["server_ready_s"] > 0
    assert report["demo_turn_s"] > 0
    assert "## [" in done_stdout  # the changelog section it would write

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


def test_the_sdist_builds_the_same_wheel_with_node(
    released: dict[str, Any], tmp_path: Path
) -> None:
    """The sdist without its built bundle: the wheel built from it (``jlpm install``, ``jlpm
    build:prod``) holds the same files, the Python ones byte for byte. (The bundle's chunk
    names carry content hashes, and webpack's container module id depends on the build
    folder: those names may differ.)"""
    if shutil.which("node") is None or shutil.which("jlpm") is None:
        pytest.fail("this test needs node and jlpm on PATH")
    with tarfile.open(released["sdist"]) as tf:
        # (the "data" filter where this Python has it: 3.10.12, 3.11.4 and later)
        safe: dict[str, Any] = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tf.extractall(tmp_path, **safe)
    (source,) = tmp_path.iterdir()
    shutil.rmtree(source / "jupyter_agent" / "labextension")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-build-isolation",
            "--no-deps",
            "-w",
            str(tmp_path / "out"),
            str(source),
        ],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=480,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    (rebuilt,) = (tmp_path / "out").glob("*.whl")

    def contents(wheel: Path) -> dict[str, bytes]:
        with zipfile.ZipFile(wheel) as zf:
            return {
                re.sub(r"\.[0-9a-f]{16}\.js", ".HASH.js", n): zf.read(n)
                for n in zf.namelist()
                if ".dist-info/" not in n
            }

    first, second = contents(Path(released["wheel"])), contents(rebuilt)
    # The test mode's wheel reuses the bundle `pip install -e .` built, a development one
    # (source maps, a build log); the sdist's is a production build: the extension's files
    # are compared by what a lab loads, everything else name for name.
    bundle = DATA.format(version=released["version"]) + "share/jupyter/labextensions/"

    def outside(names: dict[str, bytes]) -> list[str]:
        return sorted(n for n in names if not n.startswith(bundle))

    assert outside(first) == outside(second)
    assert [n for n in first if n.endswith(".py") and first[n] != second[n]] == []
    for wheel in (first, second):
        entry = bundle + "jupyter-agent/static/remoteEntry."
        loaded = [n for n in wheel if n.startswith(entry) and n.endswith(".js")]
        assert len(loaded) == 1, sorted(n for n in wheel if n.startswith(bundle))
        assert bundle + "jupyter-agent/package.json" in wheel
    assert second[
        DATA.format(version=released["version"]) + "share/jupyter/labextensions/"
        "jupyter-agent/static/style.js"
    ]
