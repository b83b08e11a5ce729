"""The Jupyter Server extension app: configuration traits and route registration.

``JupyterAgent`` is the ``ExtensionApp`` named ``jupyter_agent``. Every setting has a
default and a ``help=`` (DESIGN section 3) and lives on the thing it configures: the app
holds the tiers, the database, the REST limits and the key policy
(``c.JupyterAgent.tiers``; its trait groups by concern, the models, the key policy, the
owners, programs, approvals and MCP servers, are in
:mod:`jupyter_agent.server.app_settings`); the kernel pool, the transport, the run manager
and the event bus hold theirs (``c.KernelPool.size = 3``,
``c.Transport.retry_after_cap_s = 30``, ``c.RunManager.max_cells = 30``,
``c.EventBus.tail_bytes = 16384``). One ``jupyter_server_config.py`` (or the command line:
``jupyter lab --RunManager.max_cells=30``) configures them all: the app passes its config
to the parts.
The old names of the moved settings (``c.JupyterAgent.pool_size``, ...) still work, with one
deprecation line in the log (see :mod:`jupyter_agent.server.config_aliases`).

Traits set by the admin are trusted; settings changed from the browser are limited by the
key policy: ``key_bindings`` (each key reference and the base URLs its key may be sent
to), ``allowed_base_urls`` and ``allow_loopback_base_urls`` (what a keyless tier may use),
and the legacy ``allowed_key_refs`` (see :mod:`jupyter_agent.runtime.settings.keypolicy`).

The app holds configuration and wires handlers; managers (the driver, the kernel pool,
the store) do the work and handlers only translate HTTP.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jupyter_server.extension.application import ExtensionApp
from traitlets import Bool, Float, Int, List, TraitError, Unicode, validate
from traitlets.config import Config

from jupyter_agent import __version__
from jupyter_agent.llm.transport import Transport
from jupyter_agent.runtime.assembly import AdminConfig, Parts, assemble
from jupyter_agent.runtime.events import EventBus
from jupyter_agent.runtime.kernels.pool import KernelPool
from jupyter_agent.runtime.notebook.exports import DEFAULT_FOLDER, check_folder
from jupyter_agent.runtime.notebook.live_docs import LiveDocs
from jupyter_agent.runtime.paths import agent_data_dir, default_db_url
from jupyter_agent.runtime.runs.manager import RunManager
from jupyter_agent.runtime.services import Services
from jupyter_agent.runtime.settings.keypolicy import KeyPolicy
from jupyter_agent.runtime.settings.profiles import admin_profiles
from jupyter_agent.runtime.settings.readiness import build_status
from jupyter_agent.runtime.warm import warm_first_turn
from jupyter_agent.server.activity import AgentActivity, close_kernel_manager
from jupyter_agent.server.app_settings import DEFAULT_TIERS, AppSettings
from jupyter_agent.server.auth.isolation import checked_pool
from jupyter_agent.server.auth.kernel_owners import person_kernels, watch_owners
from jupyter_agent.server.auth.owners import owners_mode
from jupyter_agent.server.base import one_line_refusals
from jupyter_agent.server.config_aliases import MOVED, deprecation_line, parts_config
from jupyter_agent.server.routes import default_handlers
from jupyter_agent.store.repo import Store

if TYPE_CHECKING:
    from jupyter_agent.server.mcp.endpoint import McpEndpoint

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_TIERS", "JupyterAgent"]


def _moved(old: str) -> str:
    section, new = MOVED[old]
    return (
        f"Deprecated: use {section}.{new} (this old name still works, and is ignored when "
        f"{section}.{new} is set)."
    )


class JupyterAgent(ExtensionApp, AppSettings):
    """The jupyter-agent server extension (configurable as ``c.JupyterAgent.<trait>``)."""

    name = "jupyter_agent"
    description = "An AI agent that lives inside Jupyter."
    load_other_extensions = True
    # The parts configured by the same config file (listed by --help-all and the
    # generated config file).
    classes = [*ExtensionApp.classes, KernelPool, Transport, RunManager, EventBus]  # noqa: RUF012

    db_url = Unicode(
        "",
        help=(
            "SQLAlchemy URL of the agent database (chats, turns, runs). Empty means the "
            "SQLite file {jupyter_data_dir}/jupyter_agent/agent.sqlite; a "
            "postgresql+psycopg:// URL uses PostgreSQL."
        ),
    ).tag(config=True)

    freeze_start_heap = Bool(
        True,
        help=(
            "Move the objects the server's start made (modules, classes, config: about "
            "250,000) out of the garbage collector's reach when the agent loads "
            "(gc.freeze(), once per process). The start then pays no full collection over "
            "them (two, about 0.1 s each here), nor does any full collection later, which "
            "pauses every request. It is process-wide: a reference cycle among those objects "
            "that becomes garbage later is never freed, and gc.get_objects() and "
            "gc.get_referrers() (objgraph, pympler) no longer list them. False leaves the "
            "collector as it is."
        ),
    ).tag(config=True)

    # The old names of settings that moved onto the parts (server/config_aliases.py):
    # still working, listed in --help-all as deprecated, logged once when used.
    pool_size = Int(2, help=_moved("pool_size")).tag(config=True)

    cell_timeout_s = Float(120.0, help=_moved("cell_timeout_s")).tag(config=True)

    max_model_calls = Int(40, help=_moved("max_model_calls")).tag(config=True)

    max_cells = Int(60, help=_moved("max_cells")).tag(config=True)

    max_wall_s = Float(900.0, help=_moved("max_wall_s")).tag(config=True)

    max_cost_usd = Float(2.0, help=_moved("max_cost_usd")).tag(config=True)

    model_deadline_s = Float(300.0, help=_moved("model_deadline_s")).tag(config=True)

    retry_after_cap_s = Float(60.0, help=_moved("retry_after_cap_s")).tag(config=True)

    bash_enabled = Bool(True, help=_moved("bash_enabled")).tag(config=True)

    kernel_env_keep = List(Unicode(), default_value=[], help=_moved("kernel_env_keep")).tag(
        config=True
    )

    max_body_bytes = Int(
        10 * 1024 * 1024,
        help="Largest request body in bytes the agent's REST API accepts (larger: 413).",
    ).tag(config=True)

    trace_dir = Unicode(
        DEFAULT_FOLDER,
        help=(
            "Folder (a contents path, relative to the server's root; '' is the root) where "
            "'Open trace as notebook' and 'Export chat' write their notebooks, named from "
            "the chat's title (name.ipynb, name-2.ipynb, ...: an existing file is never "
            "replaced). Hidden folders and '..' are refused."
        ),
    ).tag(config=True)

    @validate("trace_dir")
    def _validate_trace_dir(self, proposal: Mapping[str, Any]) -> str:
        """A clean contents path inside the root, not hidden."""
        try:
            return check_folder(str(proposal["value"]))
        except ValueError as exc:
            raise TraitError(f"JupyterAgent.trace_dir: {exc}") from None

    @validate("pool_size", "max_model_calls", "max_cells", "max_body_bytes")
    def _validate_non_negative_int(self, proposal: Mapping[str, Any]) -> int:
        """Counts and sizes cannot be negative."""
        value = int(proposal["value"])
        if value < 0:
            raise TraitError(f"JupyterAgent.{proposal['trait'].name} must be >= 0, not {value}")
        return value

    @validate(
        "cell_timeout_s", "max_wall_s", "max_cost_usd", "model_deadline_s", "retry_after_cap_s"
    )
    def _validate_positive_float(self, proposal: Mapping[str, Any]) -> float:
        """Durations and budgets must be positive."""
        value = float(proposal["value"])
        if not value > 0:
            raise TraitError(f"JupyterAgent.{proposal['trait'].name} must be > 0, not {value}")
        return value

    @property
    def agent_dir(self) -> Path:
        """The agent's folder: ``{jupyter_data_dir}/jupyter_agent`` (not created here)."""
        return agent_data_dir()

    @property
    def effective_db_url(self) -> str:
        """``db_url``, or the default SQLite file's URL when it is empty."""
        return self.db_url or default_db_url()

    parts: Parts | None = None
    """The agent's parts (built in ``initialize_settings``; None if they could not be)."""

    services: Services | None = None
    """The parts' services, one per concern, that the handlers call (None without parts)."""

    _mcp_endpoint: McpEndpoint | None = None
    _mcp_open = False  # the parts are built: the endpoint may be made
    _mcp_stopped = False
    #: The agent's own kernel manager (None on a gateway): set by ``checked_pool``.
    agent_kernel_manager: Any = None
    #: The person's kernels (``notebook.variables``, ...): set with the parts.
    _person_kernels: Any = None

    @property
    def mcp_endpoint(self) -> McpEndpoint | None:
        """``agent/mcp``'s endpoint, made (importing the ``mcp`` SDK) at its first request,
        started then, stopped with the extension; None before the parts or after the stop."""
        if self._mcp_endpoint is None and self._mcp_open and not self._mcp_stopped:
            from jupyter_agent.server.mcp.endpoint import McpEndpoint

            self._mcp_endpoint = McpEndpoint(lambda: self.services, version=__version__)
        return self._mcp_endpoint

    async def status(self, *, owner: str) -> dict[str, Any]:
        """The answer of ``GET agent/status`` for ``owner`` (no key values): the admin's
        tiers overlaid by the owner's settings (those the key policy refuses are not
        ready); the admin's alone when the services could not be built."""
        if self.services is None:
            return build_status(self.tiers, os.environ, __version__)
        status = await self.services.settings.status(owner=owner)
        return {**status, "usage": {"complete": self.services.complete.usage(owner)}}

    def key_policy(self) -> tuple[KeyPolicy, list[str]]:
        """The key policy of the traits, and the warnings to log about them."""
        return KeyPolicy.from_traits(
            key_bindings=self.key_bindings,
            allowed_key_refs=self.allowed_key_refs,
            allowed_base_urls=self.allowed_base_urls,
            allow_loopback=self.allow_loopback_base_urls,
            allowed_models=self.allowed_models,
        )

    def admin_config(self) -> AdminConfig:
        """The traits the service reads, as one value."""
        policy, warnings = self.key_policy()
        return AdminConfig(
            tiers={name: dict(tier) for name, tier in self.tiers.items()},
            key_policy=policy,
            policy_warnings=tuple(warnings),
            max_attachment_bytes=self.max_body_bytes,
            complete_rate=self.complete_rate,
            version=__version__,
            trace_dir=self.trace_dir,
            db_url=self.effective_db_url,
            profiles=admin_profiles(self.profiles),
            agents={str(name): entry for name, entry in self.agents.items()},
            approval=str(self.approval),
            mcp_servers={str(name): entry for name, entry in self.mcp_servers.items()},
            server_owner=self.server_owner(),
            program_check_timeout_s=self.program_check_timeout_s,
            name_chats=bool(self.name_chats),
        )

    def server_owner(self) -> str:
        """The owner of the server's own user: ``""`` in single-user mode, else the Hub
        user the server was spawned for (``JUPYTERHUB_USER``; ``""`` outside a Hub)."""
        serverapp = getattr(self, "serverapp", None)
        provider = getattr(serverapp, "identity_provider", None)
        if owners_mode(str(self.owners), provider) == "single":
            return ""
        return os.environ.get("JUPYTERHUB_USER", "")

    def parts_config(self) -> tuple[Config, list[str]]:
        """The config the parts read (the app's, with the old names copied to the new
        ones unless those are set), and the old names in use (see ``config_aliases``)."""
        traits = self.traits()
        return parts_config(
            self.config,
            app_section=type(self).__name__,
            old_values={old: getattr(self, old) for old in MOVED},
            defaults={old: traits[old].default() for old in MOVED},
        )

    def initialize_settings(self) -> None:
        """Build the agent: its parts (store, kernel pool, transport, run manager,
        settings: :func:`~jupyter_agent.runtime.assembly.assemble`) and their services.

        The pool, the transport and the run manager read their traits from the app's
        config (``c.KernelPool.size``, ...). Nothing async happens here (the server's loop
        may not run yet): interrupted runs are recovered in
        ``_start_jupyter_server_extension`` (once the server listens), or at the first
        request, whichever comes first; the warm pool fills ``KernelPool.start_delay_s``
        after that, in the background. The MCP endpoint is built at its first request.
        """
        serverapp = self.serverapp
        assert serverapp is not None
        if self.freeze_start_heap:  # before the parts: the collections come while they build
            freeze_start_heap()
        config, old_names = self.parts_config()
        admin = self.admin_config()
        if old_names:  # logged once at start, with the key policy's warnings
            line = deprecation_line(type(self).__name__, old_names)
            admin = replace(admin, policy_warnings=(*admin.policy_warnings, line))
        pool = checked_pool(self, config)
        self._person_kernels = person_kernels(
            serverapp, owners=str(self.owners), fetch_max_bytes=self.fetch_max_bytes
        )
        parts = assemble(
            admin=admin,
            store=Store(self.effective_db_url),
            pool=pool,
            transport=Transport(parent=self, config=config),
            data_dir=self.agent_dir,
            root_dir=serverapp.root_dir,
            kernel_manager=serverapp.kernel_manager,
            contents_manager=serverapp.contents_manager,
            server_log=serverapp.log,
            config=config,
            server_token=server_token(serverapp),
            live_docs=LiveDocs(lambda: collaboration_app(serverapp)),
            person_kernels=self._person_kernels,
        )
        self.parts, self.services = parts, parts.services
        self._mcp_open = True

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        """Recover runs left running once the loop runs (the server listens already); the
        pool's start is scheduled, not awaited."""
        # In a thread beside the start, what a first turn would otherwise pay on the loop:
        # the kernel's data packages' metadata (the prompt names them), httpx, the TLS
        # context, the stemmer, the codecs of a turn's types (see runtime.warm).
        warming = asyncio.ensure_future(asyncio.to_thread(warm_first_turn))
        warming.add_done_callback(_log_failure)
        self._activity.start(getattr(serverapp, "web_app", None))
        if self.parts is not None:
            await self.parts.start()
        # agent/mcp starts at its first request: the mcp SDK is not loaded before.

    async def stop_extension(self) -> None:
        """Break the runs, stop the pool, close the transport, the store and the demo."""
        self._mcp_stopped = True
        self._activity.stop()
        if self._mcp_endpoint is not None:  # its sessions first: their waits end
            await self._mcp_endpoint.stop()
        if self.parts is not None:
            await self.parts.stop()
        close_kernel_manager(self.agent_kernel_manager)  # its kernels are down by now

    def current_activity(self) -> bool:
        """True while an agent turn goes (Jupyter's idle shutdown waits for it)."""
        return self._activity.busy()

    @property
    def _activity(self) -> AgentActivity:
        if self.__dict__.get("_agent_activity") is None:
            self.__dict__["_agent_activity"] = AgentActivity(lambda: self.parts)
        activity: AgentActivity = self.__dict__["_agent_activity"]
        return activity

    def initialize_handlers(self) -> None:
        """Register the REST routes under ``{base_url}agent/``; a refused agent request
        is logged as one line (:func:`~jupyter_agent.server.base.one_line_refusals`); with
        several owners, who starts which session and kernel is recorded
        (:func:`~jupyter_agent.server.auth.kernel_owners.watch_owners`)."""
        self.handlers.extend(default_handlers)
        web_app = getattr(self.serverapp, "web_app", None)
        if web_app is not None:
            settings = web_app.settings
            settings["log_function"] = one_line_refusals(settings.get("log_function"))
            owners = getattr(self._person_kernels, "owners", None)
            if owners is not None:
                watch_owners(web_app, owners)


