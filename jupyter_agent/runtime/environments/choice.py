"""The interpreter of one run's agent kernel, from ``KernelPool.python`` and the run's view
(:mod:`.interpreters` says what each setting means).

:func:`run_interpreter` answers None for the server's own interpreter (the pool's warm
kernels), else an interpreter :func:`~.interpreters.probe` found able to host the agent
kernel. A fixed setting that cannot (a path or kernelspec without ipykernel, say) raises
:class:`~.interpreters.EnvironmentUnfit`, which the run's first cell shows; ``auto`` never
raises: a viewed notebook with no kernel, another owner's, a non-Python one or one whose
environment cannot host the agent kernel falls back to the server's interpreter (logged
once per interpreter).
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from jupyter_agent.exceptions import AgentError
from jupyter_agent.runtime.environments.interpreters import (
    AUTO,
    EnvironmentUnfit,
    is_server_python,
    make_shim,
    probe,
    setting_interpreter,
    spec_interpreter,
)

__all__ = ["run_interpreter"]

log = logging.getLogger(__name__)

_warned: set[str] = set()


def _probe_shim() -> Path:
    return make_shim(Path(tempfile.gettempdir()) / f"jupyter-agent-env-{os.getuid()}")


async def run_interpreter(
    setting: str,
    *,
    kernel_specs: Any,
    person_kernels: Any = None,
    view_path: str | None = None,
    owner: str = "",
) -> str | None:
    """The run's interpreter (None: the server's); see the module docstring."""
    if not setting.strip():
        return None
    shim = await asyncio.to_thread(_probe_shim)
    if setting.strip() != AUTO:
        python = await asyncio.to_thread(setting_interpreter, setting, kernel_specs)
        if is_server_python(python):
            return None
        assert python is not None
        return await asyncio.to_thread(probe, python, shim)
    if not view_path or person_kernels is None or kernel_specs is None:
        return None
    try:
        kernel = await person_kernels.find(view_path, owner=owner)
        python = await asyncio.to_thread(spec_interpreter, kernel_specs, kernel.name)
    except AgentError:
        return None  # no kernel, not the owner's, not Python: the server's interpreter
    if python is None or is_server_python(python):
        return None
    try:
        return await asyncio.to_thread(probe, python, shim)
    except EnvironmentUnfit as err:
        if python not in _warned:
            _warned.add(python)
            log.warning("KernelPool.python = auto: %s; the server's interpreter runs it", err)
        return None
