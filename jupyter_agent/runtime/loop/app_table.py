"""The in-cell apps a run's cells may call, by name: the table the driver gives the app
host (:data:`~jupyter_agent.runtime.loop.apphost.AppTable`). ``chat`` and ``llm`` are the
host's own; every other app registers here, so the host never imports its performers.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

from jupyter_agent.core.mcp.catalogue import MCP_APP
from jupyter_agent.runtime.loop.apphost import AppTable, InCellApp
from jupyter_agent.runtime.mcp.app import MCP_IN_CELL
from jupyter_agent.runtime.memory.app import MEMORY_IN_CELL
from jupyter_agent.runtime.notebook.app import NOTEBOOK_IN_CELL

__all__ = ["IN_CELL_APPS"]

_APPS: dict[str, InCellApp] = {
    MCP_APP: MCP_IN_CELL,
    "notebook": NOTEBOOK_IN_CELL,
    "memory": MEMORY_IN_CELL,
}

#: Every in-cell app of this server's runs.
IN_CELL_APPS: Final[AppTable] = MappingProxyType(_APPS)
