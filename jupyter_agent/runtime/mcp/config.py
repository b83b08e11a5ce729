"""The ``c.JupyterAgent.mcp_servers`` trait, validated into typed server configs.

Each entry names one MCP server the agent's cells may call (``mcp.<server>.<tool>(...)``)::

    {"files": {"command": ["python", "-m", "my_mcp_server"],    # stdio (list, or a str)
               "env": {"API_TOKEN": "env:FILES_TOKEN"},          # references only
               "cwd": "/srv/x",
               "tools": ["read_file", "search"],                 # REQUIRED; ["*"] = all
               "read_only": ["search"], "mutating": ["write_file"],
               "timeout_s": 30},
     "github": {"url": "https://mcp.example.com/mcp",            # streamable HTTP
                "headers": {"Authorization": "Bearer {env:GITHUB_TOKEN}"},
                "tools": ["*"]}}

Rules (:func:`parse_server`; each broken one is a :class:`~jupyter_agent.exceptions.McpConfigError`
naming the server and the field, never quoting a value that may be a secret):

- exactly one of ``command`` / ``url``; ``url`` is http(s);
- credentials by reference only: an ``env`` value is ``env:NAME``; a header value may hold
  ``{env:NAME}`` placeholders, and what is left of it (or a command argument, the url) must
  not look like a credential (:func:`~jupyter_agent.core.memory.credentials.credential_reason`);
- ``tools`` is required (the admin chooses what the model may call), matched by MCP name
  or by Python name;
- two servers whose Python names (:func:`~jupyter_agent.core.mcp.catalogue.python_name`)
  collide: the second is refused.

:func:`parse_servers` keeps the good entries and reports the bad ones (the server still
starts; the log and the catalogue say what is wrong). The resolved values
(:meth:`McpServerConfig.resolve_env`, :meth:`McpServerConfig.resolve_headers`) are read
at connect time; :meth:`McpServerConfig.refs` are the references the scrubber resolves.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from jupyter_agent.core.mcp.catalogue import python_name
from jupyter_agent.core.memory.credentials import credential_reason
from jupyter_agent.exceptions import McpConfigError

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "McpServerConfig",
    "parse_server",
    "parse_servers",
]

#: A tool call's default deadline (``timeout_s``).
DEFAULT_TIMEOUT_S: Final = 60.0

_KEYS: Final = frozenset(
    {"command", "url", "env", "cwd", "headers", "tools", "read_only", "mutating", "timeout_s"}
)
_ENV_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_REF: Final = re.compile(r"env:([A-Za-z_][A-Za-z0-9_]*)")
_PLACEHOLDER: Final = re.compile(r"\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True, kw_only=True)
class McpServerConfig:
    """One server's validated entry (see the module docstring). Holds references, never a
    resolved credential."""

    name: str
    command: tuple[str, ...] = ()
    url: str = ""
    #: The child's variables: ``{VAR: "env:NAME"}``.
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    #: Header templates: ``{"Authorization": "Bearer {env:NAME}"}``.
    headers: dict[str, str] = field(default_factory=dict)
    #: The allow-list (``("*",)``: every tool).
    tools: tuple[str, ...] = ()
    read_only: frozenset[str] = frozenset()
    mutating: frozenset[str] = frozenset()
    timeout_s: float = DEFAULT_TIMEOUT_S

    @property
    def transport(self) -> Literal["stdio", "http"]:
        """How the hub reaches it."""
        return "http" if self.url else "stdio"

    @property
    def python_name(self) -> str:
        """The name a cell calls it by (``mcp.<python name>.<tool>``)."""
        return python_name(self.name)

    def allows(self, tool: str) -> bool:
        """Whether the allow-list lets the model call ``tool`` (its MCP name)."""
        return "*" in self.tools or tool in self.tools or python_name(tool) in self.tools

    def is_mutating(self, tool: str, *, read_only_hint: bool | None) -> bool:
        """A tool is mutating unless it is in ``read_only``, or its annotations say
        ``readOnlyHint: true`` and it is not in ``mutating``."""
        names = {tool, python_name(tool)}
        if names & self.read_only:
            return False
        if names & self.mutating:
            return True
        return read_only_hint is not True

    def refs(self) -> list[str]:
        """Every ``env:NAME`` reference this entry names (its values are secrets)."""
        names = [ref.removeprefix("env:") for ref in self.env.values()]
        for template in self.headers.values():
            names.extend(_PLACEHOLDER.findall(template))
        return [f"env:{n}" for n in dict.fromkeys(names)]

    def resolve_env(self, environ: Mapping[str, str]) -> dict[str, str]:
        """The child's variables resolved in ``environ``; McpConfigError naming the variable
        (not its value) when one is unset."""
        out: dict[str, str] = {}
        for var, ref in self.env.items():
            name = ref.removeprefix("env:")
            if name not in environ:
                raise McpConfigError(f"mcp_servers[{self.name!r}].env[{var!r}]: {name} is not set")
            out[var] = environ[name]
        return out

    def resolve_headers(self, environ: Mapping[str, str]) -> dict[str, str]:
        """The headers with every ``{env:NAME}`` replaced by its value in ``environ``."""
        out: dict[str, str] = {}
        for header, template in self.headers.items():
            for name in _PLACEHOLDER.findall(template):
                if name not in environ:
                    raise McpConfigError(
                        f"mcp_servers[{self.name!r}].headers[{header!r}]: {name} is not set"
                    )
            out[header] = _PLACEHOLDER.sub(lambda m: environ[m.group(1)], template)
        return out


def _names(where: str, raw: Any) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, (list, tuple)) or not all(isinstance(t, str) and t for t in raw):
        raise McpConfigError(f"{where} must be a list of tool names")
    return tuple(raw)


def _literal(where: str, text: str) -> None:
    reason = credential_reason(text)
    if reason is not None:  # the value is never echoed
        raise McpConfigError(
            f"{where} {reason}: credentials go by reference only "
            "(env: {'VAR': 'env:NAME'}; headers: '{env:NAME}')"
        )


def parse_server(name: Any, raw: Any) -> McpServerConfig:
    """One entry, validated (see the module docstring); McpConfigError when it is bad."""
    if not isinstance(name, str) or not name.strip():
        raise McpConfigError("mcp_servers: a server name must be a non-empty string")
    at = f"mcp_servers[{name!r}]"
    if not isinstance(raw, Mapping):
        raise McpConfigError(f"{at} must be a dict")
    unknown = sorted(str(k) for k in set(raw) - _KEYS)
    if unknown:
        raise McpConfigError(
            f"{at} has unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(_KEYS))}"
        )
    command_raw, url = raw.get("command"), raw.get("url")
    if (command_raw is None) == (url is None):
        raise McpConfigError(f"{at} needs exactly one of 'command' (stdio) or 'url' (HTTP)")
    command: tuple[str, ...] = ()
    if command_raw is not None:
        if isinstance(command_raw, str):
            command = tuple(shlex.split(command_raw))
        elif isinstance(command_raw, (list, tuple)) and all(
            isinstance(a, str) for a in command_raw
        ):
            command = tuple(command_raw)
        if not command:
            raise McpConfigError(f"{at}['command'] must be a non-empty list of strings (or a str)")
        for arg in command:
            _literal(f"{at}['command']", arg)
    if url is not None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise McpConfigError(f"{at}['url'] must be an http(s) URL")
        _literal(f"{at}['url']", url)
    env = raw.get("env") or {}
    if not isinstance(env, Mapping):
        raise McpConfigError(f"{at}['env'] must be a dict of VAR: 'env:NAME'")
    for var, ref in env.items():
        if not isinstance(var, str) or not _ENV_NAME.fullmatch(var):
            raise McpConfigError(f"{at}['env']: {str(var)[:40]!r} is not a variable name")
        if not isinstance(ref, str) or not _REF.fullmatch(ref):
            raise McpConfigError(
                f"{at}['env'][{var!r}] must be a reference env:NAME (credentials by reference only)"
            )
    if env and url is not None:
        raise McpConfigError(f"{at}['env'] is for a stdio server (a command); use 'headers'")
    headers = raw.get("headers") or {}
    if not isinstance(headers, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise McpConfigError(f"{at}['headers'] must be a dict of str: str")
    if headers and command_raw is not None:
        raise McpConfigError(f"{at}['headers'] is for an HTTP server (a url)")
    for header, template in headers.items():
        _literal(f"{at}['headers'][{header!r}]", _PLACEHOLDER.sub("", template))
    cwd = raw.get("cwd")
    if cwd is not None and (not isinstance(cwd, str) or not cwd):
        raise McpConfigError(f"{at}['cwd'] must be a folder path")
    if "tools" not in raw:
        raise McpConfigError(f"{at} needs 'tools': the tools the agent may call (['*'] = all)")
    tools = _names(f"{at}['tools']", raw.get("tools"))
    timeout = raw.get("timeout_s", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise McpConfigError(f"{at}['timeout_s'] must be a number > 0")
    return McpServerConfig(
        name=name,
        command=command,
        url=url or "",
        env={str(k): str(v) for k, v in env.items()},
        cwd=cwd,
        headers={str(k): str(v) for k, v in headers.items()},
        tools=tools,
        read_only=frozenset(_names(f"{at}['read_only']", raw.get("read_only"))),
        mutating=frozenset(_names(f"{at}['mutating']", raw.get("mutating"))),
        timeout_s=float(timeout),
    )


def parse_servers(raw: Any) -> tuple[tuple[McpServerConfig, ...], dict[str, str]]:
    """The trait's good entries (in its order) and the bad ones' errors by name (the
    server starts anyway: these are logged and shown in the catalogue)."""
    if not isinstance(raw, Mapping):
        return (), {"mcp_servers": "mcp_servers must be a dict of name: server config"}
    good: list[McpServerConfig] = []
    bad: dict[str, str] = {}
    taken: dict[str, str] = {}
    for name, entry in raw.items():
        try:
            config = parse_server(name, entry)
            other = taken.get(config.python_name)
            if other is not None:
                raise McpConfigError(
                    f"mcp_servers[{name!r}]: its Python name {config.python_name!r} is also "
                    f"{other!r}'s; rename one"
                )
        except McpConfigError as err:
            bad[str(name)] = str(err)
            continue
        taken[config.python_name] = config.name
        good.append(config)
    return tuple(good), bad
