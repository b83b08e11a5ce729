"""``sh``: run one shell command line as a child of the kernel; ``sh.last`` is the latest.

``sh("ls -l")`` (or ``sh.run("ls -l", timeout=60)``) runs the line with ``/bin/sh -c`` in
the kernel's working directory and returns a :class:`ShResult` (``stdout``, ``stderr``,
``returncode``, ``timed_out``, full texts). The model's ``bash`` tool is the same call made
by the host through a dedicated execute request; either way the result is bound as
``sh.last``. On timeout (or an interrupt) the command's whole process group is killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass

from jupyter_agent.core.cells import BashResult

from .capture import bound_value

__all__ = ["Sh", "ShResult"]

DEFAULT_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class ShResult:
    """One command's outcome; texts are whole (the host gets them bounded)."""

    command: str
    stdout: str
    stderr: str
    returncode: int | None
    timed_out: bool = False
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        """True when the command exited with status 0."""
        return self.returncode == 0 and not self.timed_out

    def to_bash_result(self) -> BashResult:
        """The bounded wire form (texts cut, full lengths kept in ``chars``)."""
        return BashResult(
            command=self.command,
            stdout=bound_value(self.stdout),
            stderr=bound_value(self.stderr),
            returncode=self.returncode,
            timed_out=self.timed_out,
            duration_s=round(self.duration_s, 6),
        )

    def __repr__(self) -> str:
        status = "timed out" if self.timed_out else f"returncode={self.returncode}"
        return (
            f"<ShResult {self.command!r}: {status}, stdout {len(self.stdout)} chars, "
            f"stderr {len(self.stderr)} chars>"
        )


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()


class Sh:
    """The ``sh`` object bound in the namespace."""

    def __init__(self) -> None:
        self.last: ShResult | None = None

    def run(self, command: str, timeout: float = DEFAULT_TIMEOUT_S) -> ShResult:
        """Run ``command``; kill its process group after ``timeout`` seconds."""
        start = time.monotonic()
        proc = subprocess.Popen(
            command,
            shell=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own group, so a timeout kills the whole pipeline
        )
        timed_out = False
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
            out, err = proc.communicate()
        except BaseException:  # KeyboardInterrupt (the host's interrupt): leave nothing behind
            _kill_group(proc)
            proc.communicate()
            raise
        result = ShResult(
            command=command,
            stdout=out.decode("utf-8", "replace"),
            stderr=err.decode("utf-8", "replace"),
            returncode=None if timed_out else proc.returncode,
            timed_out=timed_out,
            duration_s=time.monotonic() - start,
        )
        self.last = result
        return result

    __call__ = run

    def __repr__(self) -> str:
        return f"<sh: sh('cmd', timeout=60); sh.last = {self.last!r}>"
