"""The assembly of one server's agent: its parts, built from the admin's config, and their
life cycle.

:func:`assemble` builds :class:`Parts` from an :class:`AdminConfig` (the ``JupyterAgent``
traits as one value) and the objects the Jupyter server lends (its store, kernel pool,
transport, contents manager): the event bus, the mailbox, the user's settings and the
effective tiers, contents access, the notebook writer, the demo model, the run manager,
the history scheduler (chunk summaries, made in the background after each turn), the
embedder (facts' vectors through the optional ``embed`` tier) and the agents the server
hosts (:mod:`.settings.agents`: each run answers as its chat's agent, with that agent's
spaces and tiers), and over them the services, one per concern, each built once
(:class:`~.services.Services`; evals and deploys at their first use). Nothing here answers
a request: the services do.

Construction is synchronous (the server's loop may not run yet); :meth:`Parts.start`
(idempotent, shielded; every service awaits it) logs the admin's warnings and which tiers
are ready, recovers runs left running and resumes the summaries left pending, and
schedules the warm pool's start (``KernelPool.start_delay_s`` later, not awaited);
:meth:`Parts.stop` (idempotent) ends everything, in the order that loses nothing: embeddings,
summaries and names, evals, runs, MCP servers (:mod:`.mcp.hub`), pool, transport, store, demo.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from traitlets.config import Config

from jupyter_agent import programs
from jupyter_agent.llm.embeddings import EMBED_TIER
from jupyter_agent.llm.transport import Transport
from jupyter_agent.programs.registry import ProgramRegistry
from jupyter_agent.runtime import evals
from jupyter_agent.runtime.admin import AdminConfig
from jupyter_agent.runtime.complete.wiring import completion_service
from jupyter_agent.runtime.events import EventBus
from jupyter_agent.runtime.history.jobs import HistoryScheduler
from jupyter_agent.runtime.kernels.cell_service import CellService
from jupyter_agent.runtime.kernels.pool import KernelPool
from jupyter_agent.runtime.mcp.config import parse_servers
from jupyter_agent.runtime.mcp.hub import McpHub
from jupyter_agent.runtime.memory.embedder import Embedder
from jupyter_agent.runtime.memory.service import MemoryService
from jupyter_agent.runtime.notebook.app import NotebookReader
from jupyter_agent.runtime.notebook.contents import Contents
from jupyter_agent.runtime.notebook.exports import NotebookWriter
from jupyter_agent.runtime.notebook.live_docs import LiveDocs
from jupyter_agent.runtime.notebook.person_kernels import PersonKernels
from jupyter_agent.runtime.notebook.person_variables import PersonVariables
from jupyter_agent.runtime.notebook.proposals import ProposalService
from jupyter_agent.runtime.paths import default_db_url
from jupyter_agent.runtime.runs.approvals import ApprovalWaits
from jupyter_agent.runtime.runs.chat_service import ChatService
from jupyter_agent.runtime.runs.mailbox import Mailbox
from jupyter_agent.runtime.runs.manager import RunManager
from jupyter_agent.runtime.runs.parts import RunServices, ScrubbingPool
from jupyter_agent.runtime.runs.run_configs import RunConfigs
from jupyter_agent.runtime.runs.run_service import RunService
from jupyter_agent.runtime.secret_guard import ScrubbingTransport
from jupyter_agent.runtime.secrets import Scrubber, known_secrets, url_password
from jupyter_agent.runtime.services import Services
from jupyter_agent.runtime.settings.agent_settings import AgentSettings
from jupyter_agent.runtime.settings.agents import AgentRegistry
from jupyter_agent.runtime.settings.demo import DemoModel
from jupyter_agent.runtime.settings.overrides import OwnerSettings
from jupyter_agent.runtime.settings.service import SettingsService
from jupyter_agent.runtime.settings.tiers import TierSettings
from jupyter_agent.store.repo import Store

__all__ = ["AdminConfig", "Parts", "assemble"]

log = logging.getLogger(__name__)


class Parts:
    """The parts of one server's agent (see the module docstring); build with
    :func:`assemble`."""

    def __init__(
        self,
        *,
        admin: AdminConfig,
        store: Store,
        pool: Any,
        transport: Any,
        data_dir: Path,
        root_dir: str,
        contents_manager: Any = None,
        environ: Mapping[str, str] | None = None,
        server_log: logging.Logger | None = None,
        config: Config | None = None,
        server_token: str | None = None,
        live_docs: LiveDocs | None = None,
        person_kernels: PersonKernels | None = None,
    ) -> None:
        self.admin = admin
        self.server_log = server_log or log
        self.store = store
        self.pool = pool
        self.transport = transport
        self.data_dir = Path(data_dir)
        self.root_dir = os.path.abspath(root_dir)
        self._environ = environ
        self.events = EventBus(config=config)  # c.EventBus.tail_bytes, max_bytes
        self.mailbox = Mailbox()
        self.user_settings = OwnerSettings(
            store, legacy_path=self.data_dir / "settings.json", legacy_owner=admin.server_owner
        )
        self.tier_settings = TierSettings(
            admin_tiers=admin.tiers, policy=admin.key_policy, user=self.user_settings,
            environ=lambda: self.environ, version=admin.version, profiles=admin.profiles,
        )  # fmt: skip
        self.contents = Contents(
            contents_manager, root_dir=self.root_dir, max_bytes=admin.max_attachment_bytes
        )
        self.notebooks = NotebookWriter(self.contents, admin.trace_dir)
        # The person's notebooks: open ones through their shared model (RTC), the others
        # through the contents manager; the run manager's notices tell runs.
        self.live_docs = live_docs or LiveDocs()
        self.proposals = ProposalService(
            store=store,
            contents=self.contents,
            events=self.events,
            live=self.live_docs,
            root_dir=self.root_dir,
        )
        self.demo = DemoModel()
        # The agents (trait and folders, read once), before the scrubber: their keys too.
        self.agents = AgentRegistry.build(
            admin.agents, data_dir=self.data_dir, policy=admin.key_policy
        )
        # Each agent's tiers and spaces for an owner, and the snapshot a run starts with.
        self.agent_settings = AgentSettings(
            agents=self.agents,
            tiers=self.tier_settings,
            data_dir=self.data_dir,
            root_dir=self.root_dir,
            environ=lambda: self.environ,
            version=admin.version,
        )
        self.run_configs = RunConfigs(
            agents=self.agent_settings,
            demo=self.demo,
            limits=lambda: self.manager,
            profiles=admin.profiles,
            approval=admin.approval,
        )
        self.run_config = self.run_configs.run_config
        self.history_config = self.run_configs.history_config
        # The MCP servers, before the scrubber: their references are secrets.
        self.mcp_servers, self.mcp_problems = parse_servers(admin.mcp_servers)
        self.scrubber = self.build_scrubber(server_token)
        self.events.clean = self.scrubber.clean_json  # no known secret in any event
        # Model calls refused when they would send a secret, answered scrubbed.
        transport = ScrubbingTransport(transport, self.scrubber)
        # Connected at the first catalogue a run asks for; stopped with the parts.
        self.mcp = McpHub(
            self.mcp_servers,
            problems=self.mcp_problems,
            environ=environ,
            scrubber=self.scrubber,
        )
        # Facts' vectors through the optional embed tier (each owner's effective one, read at
        # each use: a tier set from the browser applies at once); a no-op without one.
        self.embedder = Embedder(
            store=store,
            transport=transport,
            tier=lambda owner: self.tier_settings.ready_tiers(owner)[0].get(EMBED_TIER),
            scrubber=self.scrubber,
            owners=tuple({"", admin.server_owner}),
        )
        # Facts that outlive a chat (REST and the in-cell app): no known secret goes in.
        self.memory = MemoryService(
            store, self.scrubber, embedder=self.embedder.on_saved, vectors=self.embedder
        )
        # Deployed program versions: which one a run uses; deploys and rollbacks.
        self.programs = ProgramRegistry(store, cache_dir=self.data_dir / "programs")
        self.build_program_service = programs.service_builder(
            store, self.programs, pool, timeout_s=admin.program_check_timeout_s,
            clean=self.scrubber.clean,
        )  # fmt: skip
        self.approvals = ApprovalWaits()
        services = RunServices(
            programs=self.programs,
            transport=transport,
            pool=ScrubbingPool(pool, self.scrubber),
            scrubber=self.scrubber,
            store=store,
            mailbox=self.mailbox,
            events=self.events,
            root_dir=self.root_dir,
            embedder=self.embedder,
            memory=self.memory,
            agents=self.agents,
            # The in-cell notebook app: reads live documents or the contents manager.
            notebooks=NotebookReader(self.contents, live=self.live_docs),
            proposals=self.proposals,
            approvals=self.approvals,
            mcp=self.mcp,
            person_kernels=person_kernels,  # notebook.variables, fetch, run, ...
        )
        # Its traits (the run ceilings) read ``config`` (c.RunManager.max_cells, ...).
        self.manager = RunManager(
            services=services,
            run_config=self.run_config,
            runs_dir=self.data_dir / "runs",
            config=config,
        )
        # Summaries of closed chunks and chat names, kicked after each turn.
        self.history = HistoryScheduler(
            store=store,
            transport=transport,
            run_config=self.history_config,
            runs_dir=self.manager.runs_dir,
            events=self.events,
            programs=self.programs,
            name_chats=admin.name_chats,
        )
        services.after_turn = self.history.kick
        self.proposals.notify = self.manager.notify  # the outcome, at the next drain
        self._started: asyncio.Task[None] | None = None
        self._pool_task: asyncio.Future[None] | None = None
        self._stopped = False
        self.services = self._services(services.pool)

    def _services(self, pool: ScrubbingPool) -> Services:
        """The services over these parts, one per concern (each built once, here)."""
        settings = SettingsService(
            user=self.user_settings,
            tiers=self.tier_settings,
            agents=self.agent_settings,
            ceilings=lambda: self.manager.ceilings,
            history_status=self.history.status,
            kernels=getattr(self.pool, "counts", None),
        )
        runs = RunService(
            store=self.store,
            manager=self.manager,
            notebooks=self.notebooks,
            approvals=self.approvals,
            scrubber=self.scrubber,
            events=self.events,
            run_configs=self.run_configs,
        )
        chats = ChatService(
            store=self.store,
            manager=self.manager,
            mailbox=self.mailbox,
            events=self.events,
            contents=self.contents,
            notebooks=self.notebooks,
            proposals=self.proposals,
            scrubber=self.scrubber,
            agents=self.agents,
            know_owner=settings.know_owner,
            model_problem=self.run_configs.model_problem,
            reruns=runs.reruns,
        )
        variables = PersonVariables(
            getattr(self.manager.services, "person_kernels", None), root_dir=self.root_dir
        )
        # The MCP endpoint's run_cell: digest options only (the ceilings), every owner's.
        cells = CellService(
            pool, root_dir=self.root_dir, run_config=lambda: self.run_config(owner="")
        )
        return Services(
            chats=chats,
            runs=runs,
            memory=self.memory,
            proposals=self.proposals,
            make_programs=self.build_program_service,
            settings=settings,
            cells=cells,
            variables=variables,
            complete=completion_service(self, variables),
            make_evals=evals.builder(runs, self.notebooks, self.root_dir),
            start=self.start,
        )

    @property
    def environ(self) -> Mapping[str, str]:
        """The environment credential references resolve in (the server's)."""
        return os.environ if self._environ is None else self._environ

    def build_scrubber(self, server_token: str | None) -> Scrubber:
        """The scrubber of what agent kernels send: the values of every key reference the
        tiers and the key policy name, the server token, and the server environment's
        values the kernel's filter removes (see :func:`known_secrets`)."""
        # Any owner's tier names a reference of the key policy (validated on each PUT).
        tiers = list(self.admin.tiers.values())
        refs = [str(t["api_key_ref"]) for t in tiers if t and t.get("api_key_ref")]
        key_refs = [*refs, *self.agents.tier_refs(), *self.admin.key_policy.refs()]
        key_refs += [ref for server in self.mcp_servers for ref in server.refs()]
        if isinstance(getattr(self.pool, "env_drop", None), set):
            # A key's variable never reaches the kernel, even under a name no pattern of
            # the filter catches (a transformed key would pass the scrubber).
            self.pool.env_drop.update(
                r.removeprefix("env:") for r in key_refs if r.startswith("env:")
            )
        secrets = known_secrets(
            environ=self.environ,
            key_refs=key_refs,
            server_token=server_token,
            # What the pool lets through reaches the kernel anyway: not a secret to it.
            keep=getattr(self.pool, "env_keep", None) or self.admin.kernel_env_keep,
        )
        # The database's password, wherever the admin wrote the URL (a config file the
        # kernel can read when it is not sandboxed).
        password = url_password(self.admin.db_url)
        if password:
            secrets.setdefault(password, "database password")
        return Scrubber(secrets)

    # --- life cycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Recover runs left running (before any service call: each awaits this) and
        schedule the pool's start; idempotent (one start, shielded from a cancelled
        caller)."""
        started = self._started
        if started is None or (started.done() and started.exception() is not None):
            # A start that failed (a store unavailable at boot) is tried again by the next
            # caller, not kept failed until the server restarts.
            started = self._started = asyncio.ensure_future(self._start())
        await asyncio.shield(started)

    async def _start(self) -> None:
        for warning in (*self.admin.policy_warnings, *self.agents.warnings):
            self.server_log.warning("jupyter-agent: %s", warning)
        for problem in self.mcp_problems.values():  # the server runs; this one is left out
            self.server_log.warning("jupyter-agent: %s (this MCP server is not used)", problem)
        if self.mcp_servers:
            names = ", ".join(s.name for s in self.mcp_servers)
            self.server_log.info("jupyter-agent: MCP servers: %s", names)
        if len(self.agents) > 1:
            self.server_log.info("jupyter-agent: agents: %s", ", ".join(self.agents.names()))
        # The server's user's settings (a first read blocks), then once, in the server's log:
        # which tiers are ready, whether the demo runs ("" too: MCP cells, the embedder).
        for owner in {self.admin.server_owner, ""}:
            await asyncio.to_thread(self.user_settings.warm, owner)
        self.server_log.info("%s", self.tier_settings.readiness_line(self.admin.server_owner))
        # The warm pool fills after this start, in the background (_start_pool).
        self._pool_task = self._pool_task or asyncio.ensure_future(self._start_pool())
        recovered = await self.manager.recover()
        if recovered:
            log.info("jupyter-agent: interrupted runs recovered: %d", len(recovered))
        self.store.resume_indexing()  # turns an earlier process left unindexed (a thread)
        try:
            await self.history.resume()
        except Exception:  # summaries are not the server's start: they are retried at kicks
            log.exception("jupyter-agent: could not resume the pending summaries")
        self.embedder.kick()  # facts without a vector (saved before the embed tier, ...)

    async def _start_pool(self) -> None:
        """Start the warm pool ``KernelPool.start_delay_s`` after the agent's start: a
        kernel launch loads a core for a second, which the server's start and its first
        requests should not share. Not awaited by :meth:`start`; a run needing a kernel
        sooner starts its own, and the pool's first fill yields to it
        (:meth:`~jupyter_agent.runtime.kernels.pool.KernelPool.start`)."""
        await asyncio.sleep(float(getattr(self.pool, "start_delay_s", 0.0)))
        try:
            await self.pool.start()
        except Exception:  # runs still get kernels: each acquire starts one
            log.exception("jupyter-agent: the kernel pool could not start")

    async def stop(self) -> None:
        """Break every run, stop the pool, close the transport, the store and the demo."""
        if self._stopped:
            return
        self._stopped = True
        try:
            await self.embedder.stop()
            await self.history.stop()
            if (built := self.services.evals_built()) is not None:
                await built.stop()
            await self.services.runs.reruns.stop()
            await self.manager.shutdown()
        finally:
            try:
                if self._pool_task is not None:  # a pool start still to come: none
                    self._pool_task.cancel()
                    with contextlib.suppress(BaseException):
                        await self._pool_task
                await self.mcp.aclose()  # no MCP server process outlives the agent
                await self.pool.stop()
            finally:
                await self.transport.aclose()
                await asyncio.to_thread(self.store.close)  # it indexes what is left
                self.demo.stop()


def assemble(
    *,
    admin: AdminConfig,
    data_dir: Path,
    root_dir: str,
    kernel_manager: Any = None,
    contents_manager: Any = None,
    store: Store | None = None,
    pool: Any = None,
    transport: Any = None,
    environ: Mapping[str, str] | None = None,
    server_log: logging.Logger | None = None,
    config: Config | None = None,
    server_token: str | None = None,
    live_docs: LiveDocs | None = None,
    person_kernels: PersonKernels | None = None,
) -> Parts:
    """Build the parts of one server's agent (synchronously: nothing starts yet).

    ``store``, ``pool`` and ``transport`` are built from ``admin`` unless given (the pool
    needs the server's ``kernel_manager``). ``contents_manager`` is the server's (sync or
    async kind; None: no attachments and no notebook writes); ``environ`` the environment
    key references resolve in (default: the server's, read at each use); ``server_log``
    where the start-up lines go; ``config`` the traitlets config the parts read;
    ``server_token`` the Jupyter server's token (scrubbed from kernel output). Opening
    the store may raise :class:`~jupyter_agent.exceptions.StoreError`. ``live_docs``
    finds the open notebooks' shared models (default: none, every edit goes to the file);
    ``person_kernels`` the person's kernels (default: none, ``notebook.variables`` and its
    siblings fail clearly).
    """
    if pool is None:
        if kernel_manager is None:
            raise ValueError("assemble() needs the server's kernel_manager, or a pool")
        pool = KernelPool(kernel_manager, size=admin.pool_size, env_keep=admin.kernel_env_keep)
    if transport is None:
        transport = Transport(retry_after_cap_s=admin.retry_after_cap_s)
    if store is None:
        store = Store(admin.db_url or default_db_url())
    return Parts(
        admin=admin,
        store=store,
        pool=pool,
        transport=transport,
        data_dir=data_dir,
        root_dir=root_dir,
        contents_manager=contents_manager,
        environ=environ,
        server_log=server_log,
        config=config,
        server_token=server_token,
        live_docs=live_docs,
        person_kernels=person_kernels,
    )
