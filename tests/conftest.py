"""Shared test configuration.

Every test runs with its Jupyter and IPython folders under a temp dir (nothing is written
to the home folder). Fixture plugins live in ``tests/plugins/``, one module per subsystem.
"""

from __future__ import annotations

import os
import tempfile

_ISOLATED = tempfile.mkdtemp(prefix="jupyter-agent-tests-")
for _name, _sub in (
    ("JUPYTER_DATA_DIR", "data"),
    ("JUPYTER_CONFIG_DIR", "config"),
    ("JUPYTER_RUNTIME_DIR", "runtime"),
    ("IPYTHONDIR", "ipython"),
    ("YARN_CACHE_FOLDER", "yarn"),
):
    os.environ.setdefault(_name, os.path.join(_ISOLATED, _sub))
os.environ.setdefault("JUPYTER_PLATFORM_DIRS", "1")

# The test process is not a server: the in-process servers it starts do not freeze its
# heap (JupyterAgent.freeze_start_heap freezes once per process, so it is marked done).
# Real servers started as processes freeze theirs (tests/server/test_start_imports.py).
import jupyter_agent.server.app as _agent_app  # noqa: E402

_agent_app._FROZEN = True

pytest_plugins = (
    "pytest_jupyter.jupyter_server",
    "tests.plugins.postgres",
    "tests.plugins.fake_provider",
    "tests.plugins.kernels",
    "tests.plugins.live_server",
    "tests.plugins.identities",
)
