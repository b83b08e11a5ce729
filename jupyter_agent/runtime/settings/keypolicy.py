"""Which key references settings from the browser may use, and where each key may be sent.

A credential reference (``env:NAME``) is *bound* to the base URLs its key may be sent to
(``JupyterAgent.key_bindings``): a tier changed from the browser that names a reference
must use one of that reference's URLs, so an allowed key never goes to a URL it is not
bound to. A keyless tier (no ``api_key_ref``: ``openai-compatible``, ``fake``) may use any
allowed URL: the admin's ``allowed_base_urls``, every bound URL, and, when
``allow_loopback_base_urls`` is on, a loopback URL (``http://127.0.0.1:PORT/...``,
``http://localhost:PORT/...``, ``http://[::1]:PORT/...``: the server is the user's own).

The admin may also narrow the models a browser tier may name (``allowed_models``: fnmatch
globs, each ``MODEL_GLOB`` or ``PROVIDER:MODEL_GLOB``; none means any model):
:meth:`KeyPolicy.model_problem`. :func:`~jupyter_agent.runtime.settings.overrides.policy_reason`
applies it with the key checks, so a tier naming another model is refused on ``PUT
agent/settings`` and, when stored before the admin narrowed the list, left out of runs.

The legacy trait ``allowed_key_refs`` (before bindings) still works: when the admin sets
it, only the references it lists may be chosen, and a listed reference with no entry in
``key_bindings`` is bound to every URL of ``allowed_base_urls`` (what the two independent
lists meant before), which :meth:`KeyPolicy.from_traits` reports as a warning.

Tiers set by the admin in traitlets are trusted and never checked here. Nothing in this
module reads or holds a key value: only references and URLs.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DEFAULT_KEY_BINDINGS",
    "KeyPolicy",
    "is_loopback_url",
    "normalise_base_url",
]

#: The default bindings: each provider's key goes to its provider only.
DEFAULT_KEY_BINDINGS: dict[str, list[str]] = {
    "env:ANTHROPIC_API_KEY": ["https://api.anthropic.com"],
    "env:OPENAI_API_KEY": ["https://api.openai.com/v1"],
}

# Strict on purpose: the host must be literally a loopback name or address, with no
# user-info, query or fragment that could make a client connect somewhere else.
_LOOPBACK = re.compile(
    r"https?://(localhost|127(?:\.\d{1,3}){3}|\[::1\])(?::\d{1,5})?(?:/[A-Za-z0-9._~\-/%]*)?",
    re.IGNORECASE,
)


def normalise_base_url(url: str) -> str:
    """``url`` without surrounding blanks and trailing slashes (how base URLs compare)."""
    return url.strip().rstrip("/")


def is_loopback_url(url: str) -> bool:
    """True when ``url`` is an http(s) URL whose host is loopback (127.0.0.0/8,
    ``localhost``, ``[::1]``), with an optional port and path and nothing else."""
    match = _LOOPBACK.fullmatch(normalise_base_url(url))
    if match is None:
        return False
    host = match.group(1)
    if host.lower() == "localhost" or host == "[::1]":
        return True
    try:  # 127.300.1.1 is no address: a resolver would look it up by name
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _unique(urls: Iterable[str]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for url in urls:
        seen.setdefault(normalise_base_url(url), None)
    return tuple(u for u in seen if u)


@dataclass(frozen=True, kw_only=True)
class KeyPolicy:
    """What a tier changed from the browser may use (see the module docstring).

    ``bindings`` maps each reference the browser may choose to the (normalised) base URLs
    its key may be sent to; ``keyless_urls`` are the admin's ``allowed_base_urls``;
    ``allowed_models`` the admin's model globs (empty: any model).
    """

    bindings: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    keyless_urls: tuple[str, ...] = ()
    allow_loopback: bool = True
    allowed_models: tuple[str, ...] = ()

    @classmethod
    def from_traits(
        cls,
        *,
        key_bindings: Mapping[str, Sequence[str]],
        allowed_key_refs: Sequence[str] | None,
        allowed_base_urls: Sequence[str],
        allow_loopback: bool,
        allowed_models: Sequence[str] = (),
    ) -> tuple[KeyPolicy, list[str]]:
        """Build the policy from the ``JupyterAgent`` traits; also the warnings to log.

        ``allowed_key_refs`` None means "every reference of ``key_bindings``".
        """
        warnings: list[str] = []
        keyless = _unique(allowed_base_urls)
        if allowed_key_refs is None:
            refs = list(key_bindings)
        else:
            refs = list(dict.fromkeys(allowed_key_refs))
        bindings: dict[str, tuple[str, ...]] = {}
        for ref in refs:
            if ref in key_bindings:
                bindings[ref] = _unique(key_bindings[ref])
            else:
                bindings[ref] = keyless
                warnings.append(
                    f"JupyterAgent.allowed_key_refs lists {ref}, which has no entry in "
                    f"JupyterAgent.key_bindings: it is bound to every allowed_base_urls "
                    f"entry ({', '.join(keyless) or 'none'}); set key_bindings to narrow it"
                )
        models = tuple(dict.fromkeys(m.strip() for m in allowed_models if m.strip()))
        policy = cls(
            bindings=bindings,
            keyless_urls=keyless,
            allow_loopback=allow_loopback,
            allowed_models=models,
        )
        return policy, warnings

    def refs(self) -> list[str]:
        """The references the browser may choose, in the admin's order."""
        return list(self.bindings)

    def allowed_urls(self) -> list[str]:
        """Every URL a keyless tier may use besides loopback: keyless and bound URLs."""
        bound = (url for urls in self.bindings.values() for url in urls)
        return list(_unique([*self.keyless_urls, *bound]))

    def model_problem(self, provider: str, model: str) -> str | None:
        """Why a browser tier may not name ``model`` of ``provider``, or None.

        Allowed when ``allowed_models`` is empty or one glob matches: ``PROVIDER:GLOB``
        matches that provider's models, a bare ``GLOB`` any provider's. Matching is
        case-sensitive (model ids are). The reason starts with ``model not allowed``.
        """
        if not self.allowed_models:
            return None
        for entry in self.allowed_models:
            want_provider, sep, glob = entry.partition(":")
            if not sep:
                want_provider, glob = "", entry
            if want_provider and want_provider != provider:
                continue
            if fnmatch.fnmatchcase(model, glob):
                return None
        return (
            f"model not allowed: {provider}:{model[:80]} is not one of the admin's models "
            f"(JupyterAgent.allowed_models): {', '.join(self.allowed_models)}"
        )

    def check(self, ref: str | None, url: str) -> str | None:
        """Why a tier with key reference ``ref`` may not use base URL ``url``, or None.

        The reason names the reference and the URL (never a key value) and starts with
        ``key reference not allowed`` or ``base URL not allowed``.
        """
        url = normalise_base_url(url)
        if ref is not None:
            if ref not in self.bindings:
                return (
                    f"key reference not allowed: {ref} is not one of the admin's key "
                    f"references (JupyterAgent.key_bindings): {', '.join(self.refs()) or 'none'}"
                )
            bound = self.bindings[ref]
            if url in bound:
                return None
            return (
                f"base URL not allowed: the key {ref} is bound to "
                f"{', '.join(bound) or 'no URL'} and is never sent to {url} "
                "(JupyterAgent.key_bindings)"
            )
        if url in self.allowed_urls():
            return None
        if is_loopback_url(url):
            if self.allow_loopback:
                return None
            return (
                f"base URL not allowed: {url} is a loopback URL and the admin turned "
                "JupyterAgent.allow_loopback_base_urls off"
            )
        return (
            f"base URL not allowed: {url} is not one of the admin's allowed base URLs "
            f"(JupyterAgent.allowed_base_urls, key_bindings): "
            f"{', '.join(self.allowed_urls()) or 'none'}"
            + (" or a loopback URL" if self.allow_loopback else "")
        )

    def to_json(self) -> dict[str, Any]:
        """The policy as ``GET agent/settings`` reports it (references and URLs only)."""
        return {
            "allowed_key_refs": self.refs(),
            "allowed_base_urls": self.allowed_urls(),
            "key_bindings": {ref: list(urls) for ref, urls in self.bindings.items()},
            "allow_loopback_base_urls": self.allow_loopback,
            "allowed_models": list(self.allowed_models),
        }
