"""``sh``: run one shell command line as a child of the kernel; ``sh.last`` is the latest.

``sh("ls -l")`` (or ``sh.run("ls -l", timeout=60)``) runs the line with ``/bin/sh -c`` in
the kernel's working directory and returns a :class:`ShResult` (``stdout``, ``stderr``,
``returncode``, ``timed_out``, full texts). The model's ``bash`` tool is the same call made
by the host through a dedicated execute request; either way the result is bound as
``sh.last``. On timeout (or an interrupt) the command's whole process group is killed.

The host's ``bash`` op also passes ``on_output``: the command's stdout and stderr are then
read as they come and each decoded piece is handed over (``on_output(name, text)``) while
it runs; the result's texts are decoded from all the bytes, exactly as without it.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from jupyter_agent.core.digest.cells import BashResult
from jupyter_agent.kernel.capture import bound_value

__all__ = ["Sh", "ShResult"]

DEFAULT_TIMEOUT_S = 60.0
# How long the readers may take to see EOF once the command's group was killed (a child
# that left the group can keep a pipe open: it is not waited for).
_DRAIN_AFTER_KILL_S = 5.0

OutputCallback = Callable[[str, str], None]


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

    def run(
        self,
        command: str,
        timeout: float = DEFAULT_TIMEOUT_S,
        *,
        on_output: OutputCallback | None = None,
    ) -> ShResult:
        """Run ``command``; kill its process group after ``timeout`` seconds.

        ``on_output(name, text)`` (``name`` is ``stdout`` or ``stderr``) gets the output
        live; it is called from reader threads.
        """
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
        if on_output is not None:
            out, err, timed_out = _run_streaming(proc, timeout, on_output)
        else:
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc)
                out, err = proc.communicate()
            except BaseException:  # KeyboardInterrupt (the host's interrupt): leave nothing
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


def _pump(pipe: IO[bytes], name: str, chunks: list[bytes], on_output: OutputCallback) -> None:
    """Read one pipe to EOF: keep the bytes, hand over the decoded text as it comes."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    read = getattr(pipe, "read1", pipe.read)
    try:
        while True:
            data = read(65536)
            if not data:
                break
            chunks.append(data)
            _safe_call(on_output, name, decoder.decode(data))
        _safe_call(on_output, name, decoder.decode(b"", final=True))
    finally:
        pipe.close()


def _safe_call(on_output: OutputCallback, name: str, text: str) -> None:
    if not text:
        return
    with contextlib.suppress(Exception):  # showing output live must never break the command
        on_output(name, text)


def _run_streaming(
    proc: subprocess.Popen[bytes], timeout: float, on_output: OutputCallback
) -> tuple[bytes, bytes, bool]:
    """``communicate(timeout)`` with live output: (stdout, stderr, timed out)."""
    assert proc.stdout is not None
    assert proc.stderr is not None
    out: list[bytes] = []
    err: list[bytes] = []
    readers = [
        threading.Thread(target=_pump, args=(proc.stdout, "stdout", out, on_output), daemon=True),
        threading.Thread(target=_pump, args=(proc.stderr, "stderr", err, on_output), daemon=True),
    ]
    for reader in readers:
        reader.start()
    deadline = time.monotonic() + timeout
    timed_out = False
    try:
        # Like communicate: done when both pipes reached EOF and the process exited.
        for reader in readers:
            reader.join(max(deadline - time.monotonic(), 0))
        if any(r.is_alive() for r in readers):
            raise subprocess.TimeoutExpired(proc.args, timeout)
        proc.wait(max(deadline - time.monotonic(), 0))
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
    except BaseException:  # KeyboardInterrupt (the host's interrupt): leave nothing behind
        _kill_group(proc)
        _finish(proc, readers)
        raise
    _finish(proc, readers)
    return b"".join(out), b"".join(err), timed_out


def _finish(proc: subprocess.Popen[bytes], readers: list[threading.Thread]) -> None:
    proc.wait()
    for reader in readers:
        reader.join(_DRAIN_AFTER_KILL_S)