_FROZEN = False


def freeze_start_heap() -> bool:
    """``gc.freeze()`` the first time it is called in this process (True then): later
    calls, from other servers of one process (tests), would freeze their own garbage too.

    Why: a start builds about 250,000 tracked objects that live as long as the server
    (jupyter_server's and every extension's modules, classes and config; the agent's
    import adds 40,000). Each full collection walks all of them: about 0.1 s on a slow
    machine, twice during a start, and at every full collection after it, on the server's
    loop. Frozen, a full collection walks only what was made since (about 5 ms)."""
    global _FROZEN
    if _FROZEN:
        return False
    _FROZEN = True
    gc.freeze()
    return True


def collaboration_app(serverapp: Any) -> Any:
    """The running real-time collaboration extension (``jupyter_server_ydoc``'s
    ``YDocExtension``: its ``get_document`` answers an open notebook's shared model), or
    None when it is not installed or not enabled."""
    manager = getattr(serverapp, "extension_manager", None)
    if manager is None:
        return None
    try:
        apps = manager.extension_apps.get("jupyter_server_ydoc") or ()
    except Exception:  # an extension manager of another shape: no live documents
        return None
    return next((app for app in apps if hasattr(app, "get_document")), None)


def server_token(serverapp: Any) -> str | None:
    """The Jupyter server's token (scrubbed from agent kernels' output), None when unset."""
    provider = getattr(serverapp, "identity_provider", None)
    token = getattr(provider, "token", None) or getattr(serverapp, "token", None)
    return token if isinstance(token, str) and token else None


main = launch_new_instance = JupyterAgent.launch_instance


if __name__ == "__main__":  # python -m jupyter_agent.server.app --help-all
    main()  # type: ignore[no-untyped-call]


def _log_failure(task: asyncio.Future[None]) -> None:
    """Log what a background start task raised (never an unretrieved task error)."""
    if not task.cancelled() and task.exception() is not None:
        log.warning("jupyter-agent: reading the kernel's packages failed: %s", task.exception())
