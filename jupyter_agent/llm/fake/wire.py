"""Rendering a fake script step in each provider's real wire format (JSON and SSE).

Pure code used by :mod:`jupyter_agent.llm.fake.server`. A step becomes a :class:`Plan` (blocks,
stop, usage); the plan is rendered as the non-streamed JSON body of ``anthropic``
(Messages), ``openai-chat`` (Chat Completions) or ``openai-responses`` (Responses);
:mod:`jupyter_agent.llm.fake.sse` cuts that body into the wire's SSE frames. Also here: the
real error bodies, and the checks of a request (``expect``, thinking round trips).

Thinking round trips: Anthropic signatures and Responses ``encrypted_content`` are derived
from the thinking text with an HMAC under a per-server secret (:class:`Signer`), so the fake
can tell byte-exact whether a later request sent them back unaltered.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import secrets
import time
from dataclasses import dataclass
from typing import Any

from jupyter_agent.llm.fake.script import Step

__all__ = [
    "Plan",
    "Signer",
    "check_expect",
    "check_thinking",
    "error_body",
    "make_plan",
    "render_json",
]

_STOP = {
    "anthropic": {"done": "end_turn", "tool": "tool_use", "length": "max_tokens"},
    "openai-chat": {"done": "stop", "tool": "tool_calls", "length": "length"},
}
_ANTHROPIC_ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_OPENAI_ERRORS = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


class Signer:
    """Derives thinking signatures / encrypted reasoning from the text, and checks them."""

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or secrets.token_bytes(32)

    def _mac(self, text: str) -> bytes:
        # surrogatepass: a scripted thinking text may hold a lone surrogate (half an emoji)
        return hmac.new(
            self._secret, text.encode("utf-8", "surrogatepass"), hashlib.sha256
        ).digest()

    def sign(self, text: str) -> str:
        return base64.b64encode(b"\x12\x08fake" + self._mac(text)).decode()

    def verify(self, text: str, signature: str) -> bool:
        return hmac.compare_digest(self.sign(text), signature)

    def seal(self, text: str) -> str:
        raw = text.encode("utf-8", "surrogatepass")
        return "gAAAAA" + base64.urlsafe_b64encode(self._mac(text) + raw).decode()

    def unseal_ok(self, sealed: str) -> bool:
        try:
            raw = base64.urlsafe_b64decode(sealed.removeprefix("gAAAAA").encode())
            return hmac.compare_digest(
                raw[:32], self._mac(raw[32:].decode("utf-8", "surrogatepass"))
            )
        except (ValueError, UnicodeDecodeError):
            return False


@dataclass(frozen=True)
class Plan:
    """What one reply says, independent of the wire."""

    blocks: tuple[
        tuple[str, Any, Any], ...
    ]  # ("thinking"|"text", text, None) or ("tool", name, args)
    stop: str
    usage: dict[str, int]
    model: str


def _tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))


def make_plan(step: Step, request: dict[str, Any], *, cache_read: int | None = None) -> Plan:
    """The blocks of ``step``; usage defaults are computed from the request and reply size.

    ``cache_read`` (prefix caching emulated, :mod:`~jupyter_agent.llm.fake.cache`): the
    request's tokens read from the cache; they are reported as ``cache_read`` and taken off
    ``in``, unless the step's ``usage`` gives ``in`` or ``cache_read`` itself (a scripted
    usage wins)."""
    blocks: list[tuple[str, Any, Any]] = []
    if step.thinking:
        blocks.append(("thinking", step.thinking, None))
    text = step.text or ""
    if step.tool_mode == "native":
        more = {"writes": True} if step.writes else {}
        blocks += [("tool", "run_cell", {"code": c, **more}) for c in step.cells]
        blocks += [("tool", "bash", {"command": c, **more}) for c in step.bash]
    else:
        for tool, items in (("run_cell", step.cells), ("bash", step.bash)):
            for code in items:
                if step.tool_mode == "fenced":
                    lang = "python" if tool == "run_cell" else "bash"
                    text += f"\n\n```{lang}\n{code}\n```"
                else:
                    text += f"\n\n<{tool}>\n{code}\n</{tool}>"
        text = text.strip()
    if text:
        blocks.insert(1 if step.thinking else 0, ("text", text, None))
    sized = {k: v for k, v in request.items() if k not in ("stream", "stream_options")}
    out_chars = sum(len(json.dumps(b[2])) if b[0] == "tool" else len(b[1]) for b in blocks)
    usage = {
        "in": _tokens(json.dumps(sized)),
        "out": max(1, math.ceil(out_chars / 4)),
        "cache_read": 0,
        "cache_write": 0,
        "reasoning": _tokens(step.thinking) if step.thinking else 0,
    }
    if cache_read is not None and not {"in", "cache_read"} & set(step.usage):
        usage["cache_read"] = min(cache_read, usage["in"])
        usage["in"] -= usage["cache_read"]
    usage.update(step.usage)
    return Plan(tuple(blocks), step.effective_stop, usage, str(request.get("model", "fake")))


def _id(prefix: str) -> str:
    return prefix + secrets.token_hex(12)


# ---------------------------------------------------------------- non-streamed bodies


def _usage(wire: str, u: dict[str, int]) -> dict[str, Any]:
    if wire == "anthropic":
        return {
            "input_tokens": u["in"],
            "cache_creation_input_tokens": u["cache_write"],
            "cache_read_input_tokens": u["cache_read"],
            "output_tokens": u["out"],
        }
    prompt = u["in"] + u["cache_read"] + u["cache_write"]
    if wire == "openai-chat":
        return {
            "prompt_tokens": prompt,
            "completion_tokens": u["out"],
            "total_tokens": prompt + u["out"],
            "prompt_tokens_details": {"cached_tokens": u["cache_read"]},
            "completion_tokens_details": {"reasoning_tokens": u["reasoning"]},
        }
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": u["cache_read"]},
        "output_tokens": u["out"],
        "output_tokens_details": {"reasoning_tokens": u["reasoning"]},
        "total_tokens": prompt + u["out"],
    }


def _anthropic_blocks(plan: Plan, signer: Signer) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for kind, a, b in plan.blocks:
        if kind == "thinking":
            out.append({"type": "thinking", "thinking": a, "signature": signer.sign(a)})
        elif kind == "text":
            out.append({"type": "text", "text": a})
        else:
            out.append({"type": "tool_use", "id": _id("toolu_"), "name": a, "input": b})
    return out


def _chat_message(plan: Plan) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
    calls = []
    for kind, a, b in plan.blocks:
        if kind == "thinking":
            message["reasoning_content"] = a
        elif kind == "text":
            message["content"] = a
        else:
            function = {"name": a, "arguments": json.dumps(b)}
            calls.append({"id": _id("call_"), "type": "function", "function": function})
    if calls:
        message["tool_calls"] = calls
    return message


def _responses_items(plan: Plan, signer: Signer, sealed: bool) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for kind, a, b in plan.blocks:
        if kind == "thinking":
            item: dict[str, Any] = {"id": _id("rs_"), "type": "reasoning"}
            item["summary"] = [{"type": "summary_text", "text": a}]
            if sealed:
                item["encrypted_content"] = signer.seal(a)
            items.append(item)
        elif kind == "text":
            part = {"type": "output_text", "text": a, "annotations": []}
            items.append(
                {
                    "id": _id("msg_"),
                    "type": "message",
                    "status": "completed",
                    "role": "assistant",
                    "content": [part],
                }
            )
        else:
            items.append(
                {
                    "id": _id("fc_"),
                    "type": "function_call",
                    "status": "completed",
                    "call_id": _id("call_"),
                    "name": a,
                    "arguments": json.dumps(b),
                }
            )
    return items


def render_json(wire: str, plan: Plan, request: dict[str, Any], signer: Signer) -> dict[str, Any]:
    """The non-streamed reply body of ``wire``."""
    usage = _usage(wire, plan.usage)
    if wire == "anthropic":
        return {
            "id": _id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": plan.model,
            "content": _anthropic_blocks(plan, signer),
            "stop_reason": _STOP[wire][plan.stop],
            "stop_sequence": None,
            "usage": usage,
        }
    if wire == "openai-chat":
        choice = {
            "index": 0,
            "message": _chat_message(plan),
            "logprobs": None,
            "finish_reason": _STOP[wire][plan.stop],
        }
        return {
            "id": _id("chatcmpl-"),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": plan.model,
            "choices": [choice],
            "usage": usage,
            "system_fingerprint": "fp_fake",
        }
    sealed = "reasoning.encrypted_content" in (request.get("include") or [])
    incomplete = plan.stop == "length"
    return {
        "id": _id("resp_"),
        "object": "response",
        "created_at": int(time.time()),
        "status": "incomplete" if incomplete else "completed",
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "model": plan.model,
        "output": _responses_items(plan, signer, sealed),
        "parallel_tool_calls": True,
        "usage": usage,
    }


# ---------------------------------------------------------------- errors and checks


def error_body(wire: str, status: int, kind: str | None, message: str) -> dict[str, Any]:
    """The provider's real error shape for ``status``."""
    if wire == "anthropic":
        default = _ANTHROPIC_ERRORS.get(status, "api_error")
        return {"type": "error", "error": {"type": kind or default, "message": message}}
    default_type, code = _OPENAI_ERRORS.get(status, ("server_error", None))
    error = {"message": message, "type": kind or default_type, "param": None, "code": code}
    return {"error": error}


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        skip = ("type", "role", "id", "call_id", "tool_use_id", "signature", "encrypted_content")
        return [s for k, v in value.items() if k not in skip for s in _strings(v)]
    return []


