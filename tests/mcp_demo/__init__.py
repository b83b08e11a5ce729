"""The test suite's own MCP server (issue 18): :mod:`tests.mcp_demo.server`.

Run it by path (``python tests/mcp_demo/server.py``: stdio) or with ``--http PORT``
(streamable HTTP on 127.0.0.1:PORT, path ``/mcp``). :data:`SERVER` is the file's path,
:func:`stdio_command` the command a ``mcp_servers`` entry starts it with.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["SERVER", "stdio_command"]

#: The server's file (run by path: it needs no package on the child's ``sys.path``).
SERVER = str(Path(__file__).with_name("server.py"))


def stdio_command(*extra: str) -> list[str]:
    """``[python, server.py, *extra]``: the demo served over stdio."""
    return [sys.executable, SERVER, *extra]
