"""jupyter-agent: an AI agent that lives inside Jupyter.

The import package of the ``jupyter-agent-runtime`` distribution. This module holds the
version and the Jupyter extension points only; no logic. Imports server/app.py lazily
(the extension point). Used by Jupyter Server and JupyterLab, which find the extension here.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__"]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    """Tell Jupyter Server which ExtensionApp this package provides."""
    from jupyter_agent.server.app import JupyterAgent

    return [{"module": "jupyter_agent.server.app", "app": JupyterAgent}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Tell JupyterLab where the prebuilt frontend extension lives."""
    return [{"src": "labextension", "dest": "jupyter-agent"}]
