"""The extension app's settings, one trait group per concern (``c.JupyterAgent.<trait>``).

Each class holds the traits of one concern and their checks: the model tiers, profiles
and agents (:class:`ModelTraits`), the key policy of settings changed from the browser
(:class:`KeyPolicyTraits`), who owns what (:class:`OwnerTraits`), program deploys
(:class:`ProgramTraits`), approvals (:class:`ApprovalTraits`), the person's kernels
(:class:`PersonKernelTraits`), inline completion (:class:`CompletionTraits`) and MCP servers
(:class:`McpTraits`). :class:`~jupyter_agent.server.app.JupyterAgent` inherits them all
(through :class:`AppSettings`),
so every name stays ``JupyterAgent.<trait>`` (config files, ``--JupyterAgent.<trait>=`` on
the command line, ``--help-all``). They are ``HasTraits``, not ``Configurable``: no config
section of their own beside the app's. Pure traitlets; the app reads the values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from traitlets import Bool, Dict, Enum, Float, HasTraits, Int, List, TraitError, Unicode, validate

from jupyter_agent.llm.embeddings import EMBED_TIER, embed_tier_problem
from jupyter_agent.runtime.settings.keypolicy import DEFAULT_KEY_BINDINGS
from jupyter_agent.runtime.settings.profiles import admin_profiles
from jupyter_agent.server.auth.isolation import ALLOW_HELP

__all__ = [
    "DEFAULT_TIERS",
    "AppSettings",
    "ApprovalTraits",
    "KeyPolicyTraits",
    "McpTraits",
    "ModelTraits",
    "OwnerTraits",
    "ProgramTraits",
]

#: The default tiers: Anthropic for code generation; classify and vision fall back to it.
DEFAULT_TIERS: dict[str, dict[str, str]] = {
    "codegen": {
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "base_url": "https://api.anthropic.com",
        "api_key_ref": "env:ANTHROPIC_API_KEY",
        "api": "chat",
    }
}


_TIER_KEYS = frozenset({"provider", "model", "base_url", "api_key_ref", "api"})


class ModelTraits(HasTraits):
    """The model tiers, the per-model profile overrides and the hosted agents."""

    tiers = Dict(
        default_value=DEFAULT_TIERS,
        help=(
            "Model tiers by name (codegen, classify, vision, embed). Each is a dict with "
            "provider (anthropic, openai, openai-compatible, fake), model, base_url "
            "(as in the official SDKs), api_key_ref (a credential reference such as "
            "'env:ANTHROPIC_API_KEY'; never a key value) and api ('chat' or 'responses', "
            "OpenAI only). Tiers that are not configured fall back to codegen. When "
            "codegen cannot run (unknown provider or missing key) the server runs the "
            "labelled demo model. The optional embed tier (provider openai or "
            "openai-compatible: an OpenAI-style /embeddings endpoint, e.g. "
            "{'provider': 'openai-compatible', 'model': 'nomic-embed-text', "
            "'base_url': 'http://127.0.0.1:11434/v1'}) makes recall rank by meaning as "
            "well as words; it never falls back to codegen (absent: no embeddings)."
        ),
    ).tag(config=True)

    name_chats = Bool(
        True,
        help=(
            "Name each chat after its first turn with the classify tier, when the chat's "
            "agent configures one (not its codegen fallback): a short name in place of "
            "the first message's first line. A chat the person titled or renamed keeps "
            "its name. False: chats keep their first line."
        ),
    ).tag(config=True)

    profiles = Dict(
        {},
        help=(
            "Per-model overrides of the model's profile, by model name: context_window, "
            "max_output, tool_mode (native, fenced, xml), prices ({in, out, cache_read, "
            "cache_write}: USD per million tokens), e.g. to describe a local model."
        ),
    ).tag(config=True)

    @validate("profiles")
    def _validate_profiles(self, proposal: Mapping[str, Any]) -> dict[str, Any]:
        """Only the known keys, with good values
        (:func:`~jupyter_agent.runtime.settings.profiles.admin_profiles`)."""
        try:
            admin_profiles(proposal["value"])
        except ValueError as exc:
            raise TraitError(f"JupyterAgent.{exc}") from None
        return dict(proposal["value"])

    agents = Dict(
        {},
        help=(
            "The agents this server hosts besides the default one ('agent'), by name "
            "([a-z][a-z0-9_-]{0,39}): {name: {'space': folder (its _soul.md, skills, ...; "
            "relative to {jupyter_data_dir}/jupyter_agent), 'tiers': {tier: {...}} (as the "
            "tiers trait; they replace the user's settings for the tiers named), "
            "'description': str}}. Folders {jupyter_data_dir}/jupyter_agent/agents/<name>/ "
            "(with an optional agent.json {tiers, description}) add agents too; this trait "
            "wins on a clash. A bad entry is skipped with a warning at start."
        ),
    ).tag(config=True)

    @validate("tiers")
    def _validate_tiers(self, proposal: Mapping[str, Any]) -> dict[str, Any]:
        """Reject a tier that is not a dict naming its provider and model as strings."""
        tiers = proposal["value"]
        for name, tier in tiers.items():
            if not isinstance(tier, dict):
                raise TraitError(f"JupyterAgent.tiers[{name!r}] must be a dict")
            unknown = sorted(set(tier) - _TIER_KEYS)
            if unknown:
                # Named, never echoed: a stray "api_key" would hold a secret.
                raise TraitError(
                    f"JupyterAgent.tiers[{name!r}] has unknown key(s) {', '.join(unknown)}; "
                    f"known: {', '.join(sorted(_TIER_KEYS))} (keys go in the environment, "
                    "named by api_key_ref: env:NAME)"
                )
            for key in ("provider", "model"):
                if not isinstance(tier.get(key), str):
                    raise TraitError(f"JupyterAgent.tiers[{name!r}] needs a string {key!r}")
            ref = tier.get("api_key_ref")
            if ref is not None and not isinstance(ref, str):
                raise TraitError(f"JupyterAgent.tiers[{name!r}]['api_key_ref'] must be a string")
            problem = embed_tier_problem(tier) if name == EMBED_TIER else None
            if problem is not None:
                raise TraitError(f"JupyterAgent.tiers[{name!r}]: {problem}")
        return dict(tiers)


class KeyPolicyTraits(HasTraits):
    """What settings changed from the browser may use: keys, base URLs, models
    (:mod:`jupyter_agent.runtime.settings.keypolicy`)."""

    key_bindings = Dict(
        value_trait=List(Unicode()),
        key_trait=Unicode(),
        default_value=DEFAULT_KEY_BINDINGS,
        help=(
            "Key references settings changed from the browser may use, each bound to the "
            "base URLs its key may be sent to, e.g. {'env:ANTHROPIC_API_KEY': "
            "['https://api.anthropic.com']}. A browser tier pairing a key with a URL it is "
            "not bound to is refused (400), so an allowed key never goes elsewhere."
        ),
    ).tag(config=True)

    allowed_key_refs = List(
        Unicode(),
        default_value=None,
        allow_none=True,
        help=(
            "Legacy (use key_bindings). None: every reference of key_bindings may be "
            "chosen from the browser. A list: only these references; one with no "
            "key_bindings entry is bound to every allowed_base_urls entry (the behaviour "
            "before key bindings; a warning at start)."
        ),
    ).tag(config=True)

    allowed_base_urls = List(
        Unicode(),
        default_value=["https://api.anthropic.com", "https://api.openai.com/v1"],
        help=(
            "Base URLs a keyless tier changed from the browser may use (besides the "
            "key_bindings URLs and, when allowed, loopback URLs). Keyed tiers use "
            "key_bindings; legacy allowed_key_refs entries without a binding use these."
        ),
    ).tag(config=True)

    allow_loopback_base_urls = Bool(
        True,
        help=(
            "Let a keyless tier changed from the browser (openai-compatible, e.g. vLLM, "
            "Ollama, llama.cpp) use a loopback base URL: http://127.0.0.1:PORT/..., "
            "http://localhost:PORT/..., http://[::1]:PORT/... (the server is the user's "
            "own). A key is sent to loopback only when key_bindings binds it there."
        ),
    ).tag(config=True)

    allowed_models = List(
        Unicode(),
        default_value=[],
        help=(
            "The models a tier changed from the browser may name: fnmatch globs, each "
            "MODEL_GLOB or PROVIDER:MODEL_GLOB, e.g. ['anthropic:claude-sonnet-*', "
            "'gpt-5*']. Empty: any model. A PUT agent/settings naming another model is "
            "refused (400); an override stored before the list changed is left out of "
            "runs. The admin's own tiers are trusted."
        ),
    ).tag(config=True)

    @validate("key_bindings")
    def _validate_key_bindings(self, proposal: Mapping[str, Any]) -> dict[str, list[str]]:
        """Each reference is ``env:NAME`` bound to a list of http(s) URLs."""
        bindings = proposal["value"]
        for ref, urls in bindings.items():
            if not isinstance(ref, str) or not ref.startswith("env:") or ref == "env:":
                raise TraitError(  # the value is not echoed: it may be a key pasted by mistake
                    "JupyterAgent.key_bindings: a key is not a reference of the form env:NAME"
                )
            for url in urls:
                if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                    raise TraitError(
                        f"JupyterAgent.key_bindings[{ref!r}]: {url!r} is not an http(s) URL"
                    )
        return {ref: list(urls) for ref, urls in bindings.items()}


class OwnerTraits(HasTraits):
    """Who owns the agent's records, and who may read every owner's runs."""

    owners = Enum(
        ["auto", "identity", "single"],
        default_value="auto",
        help="Who owns the agent's chats, runs, memories, proposals and settings: 'single'"
        " every request is the server's one user; 'identity' each identity (its username;"
        " none: 403 no_identity) sees only its own; 'auto' single under jupyter_server's"
        " own identity providers (token users are anonymous), identity under any other"
        " (JupyterHub's).",
    ).tag(config=True)

    allow_unsandboxed_owners = Bool(False, help=ALLOW_HELP).tag(config=True)

    admin_users = List(
        Unicode(),
        default_value=[],
        help="Usernames that may list and read every owner's runs (GET agent/runs?owner=*,"
        " a run's detail, log, stats and notebook) for support, when the authorizer also"
        " grants them 'read' on resource 'agent_admin'. Nothing else of another owner.",
    ).tag(config=True)


class ProgramTraits(HasTraits):
    """Who may deploy programs, and how long a deploy's checks may take."""

    program_deploy = Enum(
        ["token", "browser", "off"],
        default_value="token",
        help="Who may deploy programs (besides the agent_programs write permission):"
        " 'token' only requests authenticated by a token (the CLI, scripts); 'browser' also"
        " cookie sessions (the browser); 'off' nobody.",
    ).tag(config=True)
    program_check_timeout_s = Float(
        20.0,
        min=0.5,
        help="Seconds a deploy's checks (import, smoke test, scenarios: run in a process of"
        " their own, sandboxed as agent kernels are) may take; past them the process is"
        " killed and the deploy refused (program_check_timeout).",
    ).tag(config=True)
    # A deployed program's step deadline is RunManager.program_step_timeout_s.


