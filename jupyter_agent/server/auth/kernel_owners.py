"""The person's kernels as the server lends them to the agent: :func:`person_kernels` builds
:class:`~jupyter_agent.runtime.notebook.person_kernels.PersonKernels` over the server's
own kernel manager, session manager and kernelspecs.

With several owners on one server (``JupyterAgent.owners`` resolving to ``identity``),
Jupyter records no owner of a session or kernel, so this module watches the server's
request log (tornado's ``log_function``, called once per finished request with its
handler): a ``201`` answer to ``POST /api/sessions`` or ``POST /api/kernels`` names the
new object in its ``Location`` header, and the request's identity is its owner
(:class:`~jupyter_agent.runtime.notebook.person_kernels.KernelOwners`). A kernel started
before the extension loaded, or by anyone else, is nobody's the agent may look at. With
one owner every kernel is the person's and nothing is watched.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from typing import Any, Final

from jupyter_agent.runtime.notebook.person_kernels import KernelOwners, PersonKernels
from jupyter_agent.server.auth.owners import owners_mode, username
from jupyter_agent.server.gateway_channels import gateway_kernels

__all__ = ["person_kernels", "watch_owners"]

_CREATED: Final = re.compile(r"/api/(sessions|kernels)/?$")


def _saw(owners: KernelOwners, handler: Any) -> None:
    request = handler.request
    if request.method != "POST" or handler.get_status() != 201:
        return
    match = _CREATED.search(request.path)
    location = handler._headers.get("Location") if match else None
    owner = username(handler)
    if not match or not location or not owner:
        return
    kind = "session" if match.group(1) == "sessions" else "kernel"
    owners.saw(kind, str(location).rstrip("/").rsplit("/", 1)[-1], owner)


def watch_owners(web_app: Any, owners: KernelOwners) -> None:
    """Record the owners of the sessions and kernels created through ``web_app`` (before
    its request log line: the log function it had still runs)."""
    settings = web_app.settings
    previous: Callable[[Any], None] | None = settings.get("log_function")

    def log_function(handler: Any) -> None:
        with contextlib.suppress(Exception):  # never costs the request its log line
            _saw(owners, handler)
        if previous is not None:
            previous(handler)

    settings["log_function"] = log_function


def person_kernels(serverapp: Any, *, owners: str, fetch_max_bytes: int) -> PersonKernels | None:
    """The person's kernels of ``serverapp`` (None without a session manager);
    ``owners``: the ``JupyterAgent.owners`` trait."""
    sessions = getattr(serverapp, "session_manager", None)
    if sessions is None:
        return None
    table = None
    if owners_mode(owners, getattr(serverapp, "identity_provider", None)) != "single":
        table = KernelOwners()  # fed once the web app exists (:func:`watch_owners`)
    return PersonKernels(
        kernel_manager=serverapp.kernel_manager,
        session_manager=sessions,
        kernel_specs=serverapp.kernel_spec_manager,
        owners=table,
        gateway=gateway_kernels(serverapp.kernel_manager) is not None,
        fetch_max_bytes=fetch_max_bytes,
    )
