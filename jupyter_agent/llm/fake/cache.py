"""Prompt-cache emulation for the fake provider: cache hits are measured, not assumed.

A :class:`PrefixCache` remembers, per *(model, chat)*, the request prefixes the fake has
answered, and says for a new request how many of its tokens the longest such prefix holds:
that is the reply's ``cache_read`` (Anthropic ``cache_read_input_tokens``; Chat Completions
and Responses ``cached_tokens``), the rest of the request being ``in``.

The rule (deterministic, no clock):

- A request is a sequence of *units* compared byte for byte: first its header (the tools
  and the system block: Anthropic ``system``, Responses ``instructions``; Chat Completions
  carries its system prompt as the first message), then each message (Anthropic / Chat
  ``messages``, Responses ``input`` items). A unit is its JSON text
  (``json.dumps(..., separators=(",", ":"), ensure_ascii=False)``, key order as sent) with
  every ``cache_control`` field removed: a breakpoint marks where a cache may end, it is
  not part of the cached content (the marker moves from turn to turn on the real API too).
- The cached prefix is the most leading units equal to the leading units of a request
  answered before under the same key; its tokens are the sum of
  :func:`~jupyter_agent.core.tokens.count_tokens` of those units' JSON texts.
- The key is the model and the chat: the chat id the system prompt states
  (``- Chat id: ...``, :mod:`jupyter_agent.core.loop.prompt`), else the header itself (two
  requests with different system blocks share no prefix anyway).
- Only answered requests are remembered (an error reply caches nothing, as on the real
  APIs). Memory is bounded: the oldest prefixes are forgotten past :data:`MAX_PREFIXES`.

Unlike Anthropic (hits only at ``cache_control`` breakpoints, at least 1024 tokens) this is
OpenAI's automatic rule, longest prefix at message granularity: an upper bound of what a
breakpoint-based cache reads for the same requests, which is what a layout is judged by.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from typing import Any, Final

__all__ = ["MAX_PREFIXES", "PrefixCache", "request_units"]


def count_tokens(text: str) -> int:
    """The project's fixed counter (``core.tokens``: a token per 4 characters, rounded up),
    restated here: ``llm`` must not import ``core`` (``core`` imports ``llm``)."""
    return -(-len(text) // 4)


#: Prefixes remembered in all (oldest forgotten first).
MAX_PREFIXES: Final = 200_000

_CHAT_ID = re.compile(r"Chat id: ([\w-]+)")


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _text(value: Any) -> str:
    return json.dumps(_strip(value), separators=(",", ":"), ensure_ascii=False)


def request_units(wire: str, body: dict[str, Any]) -> list[str]:
    """The JSON texts a request's prefix is compared by: header, then each message."""
    header: dict[str, Any] = {"tools": body.get("tools")}
    if wire == "anthropic":
        header["system"] = body.get("system")
        messages = body.get("messages")
    elif wire == "openai-responses":
        header["instructions"] = body.get("instructions")
        messages = body.get("input")
        if isinstance(messages, str):
            messages = [{"role": "user", "content": messages}]
    else:
        messages = body.get("messages")
    return [_text(header), *(_text(m) for m in (messages if isinstance(messages, list) else ()))]


def _chat_key(units: list[str]) -> str:
    # The system prompt is in the header (Anthropic, Responses) or the first message (Chat).
    for unit in units[:2]:
        found = _CHAT_ID.search(unit)
        if found:
            return "chat:" + found.group(1)
    return "header:" + hashlib.sha256(units[0].encode("utf-8", "surrogatepass")).hexdigest()


class PrefixCache:
    """The prefixes served, per (model, chat); thread-safe. See the module docstring."""

    def __init__(self, max_prefixes: int = MAX_PREFIXES) -> None:
        self._max = max_prefixes
        self._lock = threading.Lock()
        # (model, chat key, chained digest of the leading units) -> their tokens
        self._seen: OrderedDict[tuple[str, str, bytes], int] = OrderedDict()

    def serve(self, wire: str, body: dict[str, Any]) -> int:
        """The tokens of the longest prefix of ``body`` answered before under its key, and
        remember all of ``body``'s prefixes (call it for a request that is answered)."""
        units = request_units(wire, body)
        model, chat = str(body.get("model", "")), _chat_key(units)
        chain: list[tuple[tuple[str, str, bytes], int]] = []
        digest, tokens = b"", 0
        for unit in units:
            digest = hashlib.sha256(digest + unit.encode("utf-8", "surrogatepass")).digest()
            tokens += count_tokens(unit)
            chain.append(((model, chat, digest), tokens))
        with self._lock:
            cached = 0
            for key, upto in chain:
                if key not in self._seen:
                    break
                cached = upto
            for key, upto in chain:
                self._seen[key] = upto
                self._seen.move_to_end(key)
            while len(self._seen) > self._max:
                self._seen.popitem(last=False)
        return cached
