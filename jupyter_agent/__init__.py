"""jupyter-agent: an AI agent that lives inside Jupyter.

The import package of the ``jupyter-agent-runtime`` distribution. This module holds the
version and the Jupyter extension points only; no logic. Imports server/app.py lazily
(the extension point). Used by Jupyter Server and JupyterLab, which find the extension here.
"""

from __future__ import annotations

import gc
from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__"]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    """Tell Jupyter Server which ExtensionApp this package provides.

    The app is imported with the cyclic garbage collector paused: the import creates about
    70,000 long-lived tracked objects, and the collections they set off, each walking the
    server's whole heap, were about a seventh of its time at the server's start.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        from jupyter_agent.server.app import JupyterAgent
    finally:
        if enabled:
            gc.enable()

    return [{"module": "jupyter_agent.server.app", "app": JupyterAgent}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Tell JupyterLab where the prebuilt frontend extension lives."""
    return [{"src": "labextension", "dest": "jupyter-agent"}]