class ApprovalTraits(HasTraits):
    """Which of the agent's cells wait for the person's approval."""

    approval = Enum(
        ["none", "writes", "every_cell"],
        default_value="writes",
        help="Which of the agent's cells wait for the person to approve them (toolcaller@v5"
        " on): 'none'; 'writes' those the model says write or delete files; 'every_cell'"
        " every cell and bash command. New runs read it (the run config's ceilings).",
    ).tag(config=True)


class PersonKernelTraits(HasTraits):
    """What the agent may do with the person's own kernels (``notebook.variables``, ...)."""

    fetch_max_bytes = Int(
        100_000_000,
        min=0,
        help="The largest value (pickled, in bytes) notebook.fetch copies from the person's"
        " kernel into the agent's; a larger one is refused with its size named. 0: no copy.",
    ).tag(config=True)


class CompletionTraits(HasTraits):
    """Inline completion in the person's notebooks (``POST agent/complete``)."""

    complete_rate = Int(
        60,
        min=1,
        help="The most inline completions one owner may ask for in any minute; over it a"
        " request is refused (429 rate_limited, Retry-After). The completion tier is the"
        " 'complete' tier, else 'classify', else 'codegen' (never the demo model).",
    ).tag(config=True)


class McpTraits(HasTraits):
    """The MCP servers whose tools the agent's cells may call."""

    mcp_servers = Dict(
        {},
        help=(
            "MCP servers whose tools the agent's cells may call (mcp.<server>.<tool>(...)),"
            " by name: {name: {'command': [...] (stdio) or 'url': 'https://...' (streamable"
            " HTTP), 'tools': [...] (required; ['*'] = all), 'env': {VAR: 'env:NAME'}, 'cwd',"
            " 'headers': {'Authorization': 'Bearer {env:NAME}'}, 'read_only': [...],"
            " 'mutating': [...], 'timeout_s': 60}}. Credentials by reference only. A tool is"
            " mutating (it waits for the person under the approval policy) unless read_only"
            " or annotated readOnlyHint and not in mutating. A bad entry is logged at start"
            " and left out. See docs/mcp.md."
        ),
    ).tag(config=True)


class AppSettings(
    ModelTraits,
    KeyPolicyTraits,
    OwnerTraits,
    ProgramTraits,
    ApprovalTraits,
    PersonKernelTraits,
    CompletionTraits,
    McpTraits,
):
    """Every trait group of the extension app (see the module docstring)."""
