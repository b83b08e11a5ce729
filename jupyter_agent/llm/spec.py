"""The request spec: one model call as data, before any credential is added.

An adapter builds a :class:`RequestSpec`; the loop yields it as the data of an
``http.post`` effect (so it is recorded); the transport resolves ``credential_ref`` and adds
the credential header only after that, so a key never enters the log.

``wire`` names the reply format the transport must assemble when streaming:
``anthropic`` (Messages API), ``openai-chat`` (Chat Completions, also OpenAI-compatible
servers) or ``openai-responses`` (Responses API).

Both types' JSON comes from their declarations through :mod:`jupyter_agent.codec` (fields in
wire order); ``deadline_s`` is a float on the wire.

:class:`RequestParams` is what every adapter's ``build_request`` takes: one model call as
the loop asks for it, before any wire is chosen. :data:`IMAGE_TYPES` are the image media
types every wire carries as images (other files go as documents or text).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from jupyter_agent.codec import dump_dict, load

if TYPE_CHECKING:
    from jupyter_agent.llm.tiers import Tier
    from jupyter_agent.messages import Message
    from jupyter_agent.tools import ToolSpec

__all__ = [
    "IMAGE_TYPES",
    "WIRES",
    "HttpReply",
    "RequestParams",
    "RequestSpec",
    "Wire",
    "encode_body",
]

IMAGE_TYPES: Final = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})

Wire = Literal["anthropic", "openai-chat", "openai-responses"]
WIRES: frozenset[str] = frozenset({"anthropic", "openai-chat", "openai-responses"})


@dataclass(frozen=True, kw_only=True)
class RequestParams:
    """One model call's parameters, for an adapter's ``build_request``.

    ``tools`` are offered to the model; with ``tool_choice_none`` they are only declared
    (the history names them) and may not be called. ``max_tokens`` None means the profile's
    ``max_output``. ``stream`` asks the provider to stream (the transport assembles it).
    ``history``: ``messages[:history]`` are the chat's earlier turns, the prefix that stays
    the same from one turn to the next (an adapter may end a cache breakpoint there; 0:
    not marked).
    """

    messages: Sequence[Message]
    system: str
    tier: Tier
    tools: Sequence[ToolSpec] = ()
    stream: bool = True
    max_tokens: int | None = None
    tool_choice_none: bool = False
    history: int = 0


@dataclass(frozen=True, kw_only=True)
class RequestSpec:
    """One HTTP POST to a model provider, minus the credential.

    ``headers`` must not hold a credential; the transport adds
    ``{credential_header: credential_prefix + key}`` once ``credential_ref`` is resolved.
    ``credential_ref`` is ``env:NAME`` or None (no credential, e.g. a local server).
    """

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    json: dict[str, Any]
    wire: Wire
    credential_ref: str | None = None
    credential_header: str = "authorization"
    credential_prefix: str = "Bearer "
    stream: bool = False
    deadline_s: float = 300.0

    def to_intent(self) -> dict[str, Any]:
        """The ``http.post`` intent data (JSON, no secret)."""
        return dump_dict(self)

    @classmethod
    def from_intent(cls, data: dict[str, Any]) -> RequestSpec:
        """Inverse of :meth:`to_intent`; ValueError on an unknown ``wire``."""
        return load(cls, data)


@dataclass(frozen=True, kw_only=True)
class HttpReply:
    """The ``http.post`` result: the final status, the (assembled) JSON body, every attempt.

    ``attempts`` holds one entry per try: ``{"status": int | None, "error": str | None,
    "wait_s": float}``. For a streamed call ``json`` is the assembled reply, the same shape
    the provider returns without streaming.
    """

    status: int
    json: Any
    attempts: tuple[dict[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return dump_dict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> HttpReply:
        return load(cls, data)


def encode_body(body: Any) -> bytes:
    """The bytes a request's JSON body is sent as: ``json.dumps`` (ASCII) as UTF-8. Encoded
    once per call and shared by whoever must read it before it is sent (the secret check)."""
    return json.dumps(body).encode()
