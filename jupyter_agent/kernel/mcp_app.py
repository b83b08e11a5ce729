"""``mcp``: the tools of the admin's MCP servers, called from a cell.

``mcp.<server>.<tool>(**kwargs)`` (or one positional dict, ``mcp.s.t({"a": 1})``) sends
``{"jupyter_agent": "app", "app": "mcp", "method": "<server>.<tool>", "args": {...}}``
through the kernel's :class:`~.apps.HostChannel`, like every app call, blocks for the reply
and records it in the cell's ``app_calls``; the host performs the call on the MCP server
(the kernel holds no connection and no credential). The names are the Python names the
system prompt lists (:func:`~jupyter_agent.core.mcp.catalogue.python_name`). A failed call
(unknown tool, refused, timed out, the tool's own error) raises
:class:`~jupyter_agent.exceptions.AppCallError` with the host's message. The value is
converted by :func:`~.mcp_values.mcp_value`.

``mcp.<server>.<tool>.spec(...)`` is the call as data for ``batch(...)``.

The kernel does not know the catalogue (the host does, per run): any ``server.tool`` name
makes a call the host answers, and ``repr(mcp)`` points at the system prompt. Names
starting with ``_`` are never proxied: IPython and tools probe objects for ``_repr_*_``,
``_ipython_canary_method_should_not_exist_`` and the like, and those must not become calls.
"""

from __future__ import annotations

from typing import Any

from jupyter_agent.core.mcp.catalogue import MCP_APP
from jupyter_agent.kernel.apps import AppCall, HostChannel, _check_json, _record

__all__ = ["McpApp", "McpServer", "McpToolMethod"]


def _arguments(where: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments, or one positional dict (merged under the keywords)."""
    if not args:
        return dict(kwargs)
    if len(args) == 1 and isinstance(args[0], dict):
        clash = sorted(set(args[0]) & set(kwargs))
        if clash:
            raise TypeError(f"{where}: {', '.join(clash)} given twice")
        return {**args[0], **kwargs}
    raise TypeError(f"{where} takes keyword arguments (or one dict of them)")


class McpToolMethod:
    """``mcp.<server>.<tool>``: call it to perform the call now, ``.spec(...)`` for batch."""

    def __init__(self, server: str, tool: str, host: HostChannel) -> None:
        self._method = f"{server}.{tool}"
        self._host = host
        self.__doc__ = (
            f"{MCP_APP}.{self._method}(**args): the MCP tool; its arguments and "
            "description are in the system prompt."
        )

    def spec(self, *args: Any, **kwargs: Any) -> AppCall:
        """The call as data, for ``batch(...)``."""
        where = f"{MCP_APP}.{self._method}"
        call = AppCall(MCP_APP, self._method, _arguments(where, args, kwargs))
        _check_json(call)
        return call

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        call = self.spec(*args, **kwargs)
        reply = self._host.request({"jupyter_agent": "app", **call.to_json()})
        return _record(self._host, call, reply).unwrap()

    def __getattr__(self, name: str) -> Any:
        # (only reached for a missing attribute) a tool has no sub-tools: say so plainly
        raise AttributeError(f"{MCP_APP}.{self._method} has no attribute {name!r}")

    def __repr__(self) -> str:
        return f"<mcp tool {MCP_APP}.{self._method}(**args): see the system prompt>"


class McpServer:
    """``mcp.<server>``: its tools are attributes (``mcp.files.read_file``)."""

    def __init__(self, name: str, host: HostChannel) -> None:
        self._name = name
        self._host = host

    def __getattr__(self, name: str) -> McpToolMethod:
        if name.startswith("_"):
            raise AttributeError(name)
        return McpToolMethod(self._name, name, self._host)

    def __dir__(self) -> list[str]:
        return []  # the kernel does not know the tools (module docstring)

    def __repr__(self) -> str:
        return f"<mcp server {self._name}: its tools are in the system prompt>"


class McpApp:
    """``mcp``, bound in the agent kernel's namespace: ``mcp.<server>.<tool>(**args)``."""

    def __init__(self, host: HostChannel) -> None:
        self._host = host
        self.__doc__ = (
            "MCP tools: see the system prompt (mcp.<server>.<tool>(**args)). The host "
            "performs each call; a failed one raises AppCallError."
        )

    def __getattr__(self, name: str) -> McpServer:
        if name.startswith("_"):
            raise AttributeError(name)
        return McpServer(name, self._host)

    def __dir__(self) -> list[str]:
        return []

    def __repr__(self) -> str:
        return "MCP tools: see the system prompt (mcp.<server>.<tool>(**args))"
