"""OpenAI-compatible servers (vLLM, Ollama, llama.cpp, OpenRouter, ...). Pure.

The Chat Completions wire at ``{base_url}/chat/completions`` (see :mod:`.openai`), with
what these servers need:

- The key is optional: a tier without ``api_key_ref`` sends no credential.
- The system prompt always uses role ``system``; the output cap is ``max_tokens`` (older
  servers do not know ``max_completion_tokens``); no ``reasoning_effort``; PDFs become a
  note (few servers read them).
- ``stop`` is sent only in a text tool mode and only when the profile says the model
  supports stop sequences.
- Context window: sent at the profile's ``num_ctx_param`` (a dotted path, e.g.
  ``options.num_ctx``) when set. Otherwise, a ``base_url`` on port 11434 (Ollama's default)
  is taken to be Ollama and gets ``options.num_ctx`` = the profile's context window, since
  Ollama otherwise truncates the prompt to its small default context. (Recent Ollama
  versions may ignore it on the OpenAI-compatible route; a Modelfile ``num_ctx`` or
  ``OLLAMA_CONTEXT_LENGTH`` is the server-side fix. Sending it is harmless.)

Replies: ``reasoning_content`` (vLLM, DeepSeek, llama.cpp) or ``reasoning`` (OpenRouter,
Ollama) becomes a Thinking part with text and no provider state (these servers do not take
it back); a reply whose content opens with ``<think>...</think>`` (R1-style models served
raw) is split the same way.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from jupyter_agent.llm.openai import build_chat_body, parse_chat_reply
from jupyter_agent.llm.spec import RequestParams, RequestSpec
from jupyter_agent.messages import LLMReply, Thinking

if TYPE_CHECKING:
    from jupyter_agent.llm.tiers import Tier

__all__ = ["OLLAMA_PORT", "build_request", "num_ctx_path", "parse_reply"]

OLLAMA_PORT = 11434
_THINK = re.compile(r"^\s*<think>(.*?)</think>\s*", re.DOTALL)


def num_ctx_path(tier: Tier) -> str | None:
    """Where the context window goes in the body, or None (see the module doc)."""
    if tier.profile.num_ctx_param:
        return tier.profile.num_ctx_param
    try:
        port = urlsplit(tier.base_url).port
    except ValueError:
        port = None
    return "options.num_ctx" if port == OLLAMA_PORT else None


def build_request(params: RequestParams) -> RequestSpec:
    """The Chat Completions request for an OpenAI-compatible server."""
    tier, stream = params.tier, params.stream
    body = build_chat_body(params, compatible=True)
    path = num_ctx_path(tier)
    if path:
        *parents, leaf = path.split(".")
        node = body
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = tier.profile.context_window
    return RequestSpec(
        url=f"{tier.base_url}/chat/completions",
        json=body,
        wire="openai-chat",
        credential_ref=tier.api_key_ref,
        credential_header="authorization",
        credential_prefix="Bearer ",
        stream=stream,
    )


def parse_reply(body: dict[str, Any]) -> LLMReply:
    """An LLMReply from a compatible server's chat completion, reasoning split out."""
    thinking: list[Thinking] = []
    try:
        message = body["choices"][0].get("message") or {}
    except (KeyError, IndexError, TypeError, AttributeError):
        return parse_chat_reply(body)  # raises the protocol error
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        thinking.append(Thinking(text=reasoning))
    content = message.get("content")
    if isinstance(content, str):
        m = _THINK.match(content)
        if m:
            if m.group(1).strip():
                thinking.append(Thinking(text=m.group(1).strip()))
            choice = {**body["choices"][0], "message": {**message, "content": content[m.end() :]}}
            body = {**body, "choices": [choice]}
    return parse_chat_reply(body, thinking=thinking)