def _turns(wire: str, request: dict[str, Any]) -> list[Any]:
    if wire == "openai-responses":
        value = request.get("input")
        return [{"role": "user", "content": value}] if isinstance(value, str) else list(value or [])
    return list(request.get("messages") or [])


def _last_user_turn(wire: str, request: dict[str, Any]) -> list[Any]:
    """What the user side sent since the model last spoke: the last user message, or the
    tool results after the last assistant turn (chat ``tool`` messages, Responses
    ``function_call_output`` items), with their text."""
    trailing: list[Any] = []
    for turn in reversed(_turns(wire, request)):
        if not isinstance(turn, dict):
            continue
        if turn.get("role") == "assistant" or turn.get("type") in ("function_call", "reasoning"):
            break
        if turn.get("role") in ("system", "developer"):
            continue
        trailing.insert(0, {k: v for k, v in turn.items() if k in ("content", "output")})
    return trailing


def check_expect(step: Step, wire: str, request: dict[str, Any]) -> str | None:
    """Why ``request`` does not match the step's ``expect``, or None when it does."""
    want = step.expect
    if "model" in want and request.get("model") != want["model"]:
        return f"expected model {want['model']!r}, got {request.get('model')!r}"
    if "last_user_contains" in want:
        text = "\n".join(_strings(_last_user_turn(wire, request)))
        if want["last_user_contains"] not in text:
            return f"expected the last user message to contain {want['last_user_contains']!r}"
    if "system_contains" in want:
        if wire == "anthropic":
            system = _strings(request.get("system"))
        else:
            roles = ("system", "developer")
            turns = [
                m for m in _turns(wire, request) if isinstance(m, dict) and m.get("role") in roles
            ]
            system = _strings(request.get("instructions")) + _strings(
                [m.get("content") for m in turns]
            )
        if want["system_contains"] not in "\n".join(system):
            return f"expected the system prompt to contain {want['system_contains']!r}"
    return None


def check_roles(wire: str, request: dict[str, Any]) -> str | None:
    """Why the request's messages break the wire's role rules, or None when they do not.

    Anthropic's Messages API refuses a request whose first message is not the user's
    (strict chat templates of local models do too); the message is the API's own.
    """
    if wire != "anthropic":
        return None
    messages = request.get("messages")
    if isinstance(messages, list) and messages:
        first = messages[0]
        if not isinstance(first, dict) or first.get("role") != "user":
            return 'messages: first message must use the "user" role'
    return None


def check_thinking(wire: str, request: dict[str, Any], signer: Signer) -> str | None:
    """Why a thinking block / reasoning item sent back was altered, or None if intact."""
    for turn in _turns(wire, request):
        if not isinstance(turn, dict):
            continue
        if wire == "openai-responses":
            sealed = turn.get("encrypted_content")
            if (
                turn.get("type") == "reasoning"
                and sealed is not None
                and not signer.unseal_ok(sealed)
            ):
                return "The encrypted content for item could not be verified."
            continue
        content = turn.get("content")
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict) or block.get("type") != "thinking":
                continue
            if not signer.verify(str(block.get("thinking", "")), str(block.get("signature", ""))):
                return "Invalid `signature` in `thinking` block"
    return None
