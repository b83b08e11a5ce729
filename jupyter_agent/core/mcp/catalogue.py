"""The MCP tools a run may call, as data (pure).

The host answers ``config.get {key: "mcp"}`` (``toolcaller@v6``) with the catalogue of the
configured MCP servers' allowed tools, recorded in the run's log so a replay builds the
same prompt with no MCP server running::

    {"servers": [{"name": "files",
                  "tools": [{"name": "read-file", "description": "...",
                             "input_schema": {...}, "mutating": false}, ...],
                  "error": null}, ...]}

``error`` is a short reason when the server could not be reached (its tools are then
empty). In a cell the model calls ``mcp.<server>.<python name>(**args)``: a tool's Python
name is :func:`python_name` of its MCP name (``read-file`` -> ``read_file``). The kernel
sends ``app.call {app: "mcp", method: "<server>.<python name>", args}``; the host looks
the tool up here (:meth:`McpCatalogue.find`). :meth:`McpCatalogue.app_spec` is the
``mcp`` app the system prompt lists: one line per tool, its signature read from the
input schema (:func:`signature_of`) and its description.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from jupyter_agent.core.app_spec import AppSpec, MethodSpec

__all__ = [
    "MCP_APP",
    "McpCatalogue",
    "McpServerTools",
    "McpTool",
    "python_name",
    "signature_of",
]

#: The name the ``mcp`` app is bound under in the kernel, and its ``app.call`` app.
MCP_APP: Final = "mcp"

_DESCRIPTION_MAX: Final = 300
_NOT_NAME: Final = re.compile(r"[^0-9A-Za-z_]")

_JSON_TYPES: Final = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "array": "list",
    "object": "dict",
    "null": "None",
}


def python_name(name: str) -> str:
    """The Python identifier a tool or server name is called by in a cell: every character
    that cannot be in an identifier becomes ``_``; a leading digit or a keyword gets a
    trailing or leading ``_`` (``read-file`` -> ``read_file``, ``2fa`` -> ``_2fa``,
    ``class`` -> ``class_``)."""
    out = _NOT_NAME.sub("_", name) or "_"
    if out[0].isdigit():
        out = "_" + out
    if keyword.iskeyword(out):
        out += "_"
    return out


def _type_of(schema: Any) -> str:
    if not isinstance(schema, Mapping):
        return "Any"
    if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
        values = ", ".join(repr(v) for v in schema["enum"][:8])
        more = ", ..." if len(schema["enum"]) > 8 else ""
        return f"Literal[{values}{more}]"
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(_JSON_TYPES.get(str(k), "Any") for k in kind) or "Any"
    if kind == "array" and isinstance(schema.get("items"), Mapping):
        return f"list[{_type_of(schema['items'])}]"
    for union in ("anyOf", "oneOf"):
        if isinstance(schema.get(union), list):
            return " | ".join(_type_of(s) for s in schema[union]) or "Any"
    return _JSON_TYPES.get(str(kind), "Any")


def signature_of(call: str, schema: Mapping[str, Any]) -> str:
    """``call(a: int, b: str = 'x', *, ...) -> Any``: the keyword arguments an input schema
    takes, required ones first (a default the schema gives is shown; an optional one without
    a default shows ``= None``, meaning "leave it out")."""
    props = schema.get("properties")
    props = props if isinstance(props, Mapping) else {}
    required = schema.get("required")
    needed = [str(n) for n in required] if isinstance(required, list) else []
    parts: list[str] = []
    for name in needed:
        if name in props:
            parts.append(f"{name}: {_type_of(props[name])}")
    for name, prop in props.items():
        if name in needed:
            continue
        default = prop.get("default") if isinstance(prop, Mapping) else None
        parts.append(f"{name}: {_type_of(prop)} = {default!r}")
    return f"{call}({', '.join(parts)}) -> Any"


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _DESCRIPTION_MAX else text[: _DESCRIPTION_MAX - 3] + "..."


@dataclass(frozen=True, kw_only=True)
class McpTool:
    """One allowed tool of one server: its MCP ``name``, ``description``, ``input_schema``
    and whether it is ``mutating`` (changes something outside: it waits for the person
    under the ``writes`` and ``every_cell`` approval policies)."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = field(default_factory=dict)
    mutating: bool = True

    @property
    def python_name(self) -> str:
        """The name the tool is called by in a cell (:func:`python_name`)."""
        return python_name(self.name)

    def to_json(self) -> dict[str, Any]:
        """The catalogue entry (module docstring)."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
            "mutating": self.mutating,
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> McpTool:
        """An entry as :meth:`to_json` writes it (missing fields take their defaults)."""
        schema = raw.get("input_schema")
        return cls(
            name=str(raw.get("name", "")),
            description=str(raw.get("description") or ""),
            input_schema=dict(schema) if isinstance(schema, Mapping) else {},
            mutating=bool(raw.get("mutating", True)),
        )


@dataclass(frozen=True, kw_only=True)
class McpServerTools:
    """One configured server's allowed tools, or the ``error`` that kept them out."""

    name: str
    tools: tuple[McpTool, ...] = ()
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The catalogue entry (module docstring)."""
        return {
            "name": self.name,
            "tools": [t.to_json() for t in self.tools],
            "error": self.error,
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> McpServerTools:
        """An entry as :meth:`to_json` writes it."""
        tools = raw.get("tools")
        error = raw.get("error")
        return cls(
            name=str(raw.get("name", "")),
            tools=tuple(
                McpTool.from_json(t)
                for t in (tools if isinstance(tools, list) else [])
                if isinstance(t, Mapping)
            ),
            error=None if error is None else str(error),
        )


@dataclass(frozen=True, kw_only=True)
class McpCatalogue:
    """The answer of ``config.get {key: "mcp"}``: every configured server, in config order."""

    servers: tuple[McpServerTools, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The recorded answer (module docstring)."""
        return {"servers": [s.to_json() for s in self.servers]}

    @classmethod
    def from_json(cls, raw: Any) -> McpCatalogue:
        """The recorded answer; anything that is not one (None, an older log) is empty."""
        servers = raw.get("servers") if isinstance(raw, Mapping) else None
        if not isinstance(servers, list):
            return cls()
        return cls(
            servers=tuple(McpServerTools.from_json(s) for s in servers if isinstance(s, Mapping))
        )

    def __bool__(self) -> bool:
        return bool(self.servers)

    def find(self, method: str) -> tuple[McpServerTools, McpTool] | None:
        """The server and tool of an ``app.call`` method ``"<server>.<python name>"`` (each
        part matched by its Python name, as the cell spells it), or None."""
        server_name, dot, tool_name = method.partition(".")
        if not dot:
            return None
        for server in self.servers:
            if python_name(server.name) != server_name:
                continue
            for tool in server.tools:
                if tool.python_name == tool_name:
                    return server, tool
        return None

    def app_spec(self) -> AppSpec | None:
        """The ``mcp`` app as the system prompt lists it (None with no server configured).

        One method per tool: ``mcp.<server>.<tool>(<schema's arguments>) -> Any`` with its
        description, ``(changes things: may wait for the person)`` for a mutating tool; a
        server that could not be reached is named with its error so the model does not try
        it."""
        if not self.servers:
            return None
        methods: list[MethodSpec] = []
        down: list[str] = []
        for server in self.servers:
            if server.error is not None:
                down.append(f"{server.name} ({_clip(server.error)})")
                continue
            for tool in server.tools:
                call = f"{MCP_APP}.{python_name(server.name)}.{tool.python_name}"
                doc = _clip(tool.description) or "(no description)"
                if tool.mutating:
                    doc += " (changes things: may wait for the person)"
                methods.append(
                    MethodSpec(
                        name=f"{python_name(server.name)}.{tool.python_name}",
                        signature=signature_of(call, tool.input_schema),
                        doc=doc,
                        mutation=tool.mutating,
                    )
                )
        doc = (
            "Tools of the MCP servers the admin configured, performed by the host (the "
            "kernel holds no connection or credential). Pass keyword arguments; a call "
            "returns the tool's structured result as Python objects, else its text, else "
            "its one image or resource (an image displays when a cell ends with it), else "
            "a list of those; a failed call raises AppCallError."
        )
        if down:
            doc += " Unreachable now: " + "; ".join(down) + "."
        return AppSpec(name=MCP_APP, doc=doc, methods=tuple(methods), since=6)
