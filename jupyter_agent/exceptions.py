"""The error tree of jupyter-agent, and the loop's control signals.

::

    AgentError                      base of everything raised on purpose
    ├── ConfigError                 bad configuration or settings (a tier, a profile, a script)
    ├── ProviderError               a model call failed; carries ``status`` and a redacted body
    │   ├── ProviderStatusError     the provider answered with an HTTP error status
    │   ├── ProviderTimeout         the per-call deadline passed
    │   ├── ProviderProtocolError   a malformed body, or an error event mid-stream
    │   ├── RetryAfterTooLong       retry-after asked for longer than the configured cap
    │   └── CredentialError         a credential reference could not be resolved
    ├── ToolFormatError             a fenced/xml tool reply could not be parsed (the model sees it)
    ├── KernelError                 the agent kernel failed
    │   ├── KernelDied              the kernel process is gone
    │   └── CellTimeout             a cell ran past its timeout
    ├── AppCallError                an in-cell app call failed (raised inside the kernel)
    ├── TraceError                  an effect log is unreadable or inconsistent
    │   └── NondeterminismError     a replay asked for a different effect than was recorded
    └── StoreError                  the database refused a write or a read

    RunCancelled                    (a BaseException, like asyncio.CancelledError) a hard break

No error's ``str``/``repr`` ever holds a credential or a request header: a provider error
keeps the status and a redacted body only. What the effect log records of a provider error
is a :class:`ProviderFailure` (its JSON comes from :mod:`jupyter_agent.codec`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jupyter_agent.codec import dump_dict

__all__ = [
    "AgentError",
    "AppCallError",
    "CellTimeout",
    "ConfigError",
    "CredentialError",
    "KernelDied",
    "KernelError",
    "NondeterminismError",
    "ProviderError",
    "ProviderFailure",
    "ProviderProtocolError",
    "ProviderStatusError",
    "ProviderTimeout",
    "RetryAfterTooLong",
    "RunCancelled",
    "StoreError",
    "ToolFormatError",
    "TraceError",
]


class AgentError(Exception):
    """Base of every error jupyter-agent raises on purpose."""


class ConfigError(AgentError):
    """Bad configuration: an unknown tier or provider, a bad profile, a bad fake script."""


@dataclass(frozen=True, kw_only=True)
class ProviderFailure:
    """A failed model call as the effect log records it: ``error`` names the ProviderError
    class; ``body`` is already redacted. Lenient defaults: older or foreign error dicts load."""

    error: str = "ProviderError"
    message: str | None = None
    status: int | None = None
    body: Any = None
    attempts: tuple[dict[str, Any], ...] = ()


class ProviderError(AgentError):
    """A model call failed.

    ``status`` is the HTTP status when there was one; ``body`` is the provider's error body,
    already redacted; ``attempts`` lists what each try gave (status or error kind).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        body: Any = None,
        attempts: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.attempts = attempts or []

    @property
    def failure(self) -> ProviderFailure:
        """This error as the record the effect log keeps (nothing secret)."""
        return ProviderFailure(
            error=type(self).__name__,
            message=str(self),
            status=self.status,
            body=self.body,
            attempts=tuple(self.attempts),
        )

    def to_json(self) -> dict[str, Any]:
        """What the effect log records of this failure: :attr:`failure` as JSON."""
        return dump_dict(self.failure)


class ProviderStatusError(ProviderError):
    """The provider answered with an HTTP error status (terminal, or retries ran out)."""


class ProviderTimeout(ProviderError):
    """The per-call deadline passed before a complete reply arrived."""


class ProviderProtocolError(ProviderError):
    """The reply could not be understood: a malformed body, or an error event mid-stream."""


class RetryAfterTooLong(ProviderError):
    """The provider asked to wait longer than ``retry_after_cap_s``: failing fast instead."""


class CredentialError(ProviderError):
    """A credential reference (``env:NAME``) could not be resolved. Names the ref, never a value."""


class ToolFormatError(AgentError):
    """A text-mode (fenced or xml) tool call was malformed; the message is shown to the model."""


class KernelError(AgentError):
    """The agent kernel failed."""


class KernelDied(KernelError):
    """The kernel process is gone (killed, crashed, or culled)."""


class CellTimeout(KernelError):
    """A cell ran past its timeout; the kernel was interrupted (and restarted if needed)."""


class AppCallError(AgentError):
    """An in-cell app call failed, or there is no agent host to answer it."""


class TraceError(AgentError):
    """An effect log could not be read, or is inconsistent."""


class NondeterminismError(TraceError):
    """A replay asked for a different effect than the log recorded.

    ``seq`` is the diverging sequence number; ``recorded`` and ``asked`` are the two
    intents (name and data) that differ.
    """

    def __init__(self, seq: int, recorded: Any, asked: Any) -> None:
        super().__init__(f"nondeterminism at seq {seq}: recorded {recorded!r}, asked {asked!r}")
        self.seq = seq
        self.recorded = recorded
        self.asked = asked


class StoreError(AgentError):
    """The database refused a read or a write."""


class RunCancelled(BaseException):
    """A hard break: the run stops at once. A BaseException so ``except Exception`` passes it.

    ``detail`` is the cancelled effect's result data when there was one: besides
    ``cancelled`` it may hold ``deferred`` (mailbox items the host took at the break, which
    belong to this turn) and ``bubbles`` (progress texts a cut cell had already posted).
    """

    def __init__(self, reason: str = "break_hard", *, detail: Any = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail: dict[str, Any] = detail if isinstance(detail, dict) else {}
