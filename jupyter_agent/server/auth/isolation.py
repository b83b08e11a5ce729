"""Isolation that matches the deployment: several owners need sandboxed agent kernels.

With more than one owner on a server (``JupyterAgent.owners`` resolving to ``identity``:
:func:`~jupyter_agent.server.auth.owners.owners_mode`, the rule every request uses too), one
person's agent code runs next to everyone's data. Unsandboxed (``KernelPool.kernel_sandbox
= 'none'``, or kernels on a gateway this server cannot sandbox) that code can read the
agent database, the server's environment and its runtime dir: every owner's chats,
memory and turns. :func:`check_isolation` refuses that combination at start
(:class:`OwnersNotIsolated`, a message naming the traits and the fixes) unless the admin
set ``JupyterAgent.allow_unsandboxed_owners = True``; then it returns the warning to log
at every start.

:func:`checked_pool` builds the app's kernel pool with everything a sandbox must hide
(:func:`sandbox_hidden`), checks the sandbox and the isolation, and stops the server
(``SystemExit``, which jupyter_server's extension manager does not catch: it catches
``Exception`` and would only log) with the message when either is refused.
"""

from __future__ import annotations

import os
from typing import Any, Final

from traitlets import TraitError
from traitlets.config import Config

from jupyter_agent.exceptions import StoreError
from jupyter_agent.runtime.kernels.pool import KernelPool
from jupyter_agent.runtime.kernels.sandbox import TRAIT as SANDBOX_TRAIT
from jupyter_agent.runtime.kernels.sandbox import Sandbox, SandboxUnavailable
from jupyter_agent.server.auth.owners import owners_mode
from jupyter_agent.server.gateway_channels import gateway_kernels
from jupyter_agent.store.engine import normalise_url

__all__ = [
    "ALLOW_HELP",
    "ALLOW_TRAIT",
    "OwnersNotIsolated",
    "agent_kernel_manager",
    "check_isolation",
    "checked_pool",
    "sandbox_hidden",
]

# SQLite's companions of a database file (TRUNCATE keeps the journal once written).
_SQLITE_COMPANIONS: Final = ("", "-journal", "-wal", "-shm")

#: The trait's full name, as messages give it.
ALLOW_TRAIT: Final = "JupyterAgent.allow_unsandboxed_owners"
#: The trait's help.
ALLOW_HELP: Final = (
    "Start with several owners (owners = 'identity', or 'auto' under JupyterHub or any "
    "non-token identity provider) although agent kernels are not sandboxed "
    "(KernelPool.kernel_sandbox = 'none', or kernels on a gateway): each owner's agent "
    "code can then read every owner's chats, memory and turns (the agent database, the "
    "server's environment and runtime dir). False (default): such a server refuses to "
    "start. True: it starts, with a warning at every start. Set it only when each "
    "person's server is their own (a Hub pod per user, with a database role per user: "
    "docs/jupyterhub.md) or the gateway isolates the kernels."
)


class OwnersNotIsolated(Exception):
    """Several owners, unsandboxed kernels, no ``allow_unsandboxed_owners``: the message
    names the traits and the fixes."""


def _why(sandbox: Sandbox, gateway_url: str | None) -> str:
    if gateway_url is not None:
        return (
            f"agent kernels run on the gateway at {gateway_url}, where this server cannot "
            "sandbox them"
        )
    return f"agent kernels are not sandboxed ({SANDBOX_TRAIT} = {str(sandbox)!r})"


def check_isolation(
    *,
    configured: str,
    resolved: str,
    provider: str,
    sandbox: Sandbox,
    gateway_url: str | None,
    allow: bool,
) -> str | None:
    """The warning to log (None: nothing to say); :class:`OwnersNotIsolated` to refuse.

    ``configured`` is ``JupyterAgent.owners``, ``resolved`` what it means here (``single``
    or ``identity``) under the identity ``provider`` (its class name, for the message);
    ``gateway_url`` is set when kernels run on a gateway (never sandboxed here).
    """
    if resolved != "identity" or (sandbox.kind != "none" and gateway_url is None):
        return None
    owners = f"JupyterAgent.owners = {configured!r}"
    if configured != resolved:
        owners += f" (resolved to {resolved!r} for the identity provider {provider})"
    risk = (
        f"{owners}: several people own agent objects on this server, but "
        f"{_why(sandbox, gateway_url)}, so one person's agent code can read every owner's "
        "chats, memory and turns (the agent database, the server's environment and "
        "runtime dir)"
    )
    if allow:
        return f"{risk}; started anyway because {ALLOW_TRAIT} = True"
    fix = (
        f"set {SANDBOX_TRAIT} = 'bwrap' (or 'user:NAME'; see docs/kernel-sandbox.md)"
        if gateway_url is None
        else "isolate the kernels on the gateway's side"
    )
    raise OwnersNotIsolated(
        f"{risk}. Fix: {fix}; or JupyterAgent.owners = 'single' when one person uses this "
        f"server; or, knowing that risk, {ALLOW_TRAIT} = True"
    )


