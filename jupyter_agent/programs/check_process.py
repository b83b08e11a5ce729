"""A deploy's code checks in a process of their own: out of the server, under a deadline,
away from its secrets.

:meth:`CheckProcess.run` runs the checks that execute a program's code (import, smoke test,
its own scenarios) in ``python -m jupyter_agent.programs.check_worker``, started with
``asyncio.create_subprocess_exec`` (the event loop never waits on it):

- its environment is the agent kernels' (``KernelPool.kernel_env``: the filter of
  :mod:`~jupyter_agent.runtime.kernels.envfilter`, without the variables credential references
  name), with ``HOME``, ``TMPDIR`` and the working dir a fresh temp dir, removed after;
- under the kernels' sandbox (``KernelPool.kernel_sandbox``): ``bwrap`` as a kernel (file
  system read-only but its temp dir, ``/tmp`` and home empty, the server's runtime and
  agent data dirs hidden, its own pid namespace), ``user:NAME`` as that user;
- in a session of its own, tagged as kernels are (:mod:`~jupyter_agent.runtime.kernels.reaper`):
  past the deadline (``timeout_s``, the trait ``JupyterAgent.program_check_timeout_s``)
  its process group is killed and the deploy refused (reason ``program_check_timeout``);
  after any end every process it left is reaped;
- its verdict is one JSON line on stdout, ``{"ok": true, "hash"}`` or ``{"ok": false,
  "message"}``; the server reads nothing else from it (the files, hash, entry and uses it
  stores are its own :func:`~jupyter_agent.programs.deploy_checks.check_static` result,
  and an ``ok`` must name that hash). No verdict (the process crashed, or the program's
  code ended it) refuses the deploy.

At most :data:`PARALLEL` checks run at once (each is a Python process for a second).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from jupyter_agent.exceptions import ProgramRefused, Unavailable
from jupyter_agent.programs.deploy_checks import Checked
from jupyter_agent.runtime.kernels.envfilter import filter_env
from jupyter_agent.runtime.kernels.reaper import TAG_VAR, instance_id, make_tag, reap, server_key
from jupyter_agent.runtime.kernels.sandbox import KernelPlace, Sandbox, bwrap_prefix

__all__ = ["DEFAULT_TIMEOUT_S", "PARALLEL", "TIMEOUT_TRAIT", "WORKER", "CheckProcess"]

log = logging.getLogger(__name__)

#: The module the check process runs.
WORKER: Final = "jupyter_agent.programs.check_worker"
#: The deadline's default, in seconds.
DEFAULT_TIMEOUT_S: Final = 20.0
#: The trait that sets the deadline, as messages name it.
TIMEOUT_TRAIT: Final = "JupyterAgent.program_check_timeout_s"
#: Checks running at once.
PARALLEL: Final = 2
#: The most of the verdict read (stdout), and of stderr kept for the log.
_VERDICT_BYTES: Final = 64 * 1024
_STDERR_TAIL: Final = 2048
#: How long after the exit the verdict's bytes may still arrive.
_LATE_S: Final = 1.0


def _server_env() -> dict[str, str]:
    return filter_env(os.environ)


def _as_is(value: Any) -> Any:
    return value


class CheckProcess:
    """Runs deploy checks out of process (see the module docstring).

    ``env``: the environment to start from (called at each check; default the server's,
    filtered); ``sandbox`` and ``hidden`` (folders a ``bwrap`` sandbox hides); ``tag``
    makes a process's reaper tag from a name (default: this server instance's);
    ``scratch``: where the temp dirs go (default the system's temp dir).
    """

    def __init__(
        self,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        env: Callable[[], Mapping[str, str]] = _server_env,
        sandbox: Sandbox | None = None,
        hidden: tuple[str, ...] = (),
        tag: Callable[[str], str] | None = None,
        scratch: Path | None = None,
        clean: Callable[[Any], Any] = _as_is,
    ) -> None:
        self.timeout_s = timeout_s
        # What the process says (its verdict, its stderr) is the program's text: known
        # secrets out before it reaches the server's log or the refusal's message.
        self._clean = clean
        self._env = env
        self.sandbox = sandbox or Sandbox("none")
        self._hidden = hidden
        key, instance = server_key(os.getcwd()), instance_id()
        self._tag = tag or (lambda name: make_tag(key, instance, name))
        self._scratch = scratch
        self._slots: asyncio.Semaphore | None = None

    @classmethod
    def for_pool(
        cls, pool: Any, *, timeout_s: float, clean: Callable[[Any], Any] = _as_is
    ) -> CheckProcess:
        """Checks started as ``pool``'s kernels are (its environment, sandbox, hidden
        folders and tags); a pool without them (a test's stand-in): the defaults."""
        starts = getattr(pool, "starts", None)
        env = getattr(pool, "kernel_env", None)
        return cls(
            timeout_s=timeout_s,
            env=env if callable(env) else _server_env,
            sandbox=getattr(pool, "sandbox", None),
            hidden=tuple(starts.hidden_dirs()) if starts is not None else (),
            tag=starts.tag if starts is not None else None,
            clean=clean,
        )

    async def run(self, checked: Checked) -> None:
        """Run the code checks of ``checked`` (a :func:`check_static` result) in a check
        process; ProgramRefused when they fail or pass the deadline, Unavailable when the
        process cannot start. Nothing of it is left afterwards."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(PARALLEL)
        async with self._slots:
            base = await asyncio.to_thread(self._prepare)
            try:
                verdict = await self._spawn(checked, base)
            finally:
                await asyncio.to_thread(shutil.rmtree, base, True)
        if verdict.get("ok") is True:
            if verdict.get("hash") != checked.hash:
                raise ProgramRefused("the check process checked other files than these")
            return
        message = verdict.get("message")
        raise ProgramRefused(str(message)[:1000] if message else "the checks failed")

    # --- the process ---------------------------------------------------------------------

    def _prepare(self) -> Path:
        """A fresh temp dir holding ``check/scratch`` (the process's cwd, HOME, TMPDIR)
        and ``check/runtime``, owned by the sandbox's user when there is one."""
        base = Path(tempfile.mkdtemp(prefix="ja-check-", dir=self._scratch))
        place = self._place(base)
        for folder in (place.kernel_dir, place.runtime_dir, place.scratch_dir):
            folder.mkdir(mode=0o700, exist_ok=True)
            if self.sandbox.kind == "user":
                entry = pwd.getpwnam(str(self.sandbox.user))
                os.chown(folder, entry.pw_uid, entry.pw_gid)
        if self.sandbox.kind == "user":
            os.chmod(base, 0o711)  # the user traverses it, lists nothing
        return base

    @staticmethod
    def _place(base: Path) -> KernelPlace:
        return KernelPlace("check", base, "")

    def _command(self, base: Path) -> tuple[list[str], dict[str, Any]]:
        """The argv and the extra ``create_subprocess_exec`` arguments (a user to be)."""
        argv = [sys.executable, "-m", WORKER]
        place = self._place(base)
        if self.sandbox.kind == "bwrap":
            prefix = bwrap_prefix(place, root_dir=str(place.scratch_dir), hidden=list(self._hidden))
            return [*prefix, *argv], {}
        if self.sandbox.kind == "user":
            entry = pwd.getpwnam(str(self.sandbox.user))
            return argv, {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
        return argv, {}

    async def _spawn(self, checked: Checked, base: Path) -> dict[str, Any]:
        scratch = str(self._place(base).scratch_dir)
        tag = self._tag(f"check-{uuid.uuid4().hex[:12]}")
        env = dict(self._env())
        env.update(
            {TAG_VAR: tag, "HOME": scratch, "TMPDIR": scratch, "PYTHONDONTWRITEBYTECODE": "1"}
        )
        env.pop("JUPYTER_RUNTIME_DIR", None)
        argv, extra = await asyncio.to_thread(self._command, base)
        payload = json.dumps({"name": checked.name, "files": checked.files}).encode()
        loop = asyncio.get_running_loop()
        protocol = _Protocol(loop)
        try:
            transport, _ = await loop.subprocess_exec(
                lambda: protocol,
                *argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=scratch,
                env=env,
                start_new_session=True,
                **extra,
            )
        except OSError as exc:
            raise Unavailable(f"cannot start the program check process: {exc}") from None
        try:
            stdin = transport.get_pipe_transport(0)
            assert isinstance(stdin, asyncio.WriteTransport)
            stdin.write(payload)
            stdin.close()  # after the buffer is written
            try:
                await asyncio.wait_for(asyncio.shield(protocol.exited), self.timeout_s)
            except asyncio.TimeoutError:
                raise ProgramRefused(
                    f"the checks ran past {self.timeout_s:g} s ({TIMEOUT_TRAIT}) and were"
                    " stopped: does the program's import or its smoke test wait or loop?",
                    reason="program_check_timeout",
                ) from None
            # The verdict was written before the exit; its bytes may arrive just after.
            await asyncio.wait([protocol.out_closed], timeout=_LATE_S)
        finally:
            if transport.get_returncode() is None:  # the deadline, or a cancelled request
                with contextlib.suppress(OSError):
                    os.killpg(transport.get_pid(), signal.SIGKILL)
            # Whatever it started (a daemon of the program's import, holding the pipes
            # open) ends with it; then the pipes close.
            await asyncio.to_thread(reap, lambda found: found == tag, grace_s=0.2)
            transport.close()
        out = self._clean(bytes(protocol.out).decode("utf-8", errors="replace")).encode()
        err = self._clean(bytes(protocol.err).decode("utf-8", errors="replace")).encode()
        return _verdict(out, err, transport.get_returncode())


class _Protocol(asyncio.SubprocessProtocol):
    """The check process's pipes: the verdict's first bytes, stderr's tail, the exit.

    ``exited`` resolves when the process ends (not when its pipes close: a process it
    started may hold them open); ``out_closed`` when stdout closes."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.out = bytearray()
        self.err = bytearray()
        self.exited: asyncio.Future[None] = loop.create_future()
        self.out_closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            self.out += data[: max(0, _VERDICT_BYTES - len(self.out))]
        else:
            self.err = (self.err + data)[-_STDERR_TAIL:]

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1 and not self.out_closed.done():
            self.out_closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


def _verdict(out: bytes, err: bytes, code: int | None) -> dict[str, Any]:
    """The verdict line of ``out``; a refusal naming the exit and stderr's last line when
    there is none."""
    lines = out.decode("utf-8", errors="replace").strip().splitlines()
    try:
        verdict = json.loads(lines[-1]) if len(lines) == 1 else None
    except ValueError:
        verdict = None
    if isinstance(verdict, dict) and isinstance(verdict.get("ok"), bool):
        return verdict
    tail = err.decode("utf-8", errors="replace").strip().splitlines()[-1:]
    log.info("program check process: no verdict (exit %s): %s", code, err[-_STDERR_TAIL:])
    why = f": {tail[0][:200]}" if tail else ""
    return {
        "ok": False,
        "message": f"the check process ended without a verdict (exit {code}{why}): the"
        " program's code ended it (os._exit, a signal), or it could not run",
    }
