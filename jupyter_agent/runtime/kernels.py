"""The warm pool of agent kernels: started ahead through the server's kernel manager.

N kernels wait ready; a run takes one (moved to its working folder before its first cell)
and the pool refills in the background; a run's kernel is never reused. Pool kernels keep
their ``last_activity`` fresh so the server's culler leaves them alone, and a dead or culled
one is replaced. The kernel manager is received as an object (see
:mod:`jupyter_agent.runtime.kernel_handle`); kernels start with the filtered environment of
:mod:`jupyter_agent.runtime.envfilter`.

Each kernel has private dirs (its connection file and ``JUPYTER_RUNTIME_DIR``, a scratch
dir; :mod:`jupyter_agent.runtime.sandbox`), is launched through the agent kernelspec's
provisioner (:mod:`jupyter_agent.runtime.provisioner`), optionally in a sandbox
(``kernel_sandbox``), and carries a tag every descendant inherits: discarding a kernel
ends all of them (:mod:`jupyter_agent.runtime.reaper`), a pool stop ends every process of
this server's kernels, and a pool start ends those a crashed earlier run left behind.

:class:`KernelPool` is configurable (``c.KernelPool.size = 3`` in a
``jupyter_server_config.py``); the extension app passes it the server's config.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import time
import uuid
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from jupyter_core.paths import jupyter_runtime_dir
from jupyter_core.utils import ensure_async
from traitlets import Float, Int, List, TraitError, Unicode, validate
from traitlets.config import LoggingConfigurable

from jupyter_agent.exceptions import KernelDied
from jupyter_agent.runtime import reaper
from jupyter_agent.runtime.envfilter import filter_env
from jupyter_agent.runtime.kernel_handle import AgentKernelHandle, AppHost
from jupyter_agent.runtime.paths import agent_data_dir
from jupyter_agent.runtime.provisioner import LAUNCH_KEY, PROVISIONER_NAME
from jupyter_agent.runtime.sandbox import (
    TRAIT,
    KernelPlace,
    Sandbox,
    SandboxUnavailable,
    check_sandbox,
    kernels_base,
    parse_sandbox,
    prepare_launch,
)

__all__ = ["AgentKernelHandle", "AppHost", "KernelPool"]

log = logging.getLogger(__name__)

# last_activity is refreshed every this many liveness intervals (5 s by default)
_KEEPALIVE_INTERVALS = 10
# SIGTERM to SIGKILL, for a discarded kernel's leftover processes
_REAP_GRACE_S = 1.0
# A kernel that dies while starting is started again (a port taken between pick and bind)
_START_ATTEMPTS = 3


class KernelPool(LoggingConfigurable):
    """Warm agent kernels, one per run; a run's kernel is never reused.

    ``kernel_manager`` is the server's (multi) kernel manager; ``base_env`` is the
    environment the kernel's is filtered from (default: the server's ``os.environ``);
    ``root_dir`` the server's root (default: the current dir), ``data_dir`` the agent's
    data dir (kernel dirs live under it), ``server_runtime_dir`` the server's runtime dir
    (hidden in a sandbox). The settings are traits (``size``, ``kernel_name``,
    ``env_keep``, ``liveness_interval_s``, ``kernel_sandbox``), given as keyword arguments
    or through ``config`` / ``parent``. Call :meth:`check` at server start: it refuses a
    sandbox that cannot work (:class:`~jupyter_agent.runtime.sandbox.SandboxUnavailable`).
    """

    size = Int(
        2,
        min=0,
        help="Number of warm agent kernels kept ready for new runs (0: start on demand).",
    ).tag(config=True)

    kernel_name = Unicode("jupyter-agent", help="Kernelspec the agent's kernels start from.").tag(
        config=True
    )

    env_keep = List(
        Unicode(),
        default_value=[],
        help=(
            "Names of environment variables let through the agent kernel's environment "
            "filter (which removes names containing KEY, TOKEN, SECRET, PASSWORD or "
            "CREDENTIAL, JUPYTER_TOKEN, SSH_AUTH_SOCK, AWS_*, AZURE_*, "
            "GOOGLE_APPLICATION_CREDENTIALS and URLs with a user:password part)."
        ),
    ).tag(config=True)

    liveness_interval_s = Float(
        0.5,
        min=0.01,
        help=(
            "Seconds between liveness checks of a kernel (warm or running a cell); warm "
            "kernels' last_activity is refreshed every 10 checks, so the culler spares them."
        ),
    ).tag(config=True)

    kernel_sandbox = Unicode(
        "none",
        help=(
            "How agent kernels are isolated. 'none': as the server's user, with a private "
            "runtime dir (the server's jpserver-*.json is not where Jupyter looks, but "
            "readable by path). 'bwrap': in Debian's bubblewrap: the file system read-only "
            "except the server's root dir and a scratch dir, /tmp and home empty, the "
            "server's runtime and agent data dirs hidden, its own pid namespace (no view "
            "of the server's /proc). 'user:NAME': as OS user NAME (the server must be "
            "root). An unavailable choice stops the server at start with the fix."
        ),
    ).tag(config=True)

    @validate("kernel_sandbox")
    def _validate_kernel_sandbox(self, proposal: Mapping[str, Any]) -> str:
        """``none``, ``bwrap`` or ``user:NAME``."""
        try:
            return str(parse_sandbox(str(proposal["value"])))
        except ValueError as exc:
            raise TraitError(str(exc)) from None

    def __init__(
        self,
        kernel_manager: Any,
        *,
        base_env: Mapping[str, str] | None = None,
        root_dir: str | None = None,
        data_dir: Path | None = None,
        server_runtime_dir: str | None = None,
        **traits: Any,
    ) -> None:
        super().__init__(**traits)
        self._km = kernel_manager
        self._base_env = base_env
        self._root_dir = os.path.abspath(root_dir or os.getcwd())
        self._data_dir = data_dir or agent_data_dir()
        self._server_runtime_dir = server_runtime_dir or jupyter_runtime_dir()
        self._key = reaper.server_key(self._root_dir)
        self._instance = reaper.instance_id()
        self._sandbox: Sandbox = parse_sandbox(self.kernel_sandbox)
        self._base = kernels_base(self._data_dir, self._key, self._instance, self._sandbox)
        # None until check(): whether the kernelspec uses the agent's provisioner
        self._planned: bool | None = None
        self._places: dict[str, KernelPlace] = {}
        # Every kernel started and not yet shut down (warm or held by a run)
        self._handles: dict[str, AgentKernelHandle] = {}
        self._warm: list[AgentKernelHandle] = []
        self._starting = 0
        self.env_drop: set[str] = set()
        """Names credential references (``env:NAME``) point at: kept out of the kernel."""
        self._start_slots = asyncio.Semaphore(max(1, min(4, os.cpu_count() or 1)))
        self._fill_task: asyncio.Task[None] | None = None
        self._keepalive_task: asyncio.Task[None] | None = None
        self._running = False
        self._closing: set[asyncio.Task[None]] = set()

    def kernel_env(self) -> dict[str, str]:
        """The complete (filtered) environment kernels are launched with: never a variable
        a credential reference names (:attr:`env_drop`), whatever its name looks like."""
        env = filter_env(os.environ if self._base_env is None else self._base_env, self.env_keep)
        for name in self.env_drop:
            env.pop(name, None)
        return env

    @property
    def sandbox(self) -> Sandbox:
        """The parsed ``kernel_sandbox``."""
        return self._sandbox

    def check(self) -> None:
        """Refuse a sandbox that cannot work here, or a kernelspec that cannot carry it.

        Blocking (a trial bwrap run, a kernelspec read): at server start, or in a thread.
        Raises :class:`SandboxUnavailable` naming the trait and the fix. A kernelspec
        without the agent's provisioner (installed by an older version) only works
        unsandboxed, and then without private runtime dirs (a warning).
        """
        check_sandbox(self._sandbox)
        planned = self._spec_has_provisioner()
        if not planned and self._sandbox.kind != "none":
            raise SandboxUnavailable(
                f"{TRAIT} = {str(self._sandbox)!r} but the kernelspec {self.kernel_name!r} "
                f"does not use {PROVISIONER_NAME} (installed by an older version); fix: "
                "jupyter-agent kernel install --sys-prefix (or --user), or set "
                f"{TRAIT} = 'none'"
            )
        if not planned:
            log.warning(
                "kernelspec %r does not use %s: agent kernels start without private runtime "
                "dirs; reinstall it with: jupyter-agent kernel install --sys-prefix",
                self.kernel_name,
                PROVISIONER_NAME,
            )
        self._planned = planned

    def _spec_has_provisioner(self) -> bool:
        ksm = getattr(self._km, "kernel_spec_manager", None)
        if ksm is None:
            return True
        try:
            spec = ksm.get_kernel_spec(self.kernel_name)
        except Exception:  # no such kernelspec: the start will say so
            return True
        provisioner = (getattr(spec, "metadata", None) or {}).get("kernel_provisioner") or {}
        return bool(provisioner.get("provisioner_name") == PROVISIONER_NAME)

    async def start(self) -> None:
        """End what a crashed earlier run of this server left, then start filling the pool
        in the background and keeping its kernels fresh."""
        await asyncio.to_thread(self._reap_leftovers)
        self._running = True
        self._kick_fill()
        self._keepalive_task = asyncio.create_task(self._keepalive())

    def _reap_leftovers(self) -> None:
        ended = reaper.reap_orphans(self._key)
        if ended:
            log.warning("ended %d process(es) left by an earlier agent kernel", len(ended))
        # The kernel dirs of instances of this server that no longer run.
        with contextlib.suppress(OSError):
            for folder in self._base.parent.iterdir():
                if folder.name != self._instance and not reaper.instance_alive(folder.name):
                    shutil.rmtree(folder, ignore_errors=True)

    async def _start_handle(self) -> AgentKernelHandle:
        # At most one start per core at a time: a kernel launch blocks the event loop (the
        # fork and exec, its sockets) and loads a core for about a second; 32 at once
        # starved the server (agent/status p99 over a second).
        async with self._start_slots:
            for attempt in range(_START_ATTEMPTS):
                try:
                    return await self._start_one()
                except KernelDied:
                    # Ports are picked free and bound by the kernel a moment later: another
                    # process can take one in between ("Address already in use"), and the
                    # kernel exits. A fresh start picks fresh ports.
                    if attempt + 1 == _START_ATTEMPTS:
                        raise
                    log.warning("an agent kernel died while starting; starting another")
            raise AssertionError("unreachable")

    async def _start_one(self) -> AgentKernelHandle:
        if self._planned is None:
            await asyncio.to_thread(self.check)
        kernel_id = str(uuid.uuid4())
        env = self.kernel_env()
        launch: dict[str, Any] = {}
        if self._planned:
            place = KernelPlace(
                kernel_id, self._base, reaper.make_tag(self._key, self._instance, kernel_id)
            )
            self._places[kernel_id] = place
            hidden = [self._server_runtime_dir, str(self._data_dir)]
            try:
                plan, extra = await asyncio.to_thread(
                    prepare_launch, place, self._sandbox, root_dir=self._root_dir, hidden=hidden
                )
            except BaseException:
                await self._end_processes(kernel_id, None)
                raise
            env.update(extra)
            launch[LAUNCH_KEY] = plan.to_json()
            if self._sandbox.kind != "none":
                launch["cwd"] = self._root_dir  # the server's cwd may be hidden or closed
        try:
            kernel_id = await ensure_async(
                self._km.start_kernel(
                    kernel_name=self.kernel_name, env=env, kernel_id=kernel_id, **launch
                )
            )
        except BaseException:
            with contextlib.suppress(Exception):
                await ensure_async(self._km.shutdown_kernel(kernel_id, now=True))
            await self._end_processes(kernel_id, None)
            raise
        kernel_id = str(kernel_id)
        handle = AgentKernelHandle(
            self._km, str(kernel_id), liveness_interval_s=self.liveness_interval_s
        )
        self._handles[handle.kernel_id] = handle
        try:
            await handle.connect()
        except BaseException:
            await self._shutdown(handle)
            raise
        return handle

    def _kick_fill(self) -> None:
        if self._running and (self._fill_task is None or self._fill_task.done()):
            self._fill_task = asyncio.create_task(self._fill())

    async def _fill(self) -> None:
        while self._running and len(self._warm) + self._starting < self.size:
            self._starting += 1
            try:
                handle = await self._start_handle()
            except Exception:
                log.warning("starting a pool kernel failed", exc_info=True)
                await asyncio.sleep(1.0)  # a failing start must not spin
                continue
            finally:
                self._starting -= 1
            if self._running:
                self._warm.append(handle)
            else:
                await self._shutdown(handle)

    async def _keepalive(self) -> None:
        last_touch = 0.0
        while self._running:
            await asyncio.sleep(self.liveness_interval_s)
            touch = time.monotonic() - last_touch >= _KEEPALIVE_INTERVALS * self.liveness_interval_s
            for handle in list(self._warm):
                if not await handle.is_alive():
                    self._warm.remove(handle)
                    await self._shutdown(handle)
                    continue
                if touch:
                    self._touch(handle.kernel_id)
            if touch:
                last_touch = time.monotonic()
            self._kick_fill()

    def _touch(self, kernel_id: str) -> None:
        # jupyter_server culls idle kernels by last_activity: a waiting pool kernel is not idle
        with contextlib.suppress(Exception):
            km = self._km.get_kernel(kernel_id)
            if hasattr(km, "last_activity"):
                km.last_activity = datetime.now(timezone.utc)

    async def acquire(self, *, cwd: str | None) -> AgentKernelHandle:
        """A warm kernel (a cold start when none is), moved to ``cwd``; the pool refills.

        The refill starts at the next liveness tick, not now: launching a kernel blocks the
        event loop for a few ms and loads a core for a second, which would land on the
        run's first model call and cell.
        """
        handle = None
        while self._warm:
            candidate = self._warm.pop(0)
            if await candidate.is_alive():
                handle = candidate
                break
            await self._shutdown(candidate)
        if not self._running or self._keepalive_task is None:
            self._kick_fill()
        if handle is None:
            handle = await self._start_handle()
        self._touch(handle.kernel_id)
        if cwd is not None and handle.cwd != os.path.abspath(cwd):
            try:
                await handle.chdir(cwd)
            except BaseException:
                await self.discard(handle)
                raise
        return handle

    async def discard(self, handle: AgentKernelHandle) -> None:
        """Shut the run's kernel down."""
        await self._shutdown(handle)

    def discard_soon(self, handle: AgentKernelHandle) -> None:
        """Shut the run's kernel down in the background (a run need not wait for it).

        :meth:`stop` waits for these shutdowns, so no kernel outlives the pool.
        """
        task = asyncio.create_task(self._shutdown(handle))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _shutdown(self, handle: AgentKernelHandle) -> None:
        self._handles.pop(handle.kernel_id, None)
        await handle.close()
        await self._shutdown_id(handle.kernel_id)

    async def _shutdown_id(self, kernel_id: str) -> None:
        pgid = self._pgid(kernel_id)
        with contextlib.suppress(Exception):
            await ensure_async(self._km.shutdown_kernel(kernel_id, now=True))
        await self._end_processes(kernel_id, pgid)

    def _pgid(self, kernel_id: str) -> int | None:
        # The launcher starts each kernel in its own session: its group is its pid.
        try:
            pgid = self._km.get_kernel(kernel_id).provisioner.pgid
        except Exception:
            return None
        return pgid if isinstance(pgid, int) else None

    async def _end_processes(self, kernel_id: str, pgid: int | None) -> None:
        """End every process carrying the kernel's tag (and its group); remove its dirs."""
        place = self._places.pop(kernel_id, None)
        if place is None:
            return
        try:
            await asyncio.to_thread(_reap_place, place, pgid)
        except Exception:
            log.warning("ending the processes of kernel %s failed", kernel_id, exc_info=True)

    async def stop(self) -> None:
        """Stop filling and shut the warm kernels down."""
        self._running = False
        if self._keepalive_task is not None:
            self._keepalive_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._keepalive_task
        if self._fill_task is not None:
            # Let a kernel start in progress finish (the fill then shuts it down): cancelling
            # mid-start leaves a half-registered kernel in the manager.
            with contextlib.suppress(asyncio.CancelledError, asyncio.TimeoutError, Exception):
                await asyncio.wait_for(asyncio.shield(self._fill_task), 60)
            self._fill_task.cancel()
        warm, self._warm = self._warm, []
        await asyncio.gather(*(self._shutdown(h) for h in warm), *self._closing)
        # Kernels runs still hold (a run not ended by now), then anything of this
        # instance's tag: a server stop leaves no process behind.
        await asyncio.gather(*(self._shutdown(h) for h in list(self._handles.values())))
        await asyncio.gather(*(self._shutdown_id(kid) for kid in list(self._places)))
        prefix = reaper.make_tag(self._key, self._instance, "")
        await asyncio.to_thread(reaper.reap, lambda tag: tag.startswith(prefix))
        await asyncio.to_thread(shutil.rmtree, self._base, True)


def _reap_place(place: KernelPlace, pgid: int | None) -> None:
    start = time.monotonic()
    ended = reaper.reap(
        lambda tag: tag == place.tag, pgids=[pgid] if pgid else [], grace_s=_REAP_GRACE_S
    )
    shutil.rmtree(place.kernel_dir, ignore_errors=True)
    log.debug(
        "kernel %s: %d leftover process(es) ended in %.3f s",
        place.kernel_id,
        len(ended),
        time.monotonic() - start,
    )
