"""The warm pool of agent kernels: started ahead through the server's kernel manager.

``size`` kernels wait ready; a run takes one at its first cell (moved to its working folder
first: :mod:`jupyter_agent.runtime.kernels.run_kernel`) and the pool refills in the
background, several starts at once (one per core); a run's kernel is never reused. Under a
burst (runs find the pool empty) the pool grows, up to ``pool_max`` warm kernels, and
shrinks back to ``size`` after ``pool_idle_s`` without a run taking one
(:mod:`jupyter_agent.runtime.kernels.growth`); a run waiting for a kernel takes the first
that becomes ready. Pool kernels keep their ``last_activity`` fresh so the server's culler
leaves them alone, and a dead or culled one is replaced (:mod:`.keepalive`). The kernel
manager is received as an object (see :mod:`jupyter_agent.runtime.kernels.handle`); kernels
start with the filtered environment of :mod:`jupyter_agent.runtime.kernels.envfilter`.

Each kernel has private dirs (its connection file and ``JUPYTER_RUNTIME_DIR``, a scratch
dir; :mod:`jupyter_agent.runtime.kernels.sandbox`), is launched through the agent
kernelspec's provisioner (:mod:`jupyter_agent.runtime.kernels.provisioner`), optionally in a
sandbox (``kernel_sandbox``), and carries a tag every descendant inherits: discarding a
kernel ends all of them (:mod:`jupyter_agent.runtime.kernels.reaper`), a pool stop ends
every process of this server's kernels, and a pool start ends those a crashed earlier run
left behind.

:class:`KernelPool` is configurable (``c.KernelPool.size = 3`` in a
``jupyter_server_config.py``); the extension app passes it the server's config. Launching
and ending kernels is :mod:`jupyter_agent.runtime.kernels.starts`; after failed starts the
warm refills back off (:mod:`jupyter_agent.runtime.start_backoff`).

With a gateway (``--gateway-url``) the kernels start there through the same manager, kept
warm alike; the local-only parts (private dirs, tags, reaping, sandbox) do not apply
(:meth:`KernelPool.check` says so once and refuses a sandbox). A run whose kernel runs in
another environment (``python``) gets one started for it, not a warm one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jupyter_core.paths import jupyter_runtime_dir
from traitlets import Float, Int, List, TraitError, Unicode, default, validate
from traitlets.config import LoggingConfigurable

from jupyter_agent.exceptions import KernelError
from jupyter_agent.runtime.kernels.envfilter import filter_env
from jupyter_agent.runtime.kernels.growth import Demand, Waiters
from jupyter_agent.runtime.kernels.handle import AgentKernelHandle, AppHost
from jupyter_agent.runtime.kernels.keepalive import KEEPALIVE_INTERVALS, sweep_warm
from jupyter_agent.runtime.kernels.keepalive import touch as touch_kernel
from jupyter_agent.runtime.kernels.remote import RemoteKernels
from jupyter_agent.runtime.kernels.sandbox import Sandbox, parse_sandbox
from jupyter_agent.runtime.kernels.starts import KernelStarts, start_slots
from jupyter_agent.runtime.paths import agent_data_dir
from jupyter_agent.runtime.start_backoff import StartBackoff, start_error

__all__ = ["AgentKernelHandle", "AppHost", "KernelPool"]

log = logging.getLogger(__name__)


class KernelPool(LoggingConfigurable):
    """Warm agent kernels, one per run; a run's kernel is never reused.

    ``kernel_manager`` is the server's (multi) kernel manager; ``base_env`` is the
    environment the kernel's is filtered from (default: the server's ``os.environ``);
    ``root_dir`` the server's root (default: the current dir), ``data_dir`` the agent's
    data dir (kernel dirs live under it), ``server_runtime_dir`` the server's runtime dir
    (hidden in a sandbox, like the data dir and the folders or files of ``hidden``: the
    server's config dirs, a database file elsewhere). The settings are traits, given as
    keyword arguments or through ``config`` / ``parent``. Call :meth:`check` at server
    start: it refuses a sandbox that cannot work (``SandboxUnavailable``).
    """

    size = Int(
        2,
        min=0,
        help="Number of warm agent kernels kept ready for new runs (0: start on demand).",
    ).tag(config=True)

    pool_max = Int(
        min=0,
        help=(
            "Most warm agent kernels the pool keeps after a burst (runs finding the pool "
            "empty grow it by one each, up to this), until pool_idle_s pass without a run "
            "taking one. At least size; default max(size, 4), or 0 when size is 0."
        ),
    ).tag(config=True)

    @default("pool_max")
    def _default_pool_max(self) -> int:
        return max(self.size, 4) if self.size else 0

    pool_idle_s = Float(
        60.0,
        min=0.0,
        help="Seconds without a run taking a kernel after which a grown pool shrinks to size.",
    ).tag(config=True)

    kernel_name = Unicode("jupyter-agent", help="The kernelspec of agent kernels.").tag(config=True)
    python = Unicode(
        "",
        help="The Python agent kernels run under: '' (the server's), a python path, "
        "'kernelspec:NAME' or 'auto' (the viewed notebook's kernel's, if fit): docs/notebook.md",
    ).tag(config=True)

    env_keep = List(
        Unicode(),
        default_value=[],
        help="Names of environment variables let through the agent kernel's environment "
        "filter (which removes names containing KEY, TOKEN, SECRET, PASSWORD or "
        "CREDENTIAL, JUPYTER_TOKEN, SSH_AUTH_SOCK, AWS_*, AZURE_*, "
        "GOOGLE_APPLICATION_CREDENTIALS and URLs with a user:password part).",
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

    start_delay_s = Float(
        1.0,
        min=0.0,
        help=(
            "Seconds after the agent's start before the pool fills (not during the server's "
            "start and first requests); a run needing a kernel sooner starts its own."
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
        hidden: Sequence[str] = (),
        remote: RemoteKernels | None = None,
        **traits: Any,
    ) -> None:
        super().__init__(**traits)
        if self.pool_max < self.size:
            raise TraitError(
                f"KernelPool.pool_max ({self.pool_max}) is below KernelPool.size "
                f"({self.size}): the most warm kernels cannot be fewer than the usual "
                "number; raise pool_max or lower size"
            )
        self._km = kernel_manager
        self._base_env = base_env
        self._root_dir = os.path.abspath(root_dir or os.getcwd())
        self._data_dir = data_dir or agent_data_dir()
        self._sandbox: Sandbox = parse_sandbox(self.kernel_sandbox)
        self._starts = KernelStarts(
            kernel_manager,
            root_dir=self._root_dir,
            data_dir=self._data_dir,
            server_runtime_dir=server_runtime_dir or jupyter_runtime_dir(),
            hidden=hidden,
            sandbox=self._sandbox,
            remote=remote,
        )
        self._remote = remote
        self._base = self._starts.base
        self._places = self._starts.places
        # None until check(): whether the kernelspec uses the agent's provisioner
        self._planned: bool | None = None
        self._warm: list[AgentKernelHandle] = []
        self._waiters: Waiters[AgentKernelHandle] = Waiters()
        self._demand = Demand(self.size, self.pool_max, self.pool_idle_s)
        # Kernel starts in progress (never cancelled half way), at most one per core
        self._starting: set[asyncio.Task[None]] = set()
        self._slots = start_slots()
        # warm refills after failed starts (never a spin); said in the server's log
        self._backoff = StartBackoff(logger=self.log)
        self._stopped = False
        self.env_drop: set[str] = set()
        """Names credential references (``env:NAME``) point at: kept out of the kernel."""
        self._keepalive_task: asyncio.Task[None] | None = None
        # Until the first warm start: the warm fill yields to runs waiting for a kernel.
        self._first_fill = True
        self._running = False
        self._closing: set[asyncio.Task[None]] = set()
        self._cwd_warned = False  # a gateway kernel that could not chdir: said once

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

    @property
    def starts(self) -> KernelStarts:
        """How this pool starts kernels (their tags, what a sandbox hides): a program
        check's process is started alike (:mod:`~jupyter_agent.programs.check_process`)."""
        return self._starts

    def check(self) -> None:
        """Refuse a sandbox that cannot work here, or a kernelspec that cannot carry it.

        Blocking (a trial bwrap run, a kernelspec read): at server start, or in a thread.
        Raises :class:`SandboxUnavailable` naming the trait and the fix (see
        :meth:`KernelStarts.plan <jupyter_agent.runtime.kernels.starts.KernelStarts.plan>`).
        """
        self._planned = self._starts.plan(self.kernel_name)

    @property
    def warm_target(self) -> int:
        """How many kernels the pool keeps warm now: ``size``, more after a burst."""
        return self._demand.target

    def counts(self) -> dict[str, int]:
        """``{warm, starting, in_use}``: the pool's kernels ready for a run, starting, and
        held by runs (or shutting down). No I/O."""
        warm, known = len(self._warm), len(self._starts.handles)
        return {"warm": warm, "starting": len(self._starting), "in_use": max(known - warm, 0)}

    async def start(self) -> None:
        """End what a crashed earlier run of this server left, then start filling the pool
        in the background and keeping its kernels fresh (once). The first warm fill yields
        to runs already waiting for a kernel: their starts go first."""
        if self._running or self._stopped:
            return
        await asyncio.to_thread(self._starts.reap_leftovers)
        self._running = True
        self._kick_fill()
        self._keepalive_task = asyncio.create_task(self._keepalive())

    def _kick_fill(self, *, warm: bool = True) -> None:
        """Start kernels for the waiting acquires and (``warm``) up to the warm target.

        At most one start per core runs; a finished start kicks again, so the pool refills
        several kernels at once and waiters are served first. Waiters' starts begin at
        once; warm refills after a pause in acquires (a burst's runs go first:
        :meth:`~jupyter_agent.runtime.kernels.growth.Demand.refill_due`).
        """
        want = len(self._waiters)
        now = time.monotonic()
        due = self._demand.refill_due(
            now, warm=len(self._warm), interval_s=self.liveness_interval_s
        )
        if self._stopped:
            return  # nothing starts after stop(): a start now would outlive the pool
        # The first fill yields to the runs that came before it (their starts go first).
        yielding = self._first_fill and want > 0
        if warm and self._running and due and self._backoff.ready(now) and not yielding:
            self._first_fill = False
            self._demand.refilling()
            want += max(0, self._demand.target - len(self._warm))
        while len(self._starting) < min(want, self._slots):
            task = asyncio.create_task(self._start_kernel())
            self._starting.add(task)
            task.add_done_callback(self._started)

    def _started(self, task: asyncio.Task[None]) -> None:
        self._starting.discard(task)
        if not task.cancelled():
            self._kick_fill()

    async def _start_kernel(self) -> None:
        try:
            if self._planned is None:
                await asyncio.to_thread(self.check)
            assert self._planned is not None
            handle = await self._starts.start(
                kernel_name=self.kernel_name,
                env=self.kernel_env(),
                planned=self._planned,
                liveness_interval_s=self.liveness_interval_s,
            )
        except Exception as exc:
            self._backoff.failed(exc, time.monotonic())
            # The run waiting longest gets the error, as a cold start of its own would.
            self._waiters.fail(start_error(exc))
            return
        self._backoff.succeeded()
        self._deliver(handle)

    def _deliver(self, handle: AgentKernelHandle) -> None:
        """A fresh kernel: to the oldest waiter, else warm (or shut down if not needed)."""
        if self._waiters.give(handle):
            return
        if self._running and len(self._warm) < self._demand.target:
            self._warm.append(handle)
        else:
            self._shutdown_soon(handle)

    async def _keepalive(self) -> None:
        last_touch = 0.0
        while self._running:
            await asyncio.sleep(self.liveness_interval_s)
            touch = time.monotonic() - last_touch >= KEEPALIVE_INTERVALS * self.liveness_interval_s
            try:
                await sweep_warm(
                    self._warm, kernel_manager=self._km, refresh=touch, shutdown=self._shutdown
                )
            except Exception:  # a failed tick must not end refills and shrinking for good
                log.warning("the kernel pool's keepalive tick failed", exc_info=True)
            if touch:
                last_touch = time.monotonic()
            if self._demand.shrink(time.monotonic(), waiting=len(self._waiters)):
                target = self._demand.target
                extra, self._warm = self._warm[target:], self._warm[:target]
                for handle in extra:
                    self._shutdown_soon(handle)
            self._kick_fill()

    async def acquire(self, *, cwd: str | None, python: str | None = None) -> AgentKernelHandle:
        """A warm kernel (else the first that becomes ready), moved to ``cwd``; with
        ``python`` (another environment), one started for the call under that interpreter.

        With none warm the call waits in line: the first kernel to finish starting goes to
        the oldest waiter, and the wait grows the pool (up to ``pool_max``). A failed start
        raises here. The warm refill starts at a liveness tick once acquires paused for one
        interval, not now: launching a kernel blocks the event loop for a few ms and loads
        a core for a second, which would land on the run's first cell (and a burst's).
        """
        handle = await (self._take() if python is None else self._start_in(python))
        touch_kernel(self._km, handle.kernel_id)
        if cwd is not None and handle.cwd != os.path.abspath(cwd):
            try:
                await handle.chdir(cwd)
            except KernelError:
                if not handle.remote:
                    await self.discard(handle)
                    raise
                # The gateway's host need not have this server's folders.
                if not self._cwd_warned:
                    self._cwd_warned = True
                    log.warning(
                        "a gateway kernel cannot move to this server's folder %s: "
                        "it stays in its own working dir %s",
                        cwd,
                        handle.cwd,
                    )
            except BaseException:
                await self.discard(handle)
                raise
        return handle

    async def _start_in(self, python: str) -> AgentKernelHandle:
        if self._planned is None:
            await asyncio.to_thread(self.check)
        return await self._starts.start(
            kernel_name=self.kernel_name, env=self.kernel_env(), planned=bool(self._planned),
            liveness_interval_s=self.liveness_interval_s, python=python,
        )  # fmt: skip

    async def _take(self) -> AgentKernelHandle:
        if self._stopped:
            raise KernelError("the kernel pool stopped")
        while self._warm:
            candidate = self._warm.pop(0)
            try:
                alive = await candidate.is_alive()
            except asyncio.CancelledError:
                self._warm.insert(0, candidate)  # a run cancelled while taking it
                raise
            if alive:
                self._demand.acquired(time.monotonic(), waited=False)
                return candidate
            await self._shutdown(candidate)
        self._demand.acquired(time.monotonic(), waited=True)
        future = self._waiters.add()
        self._kick_fill(warm=False)
        try:
            return await future
        except asyncio.CancelledError:
            # Cancelled after a kernel was handed over: it is unused, give it on.
            if future.done() and not future.cancelled() and future.exception() is None:
                self._deliver(future.result())
            raise

    async def discard(self, handle: AgentKernelHandle) -> None:
        """Shut the run's kernel down."""
        await self._shutdown(handle)

    def discard_soon(self, handle: AgentKernelHandle) -> None:
        """Shut the run's kernel down in the background (a run need not wait for it);
        :meth:`stop` waits for these shutdowns, so no kernel outlives the pool."""
        self._shutdown_soon(handle)

    def _shutdown_soon(self, handle: AgentKernelHandle) -> None:
        task = asyncio.create_task(self._shutdown(handle))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _shutdown(self, handle: AgentKernelHandle) -> None:
        # What is due goes first: the run_end its run publishes right after the release
        # would wait behind the shutdown's synchronous part (channels, signals: ~1.7 ms).
        await asyncio.sleep(0)
        await self._starts.shutdown(handle)

    async def stop(self) -> None:
        """Stop filling and shut every kernel down (warm, starting, or still held by a run);
        runs still waiting for a kernel get :class:`KernelError`."""
        self._running = False
        self._stopped = True
        while self._waiters.fail(KernelError("the kernel pool stopped")):
            pass
        if self._keepalive_task is not None:
            self._keepalive_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._keepalive_task
        if self._starting:
            # Let kernel starts in progress finish (each is then shut down): cancelling
            # mid-start leaves a half-registered kernel in the manager.
            pending = asyncio.gather(*self._starting, return_exceptions=True)
            with contextlib.suppress(asyncio.CancelledError, asyncio.TimeoutError, Exception):
                await asyncio.wait_for(asyncio.shield(pending), 60)
        warm, self._warm = self._warm, []
        await asyncio.gather(*(self._shutdown(h) for h in warm), *self._closing)
        # Kernels runs still hold (a run not ended by now), then anything of this
        # instance's tag: a server stop leaves no process behind.
        await self._starts.end_all()
