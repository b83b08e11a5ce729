"""Kernel starts that cannot work (issue 25): a data dir where no kernel dir can be made.

A real ``jupyter server`` with a warm pool (``pool_size`` 1) whose kernels' folder
(``{data_dir}/jupyter_agent/kernels``) is immutable (``chattr +i``: as root, a mode of
0o500 would not stop the writes). The pool backs off and says once what is wrong (one
warning line naming the cause, no traceback), a run asking for a kernel meanwhile ends
with a clear error instead of waiting, and once the folder is writable again the next
run works and the log says starts work again.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from jupyter_agent.llm.fake.server import FakeProvider
from tests.faults.server import FaultServer, wait_for

pytestmark = pytest.mark.timeout(300)

WARNING = "agent kernels cannot start"
AGAIN = "agent kernels start again"


def _chattr(flag: str, path: Path) -> None:
    subprocess.run(["chattr", flag, str(path)], check=True, capture_output=True)


@pytest.fixture
def locked(tmp_path: Path) -> Iterator[Path]:
    """A folder made immutable (``chattr +i``), made mutable again at the end."""
    folder = tmp_path / "base" / "data" / "jupyter_agent" / "kernels"
    folder.mkdir(parents=True)
    if shutil.which("chattr") is None:
        pytest.skip("no chattr")
    done = subprocess.run(["chattr", "+i", str(folder)], capture_output=True)
    if done.returncode != 0:
        pytest.skip("chattr +i needs root and a filesystem with immutable files (ext4, xfs)")
    try:
        yield folder
    finally:
        subprocess.run(["chattr", "-i", str(folder)], capture_output=True)


def test_a_read_only_kernel_folder_backs_off_and_says_so_once(tmp_path: Path, locked: Path) -> None:
    with FakeProvider([]) as fake:
        server = FaultServer(tmp_path / "base", fake, {"pool_size": 1})
        assert locked.is_relative_to(server.dirs["data"])
        server.start()
        try:
            wait_for("the first failed start", lambda: WARNING in server.log_text, 60)
            first = server.log_text
            time.sleep(8)  # backing off 1, 2, 4 s: three tries at most, none of them said
            quiet = server.log_text
            assert quiet.count(WARNING) == 1, quiet
            assert "Traceback" not in quiet, quiet
            assert len(quiet) - len(first) < 2_000, quiet[len(first) :]
            line = next(ln for ln in quiet.splitlines() if WARNING in ln)
            assert "PermissionError" in line
            assert str(locked.parent) in line  # the cause names the folder

            # A run meanwhile: its cell fails at once with that cause; the run goes on.
            fake.load([{"cells": ["print('hello')"]}, {"text": "No kernel."}])
            with server.client() as client:
                chat_id = client.create_chat("no kernel")["id"]
            started = time.monotonic()
            turn = server.send_and_wait(chat_id, "Run it.", timeout_s=60)
            assert time.monotonic() - started < 30
            assert turn["replies"][-1] == {"text": "No kernel.", "done": True}
            with server.client() as client:
                detail = client.run(turn["run_id"], full=True)
            (step,) = [s for s in detail["steps"] if s["type"] == "cell"]
            assert step["status"] == "failed"
            assert "an agent kernel could not start: PermissionError" in json.dumps(step)
            assert server.log_text.count(WARNING) == 1

            # Writable again: the next run's kernel starts, and the log says so once.
            _chattr("-i", locked)
            fake.load([{"cells": ["print('back')"]}, {"text": "Back."}])
            turn = server.send_and_wait(chat_id, "Again.", timeout_s=120)
            assert turn["replies"][-1] == {"text": "Back.", "done": True}
            with server.client() as client:
                detail = client.run(turn["run_id"], full=True)
            (step,) = [s for s in detail["steps"] if s["type"] == "cell"]
            assert step["status"] == "ok", step
            wait_for("the info line", lambda: AGAIN in server.log_text, 30)
            assert server.log_text.count(AGAIN) == 1
            assert "Traceback" not in server.log_text
        finally:
            server.stop()