def sandbox_hidden(db_url: str, config_dirs: list[str], config_file: str = "") -> list[str]:
    """What a sandbox hides besides the runtime and data dirs: the server's config dirs
    (``db_url`` may be written there, password included), the folder of an explicit
    ``config_file``, and a SQLite ``db_url``'s file and its companions wherever it is."""
    hidden = [d for d in config_dirs if d]
    if config_file:
        hidden.append(os.path.dirname(os.path.abspath(config_file)))
    try:
        url = normalise_url(db_url)
    except StoreError:  # the store refuses it with the message
        return hidden
    if url.drivername == "sqlite" and url.database:
        hidden += [url.database + suffix for suffix in _SQLITE_COMPANIONS]
    return hidden


def agent_kernel_manager(serverapp: Any, gateway: bool) -> Any:
    """The kernel manager the agent's kernels start in.

    On this machine: a second instance of the server's own kernel manager class (the same
    start, restart, interrupt and shutdown the server's kernels get, over the server's
    kernelspecs and runtime dir), so the agent's kernels are never the person's: not in
    ``GET /api/kernels``, JupyterLab's Running panel or its "Shut Down All" (which would
    break a running turn). The pool shuts them down at the extension's stop. On a gateway:
    the server's (the gateway's kernels are started, named and owned there).
    """
    server_km = serverapp.kernel_manager
    if gateway:
        return server_km
    return type(server_km)(
        parent=serverapp,
        log=serverapp.log,
        connection_dir=serverapp.runtime_dir,
        kernel_spec_manager=serverapp.kernel_spec_manager,
    )


def checked_pool(app: Any, config: Config) -> KernelPool:
    """The kernel pool of the extension ``app`` (in :func:`agent_kernel_manager`, with its
    ``serverapp``'s dirs and identity provider), sandbox and isolation checked:
    ``SystemExit`` with the message when either is refused; the warning of an allowed
    unisolated start logged."""
    serverapp = app.serverapp
    remote, provider = gateway_kernels(serverapp.kernel_manager), serverapp.identity_provider
    km = agent_kernel_manager(serverapp, remote is not None)
    app.agent_kernel_manager = None if remote is not None else km  # closed at the stop
    try:
        pool = KernelPool(
            km,
            parent=app,
            config=config,
            root_dir=serverapp.root_dir,
            data_dir=app.agent_dir,
            server_runtime_dir=serverapp.runtime_dir,
            hidden=sandbox_hidden(
                app.effective_db_url,
                list(serverapp.config_file_paths),
                str(serverapp.config_file or ""),
            ),
            remote=remote,
        )
        if pool.sandbox.kind != "none" or remote is not None:
            pool.check()  # a sandbox that cannot work stops the server now
        # Else the kernelspec is read at the first kernel start, after the server's start
        # (reading it imports IPython: a quarter of a second).
        unisolated = check_isolation(
            configured=str(app.owners),
            resolved=owners_mode(str(app.owners), provider),
            provider=type(provider).__name__,
            sandbox=pool.sandbox,
            gateway_url=None if remote is None else remote.url,
            allow=bool(app.allow_unsandboxed_owners),
        )
    except (SandboxUnavailable, TraitError, OwnersNotIsolated) as exc:
        # Never a silent downgrade to unsandboxed kernels: the server does not start.
        serverapp.log.critical("jupyter-agent: %s", exc)
        raise SystemExit(f"jupyter-agent: {exc}") from None
    if unisolated is not None:  # at every start, while allow_unsandboxed_owners is set
        serverapp.log.warning("jupyter-agent: %s", unisolated)
    return pool
