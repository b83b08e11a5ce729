"""The newcomer script (issue 30) runs in the test command: a fresh venv from a copy of
this clone, the README's first command, the panel in Debian chromium (first message, a
plot, stop, reload) and the CLI without ``--addr``, with no error in the server's log or
the browser's console. Marked ``newcomer`` (``-m "not newcomer"`` skips it locally)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.newcomer, pytest.mark.timeout(1500)]


def test_a_newcomers_first_steps_pass() -> None:
    if not Path("/usr/bin/chromium").exists() and os.environ.get("CI") != "true":
        pytest.skip("needs Debian's chromium")
    if shutil.which("git") is None or shutil.which("node") is None:
        pytest.fail("the newcomer needs git and node on PATH")
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "newcomer.py")],
        capture_output=True,
        text=True,
        timeout=1400,
        cwd=REPO,
    )
    print(done.stdout)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-6000:]
    assert "newcomer: every step passed" in done.stdout
