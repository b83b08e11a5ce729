"""The model-call transport: performs one ``http.post`` effect (the only model-path httpx user).

Contract of :meth:`Transport.post`:

- The caller has already recorded the :class:`~jupyter_agent.llm.spec.RequestSpec` (the
  intent). Only then does ``post`` resolve ``credential_ref`` (``env:NAME``) and add
  ``{credential_header: credential_prefix + key}``; an unresolvable ref raises
  :class:`~jupyter_agent.exceptions.CredentialError` before any HTTP call.
- Retries 408, 409, 429, 5xx (incl. 529) and a failed connection or a timed-out attempt,
  with jittered exponential backoff; ``retry-after-ms`` / ``retry-after`` (seconds or an
  HTTP date) are honoured up to ``retry_after_cap_s``, and a longer one fails at once with
  :class:`~jupyter_agent.exceptions.RetryAfterTooLong`. 400, 401, 403, 404, 413, 422 (and
  any other status) fail at once with :class:`~jupyter_agent.exceptions.ProviderStatusError`.
  ``on_retry`` is called before each backoff sleep. Every attempt is listed in
  ``HttpReply.attempts`` and in the errors' ``attempts``.
- ``spec.deadline_s`` bounds all attempts and sleeps together
  (:class:`~jupyter_agent.exceptions.ProviderTimeout`). Cancelling the awaiting task aborts
  the request in flight and lets ``CancelledError`` propagate.
- ``spec.stream``: the SSE reply is assembled (:mod:`jupyter_agent.llm.streams`) into the
  body the provider returns without streaming (:class:`~jupyter_agent.llm.sse.StreamReader`,
  linear in the stream's size); text deltas go to ``on_delta``. An error
  event before any delta was forwarded is retried when it means overload or a rate limit;
  after a delta was forwarded any failure is final (never a half reply).
- The reply's text is valid Unicode: a lone surrogate in the body (JSON's ``"\\ud83d"``,
  half an emoji) becomes U+FFFD as it is decoded (:func:`jupyter_agent.text.repair_json`;
  a streamed body is repaired by its assembler), so what is recorded, stored and sent back
  can be encoded. A body too deeply nested to decode is a protocol error, like bad JSON.
- Errors carry the status and a redacted, size-capped body; no error, attempt entry or log
  line ever holds the key or a request header.

Connections: one long-lived client (connection pool) per provider origin, shared by every
run and closed by :meth:`Transport.aclose` (:mod:`jupyter_agent.llm.pools`; a loopback
origin never goes through a proxy).

:class:`Transport` is configurable (``c.Transport.retry_after_cap_s = 30`` in a
``jupyter_server_config.py``); the extension app passes it the server's config. The
per-call deadline is the request's own (``spec.deadline_s``, capped by the run's
``model_deadline_s``); the transport's traits shape the retries and the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import importlib
import json
import logging
import os
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from traitlets import Float, Int, TraitError, validate
from traitlets.config import LoggingConfigurable

from jupyter_agent.exceptions import (
    CredentialError,
    ProviderError,
    ProviderProtocolError,
    ProviderStatusError,
    ProviderTimeout,
    RetryAfterTooLong,
)
from jupyter_agent.llm.pools import (
    POOL_KEEPALIVE,
    POOL_KEEPALIVE_S,
    POOL_MAX_CONNECTIONS,
    ClientPools,
    tls_context,
)
from jupyter_agent.llm.spec import HttpReply, RequestSpec, encode_body
from jupyter_agent.llm.sse import StreamReader
from jupyter_agent.llm.streams import StreamErrorEvent
from jupyter_agent.text import repair, repair_json

if TYPE_CHECKING:
    import httpx

__all__ = ["RetryInfo", "Transport", "resolve_credential"]

logger = logging.getLogger("jupyter_agent.llm.transport")

# asyncio.timeout (3.11+) bounds the call in the caller's task; wait_for needs a task more.
_timeout: Callable[[float | None], contextlib.AbstractAsyncContextManager[None]] | None = getattr(
    asyncio, "timeout", None
)

RETRY_STATUSES = frozenset({408, 409, 429})
RETRY_STREAM_ERRORS = frozenset(
    {"overloaded_error", "rate_limit_error", "rate_limit_exceeded", "overloaded"}
)
BODY_CAP = 4096


@dataclass(frozen=True)
class RetryInfo:
    """One retry about to happen: the failed ``attempt`` (1-based), why, how long we wait."""

    attempt: int
    status: int | None
    error: str | None
    wait_s: float


def resolve_credential(ref: str | None, env: Mapping[str, str]) -> str | None:
    """The key named by ``ref`` (``env:NAME``), None when ``ref`` is None.

    Raises CredentialError naming the reference (never a value) when it is unsupported or
    the variable is unset or empty.
    """
    if ref is None:
        return None
    scheme, _, name = ref.partition(":")
    if scheme != "env" or not name:
        raise CredentialError(f"unsupported credential reference {ref!r} (use env:NAME)")
    value = (env.get(name) or "").strip()
    if not value:
        raise CredentialError(f"credential {ref!r} is not set")
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in value):
        # An HTTP library would refuse the header and echo the value (escaped, so no
        # redaction would match it) in its error: refuse it here, naming only the ref.
        raise CredentialError(f"credential {ref!r} contains whitespace or control characters")
    return value


@dataclass
class _Redactor:
    secret: str | None

    def text(self, value: str) -> str:
        if self.secret:
            # the value as sent, and as an exception may show it (escaped in a bytes repr)
            for form in {self.secret, repr(self.secret.encode())[2:-1]}:
                if form in value:
                    value = value.replace(form, "[REDACTED]")
        return value

    def value(self, value: Any) -> Any:
        # Error bodies are recorded and shown too: valid Unicode, like a reply's.
        if isinstance(value, str):
            return self.text(repair(value))
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            return {self.text(repair(str(k))): self.value(v) for k, v in value.items()}
        return value

    def body(self, raw: bytes) -> Any:
        """A provider body, redacted and capped: parsed JSON when small enough, else text."""
        text = self.text(raw.decode("utf-8", "replace"))
        if len(text) <= BODY_CAP:
            try:
                return self.value(json.loads(text))
            except (json.JSONDecodeError, RecursionError):
                return text
        return text[:BODY_CAP] + f"...[truncated {len(text) - BODY_CAP} chars]"


@dataclass
class _Outcome:
    """What one attempt gave: a body (success), or a failure that may be retried."""

    body: Any = None
    status: int | None = None
    error: str | None = None
    error_body: Any = None
    retry_after: float | None = None
    retryable: bool = False
    exc_type: type[ProviderError] = ProviderStatusError
    ok: bool = False


def _retry_after(headers: httpx.Headers) -> float | None:
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@dataclass
class _Call:
    spec: RequestSpec
    headers: dict[str, str]
    content: bytes
    redact: _Redactor
    on_delta: Callable[[str], None] | None
    on_retry: Callable[[RetryInfo], None] | None
    attempts: list[dict[str, Any]] = field(default_factory=list)
    forwarded: bool = False


class Transport(LoggingConfigurable):
    """Posts model requests with retries, a deadline, streaming and redaction (see module).

    ``env`` is where credential references resolve (default: the server's ``os.environ``).
    The settings are traits, given as keyword arguments or through ``config`` / ``parent``.
    """

    retry_after_cap_s = Float(
        60.0,
        help=(
            "Longest wait in seconds honoured from a provider's retry-after header "
            "(a longer one fails the call at once)."
        ),
    ).tag(config=True)

    max_attempts = Int(
        5, min=1, help="Attempts of one model call (the first and its retries)."
    ).tag(config=True)

    backoff_base_s = Float(
        0.5,
        min=0.0,
        help="First retry's backoff in seconds (doubled per attempt; jitter: half to all of it).",
    ).tag(config=True)

    backoff_max_s = Float(
        8.0, min=0.0, help="Longest backoff in seconds between two attempts."
    ).tag(config=True)

    connect_timeout_s = Float(
        10.0,
        help="Seconds to open a connection to the provider (a timed-out attempt is retried).",
    ).tag(config=True)

    @validate("retry_after_cap_s", "connect_timeout_s")
    def _validate_positive(self, proposal: Mapping[str, Any]) -> float:
        """Durations must be positive."""
        value = float(proposal["value"])
        if not value > 0:
            raise TraitError(f"Transport.{proposal['trait'].name} must be > 0, not {value}")
        return value

    def __init__(self, *, env: Mapping[str, str] | None = None, **traits: Any) -> None:
        super().__init__(**traits)
        self._env = env
        self._pools: ClientPools[httpx.AsyncClient] = ClientPools(self._new_client)

    @staticmethod
    def preload() -> None:
        """Load what a first model call would load on the event loop (httpx, httpcore's
        asyncio backend, the TLS context). Blocking: a worker thread at the start."""
        importlib.import_module("httpx")
        importlib.import_module("httpcore._backends.anyio")
        importlib.import_module("anyio._backends._asyncio")
        tls_context()

    def _new_client(self, loopback: bool) -> httpx.AsyncClient:
        import httpx

        return httpx.AsyncClient(
            verify=tls_context(),
            trust_env=not loopback,  # loopback never goes through a proxy
            timeout=httpx.Timeout(None, connect=self.connect_timeout_s),
            limits=httpx.Limits(
                max_connections=POOL_MAX_CONNECTIONS,
                max_keepalive_connections=POOL_KEEPALIVE,
                keepalive_expiry=POOL_KEEPALIVE_S,
            ),
            follow_redirects=False,
        )

    def pools(self) -> tuple[str, ...]:
        """The provider origins this loop holds an open connection pool for."""
        return self._pools.origins()

    async def aclose(self) -> None:
        """Close the pools of the running loop (others are dropped with their loop)."""
        await self._pools.aclose()

    def _backoff(self, attempt: int) -> float:
        ceiling = min(self.backoff_max_s, self.backoff_base_s * 2.0 ** (attempt - 1))
        return ceiling * random.uniform(0.5, 1.0)

    async def post(
        self,
        spec: RequestSpec,
        *,
        on_delta: Callable[[str], None] | None = None,
        on_retry: Callable[[RetryInfo], None] | None = None,
        content: bytes | None = None,
    ) -> HttpReply:
        """Perform the call described by ``spec``; see the module docstring for the contract.

        ``content``: ``spec.json`` already encoded by :func:`encode_body` (a caller that
        encoded it to look at it), else it is encoded here, once for every attempt.
        """
        env = os.environ if self._env is None else self._env
        key = resolve_credential(spec.credential_ref, env)
        headers = {"content-type": "application/json", **spec.headers}
        if key is not None:
            headers[spec.credential_header] = spec.credential_prefix + key
        body = encode_body(spec.json) if content is None else content
        call = _Call(spec, headers, body, _Redactor(key), on_delta, on_retry)
        try:
            if _timeout is not None:  # no task of its own for the call (Python >= 3.11)
                async with _timeout(spec.deadline_s):
                    return await self._run(call)
            return await asyncio.wait_for(self._run(call), timeout=spec.deadline_s)
        except asyncio.TimeoutError:
            call.attempts.append({"status": None, "error": "deadline", "wait_s": 0.0})
            raise ProviderTimeout(
                f"no complete reply within the {spec.deadline_s:g} s deadline",
                attempts=list(call.attempts),
            ) from None

    async def _run(self, call: _Call) -> HttpReply:
        for attempt in range(1, self.max_attempts + 1):
            outcome = await self._attempt(call)
            entry: dict[str, Any] = {
                "status": outcome.status,
                "error": outcome.error,
                "wait_s": 0.0,
            }
            call.attempts.append(entry)
            if outcome.ok:
                return HttpReply(status=200, json=outcome.body, attempts=tuple(call.attempts))
            what = outcome.error or f"HTTP {outcome.status}"
            if not outcome.retryable or call.forwarded:
                raise outcome.exc_type(
                    f"provider call failed: {what}",
                    status=outcome.status,
                    body=outcome.error_body,
                    attempts=list(call.attempts),
                )
            if attempt == self.max_attempts:
                raise outcome.exc_type(
                    f"provider call failed after {attempt} attempts: {what}",
                    status=outcome.status,
                    body=outcome.error_body,
                    attempts=list(call.attempts),
                )
            wait = self._backoff(attempt)
            if outcome.retry_after is not None:
                if outcome.retry_after > self.retry_after_cap_s:
                    raise RetryAfterTooLong(
                        f"provider asked to retry after {outcome.retry_after:g} s, over the "
                        f"{self.retry_after_cap_s:g} s cap",
                        status=outcome.status,
                        body=outcome.error_body,
                        attempts=list(call.attempts),
                    )
                wait = outcome.retry_after
            entry["wait_s"] = round(wait, 3)
            info = RetryInfo(
                attempt=attempt, status=outcome.status, error=outcome.error, wait_s=wait
            )
            target = urlsplit(call.spec.url)
            logger.info(
                "retrying %s%s after %s (attempt %d of %d, waiting %.2f s)",
                call.redact.text(target.netloc),
                call.redact.text(target.path),
                what,
                attempt,
                self.max_attempts,
                wait,
            )
            if call.on_retry is not None:
                call.on_retry(info)
            await asyncio.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _attempt(self, call: _Call) -> _Outcome:
        import httpx  # loaded by then (the client is built): a dict lookup

        spec = call.spec
        client = self._pools.client(spec.url)
        try:
            async with client.stream(
                "POST", spec.url, content=call.content, headers=call.headers
            ) as response:
                if response.status_code >= 300:
                    return self._status_failure(call, response, await response.aread())
                if spec.stream and response.headers.get("content-type", "").startswith(
                    "text/event-stream"
                ):
                    return await self._read_stream(call, response)
                return self._parse_body(call, await response.aread())
        except (httpx.TimeoutException, httpx.TransportError) as exc:
            error = call.redact.text(f"{type(exc).__name__}: {exc}")[:300]
            return _Outcome(error=error, retryable=True, exc_type=ProviderError)
        except StreamErrorEvent as exc:
            retry = exc.error_type in RETRY_STREAM_ERRORS
            status = 429 if exc.error_type and "rate_limit" in exc.error_type else None
            return _Outcome(
                status=status,
                error=call.redact.text(f"stream error: {exc.error_type}"),
                error_body=call.redact.value(exc.body),
                retryable=retry,
                exc_type=ProviderProtocolError,
            )
        except ProviderProtocolError as exc:
            return _Outcome(
                status=200,
                error=call.redact.text(str(exc))[:300],
                error_body=call.redact.value(exc.body),
                exc_type=ProviderProtocolError,
            )

    def _status_failure(self, call: _Call, response: httpx.Response, raw: bytes) -> _Outcome:
        status = response.status_code
        retryable = status in RETRY_STATUSES or status >= 500
        return _Outcome(
            status=status,
            error=f"HTTP {status}",
            error_body=call.redact.body(raw),
            retry_after=_retry_after(response.headers) if retryable else None,
            retryable=retryable,
        )

    def _parse_body(self, call: _Call, raw: bytes) -> _Outcome:
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            raise ProviderProtocolError(
                "provider reply is not valid JSON", body=call.redact.body(raw)
            ) from None
        return _Outcome(body=repair_json(body), status=200, ok=True)

    async def _read_stream(self, call: _Call, response: httpx.Response) -> _Outcome:
        reader = StreamReader(call.spec.wire, on_delta=call.on_delta, redact=call.redact.text)
        try:
            # The bytes straight into the byte-level parser: no line or text decoding layer
            # between the socket and the events (nor a content decoder when none is needed).
            encoded = response.headers.get("content-encoding", "identity") != "identity"
            chunks = response.aiter_bytes() if encoded else response.aiter_raw()
            async for chunk in chunks:
                reader.feed(chunk)
            body = reader.close()
        finally:
            call.forwarded = reader.forwarded
        return _Outcome(body=body, status=200, ok=True)
