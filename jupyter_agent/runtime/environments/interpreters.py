"""Which Python a run's agent kernel runs under (``KernelPool.python``), and whether it can.

``KernelPool.python`` is one of:

- ``""`` (default): the server's own interpreter (the pool's warm kernels);
- a path to a ``python`` executable (``/opt/envs/geo/bin/python``);
- ``kernelspec:NAME``: the interpreter of that kernelspec's ``argv[0]``;
- ``auto``: per run, the interpreter of the kernel of the notebook in the person's view,
  when it is a Python that can host the agent kernel; else the server's (said in the log).

**What an environment needs** to host the agent kernel: ``ipykernel`` (6 or later) and
``pydantic`` (2.x), nothing else: the ``jupyter_agent`` package itself is lent to the kernel
through ``PYTHONPATH`` (:func:`make_shim`: a folder holding only a link to this package, so
none of the server's other packages shadow the environment's own numpy or pandas). Not
``jupyter_server``, not ``jupyterlab``. :func:`probe` runs the interpreter once (cached per
path, a few hundred ms, in a worker thread) importing exactly what the kernel imports, and
raises :class:`EnvironmentUnfit` naming what is missing and how to add it.

The sandbox, the environment filter, the reaper and the pool's bookkeeping are the same in
any environment: only the interpreter of the launch command changes
(:mod:`jupyter_agent.runtime.kernels.provisioner`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Final

from jupyter_agent.exceptions import KernelError

__all__ = [
    "AUTO",
    "KERNELSPEC",
    "NEEDS",
    "EnvironmentUnfit",
    "make_shim",
    "is_server_python",
    "probe",
    "setting_interpreter",
    "spec_interpreter",
]

#: ``KernelPool.python``: per run, the viewed notebook's kernel's environment.
AUTO: Final = "auto"
#: ``KernelPool.python = "kernelspec:NAME"``.
KERNELSPEC: Final = "kernelspec:"
#: What an environment must have to host the agent kernel (import name, pip name).
NEEDS: Final = (("ipykernel", "ipykernel>=6"), ("pydantic", "pydantic>=2"))
_PROBE_TIMEOUT_S: Final = 60.0

_PROBE: Final = """
import importlib, json, sys
missing = []
for name in {names!r}:
    try:
        importlib.import_module(name)
    except Exception as exc:
        missing.append([name, type(exc).__name__ + ": " + str(exc)])
kernel = None
if not missing:
    try:
        import jupyter_agent.kernel.kernel
    except Exception as exc:
        kernel = type(exc).__name__ + ": " + str(exc)
print(json.dumps({{"executable": sys.executable, "missing": missing, "kernel": kernel,
                  "version": list(sys.version_info[:3])}}))
"""

#: This package's folder (``jupyter_agent/``), three levels above this module.
_PACKAGE: Final = Path(__file__).resolve().parents[2]

_probed: dict[str, str] = {}
_lock = threading.Lock()


class EnvironmentUnfit(KernelError):
    """An interpreter cannot host the agent kernel (the message says what to install)."""


def make_shim(folder: Path) -> Path:
    """A folder holding only a link named ``jupyter_agent`` to this package (made in
    ``folder``, idempotent; a link to another copy of the package is replaced): what
    ``PYTHONPATH`` gives another environment's kernel."""
    shim = folder / "pkg"
    shim.mkdir(parents=True, exist_ok=True)
    link = shim / "jupyter_agent"
    # A link left by another checkout or an older install would lend the wrong code:
    # replaced (atomically, by rename) unless it already names this package.
    if os.path.realpath(link) != str(_PACKAGE):
        fresh = shim / f".jupyter_agent-{os.getpid()}-{threading.get_ident()}"
        fresh.unlink(missing_ok=True)
        fresh.symlink_to(_PACKAGE, target_is_directory=True)
        os.replace(fresh, link)
    return shim


def probe(python: str, shim: Path) -> str:
    """The interpreter's ``sys.executable`` once it is known to host the agent kernel
    (blocking: call it in a thread; cached per path); :class:`EnvironmentUnfit` naming
    what is missing otherwise."""
    with _lock:
        if python in _probed:
            return _probed[python]
    code = _PROBE.format(names=[name for name, _ in NEEDS])
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONPATH"] = str(shim)
    try:
        done = subprocess.run(
            [python, "-c", code], capture_output=True, text=True, env=env,
            timeout=_PROBE_TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvironmentUnfit(f"the agent kernel cannot run under {python}: {exc}") from None
    try:
        found: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        tail = (done.stderr or done.stdout).strip()[-300:]
        raise EnvironmentUnfit(
            f"{python} is not a Python the agent kernel can use: {tail}"
        ) from None
    if found["missing"]:
        names = [name for name, _ in found["missing"]]
        wanted = " ".join(pip for name, pip in NEEDS if name in names)
        raise EnvironmentUnfit(
            f"the environment of {python} lacks {', '.join(names)}, which the agent kernel "
            f"needs; install with: {python} -m pip install '{wanted}'"
        )
    if found["kernel"]:
        raise EnvironmentUnfit(
            f"the agent kernel does not load under {python} ({found['kernel']}); it needs "
            f"Python >= 3.10 with {', '.join(pip for _, pip in NEEDS)}"
        )
    executable = str(found["executable"])
    with _lock:
        _probed[python] = executable
    return executable


def spec_interpreter(kernel_specs: Any, name: str) -> str | None:
    """The interpreter of kernelspec ``name`` (its ``argv[0]`` when that is a Python), or
    None for a spec that is not a Python kernel (blocking: reads the spec)."""
    spec = kernel_specs.get_kernel_spec(name)
    argv = list(getattr(spec, "argv", None) or [])
    language = str(getattr(spec, "language", "") or "").lower()
    if not argv or language != "python":
        return None
    first = str(argv[0])
    if os.path.basename(first).startswith("python") and not os.path.isabs(first):
        return sys.executable if first in ("python", "python3") else first
    return first


def setting_interpreter(setting: str, kernel_specs: Any) -> str | None:
    """The interpreter a fixed ``KernelPool.python`` names (None: the server's; ``auto`` is
    the caller's per run). Blocking (a kernelspec read)."""
    value = setting.strip()
    if not value or value == AUTO:
        return None
    if value.startswith(KERNELSPEC):
        name = value[len(KERNELSPEC) :]
        if kernel_specs is None:
            raise EnvironmentUnfit(f"KernelPool.python = {setting!r}: no kernelspecs here")
        try:
            found = spec_interpreter(kernel_specs, name)
        except Exception as exc:  # jupyter_client's NoSuchKernel, a bad kernel.json
            raise EnvironmentUnfit(f"KernelPool.python = {setting!r}: {exc}") from None
        if found is None:
            raise EnvironmentUnfit(
                f"KernelPool.python = {setting!r}: the kernelspec {name!r} is not a Python kernel"
            )
        return found
    return value


def is_server_python(python: str | None) -> bool:
    """Whether ``python`` is the server's own interpreter (or None: the default)."""
    if python is None:
        return True
    # Not realpath: a venv's python is a link to the base interpreter another venv shares.
    return os.path.abspath(python) == os.path.abspath(sys.executable)
