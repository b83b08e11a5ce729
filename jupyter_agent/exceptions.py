"""The error tree of jupyter-agent, and the loop's control signals.

::

    AgentError                      base of everything raised on purpose
    ├── ConfigError                 bad configuration or settings (a tier, a profile, a script)
    ├── ProviderError               a model call failed; carries ``status`` and a redacted body
    │   ├── ProviderStatusError     the provider answered with an HTTP error status
    │   ├── ProviderTimeout         the per-call deadline passed
    │   ├── ProviderProtocolError   a malformed body, or an error event mid-stream
    │   ├── RetryAfterTooLong       retry-after asked for longer than the configured cap
    │   ├── CredentialError         a credential reference could not be resolved
    │   └── SecretInRequest         a request holding a known secret, refused before sending
    ├── KernelError                 the agent kernel failed
    │   ├── KernelDied              the kernel process is gone
    │   └── CellTimeout             a cell ran past its timeout
    ├── AppCallError                an in-cell app call failed (raised inside the kernel)
    ├── McpError                    an MCP server (``c.JupyterAgent.mcp_servers``) failed
    │   ├── McpConfigError          a server's entry is bad (also ConfigError): names the field
    │   └── McpCallError            a tool call failed (unknown tool, timeout, the tool's error)
    ├── ProgramFault                a program misbehaved in a run (raised, a non-catalogue
    │                               effect, past a ceiling, no effect for too long): ``program``
    ├── TraceError                  an effect log is unreadable or inconsistent
    │   ├── NondeterminismError     a replay asked for a different effect than was recorded
    │   ├── ProgramMissing          a recorded program version is not in this store
    │   └── ProgramMismatch         a recorded program version's files hash differently
    ├── StoreError                  the database refused a write or a read
    │   └── StoreUnavailable        locked or unreachable: try again later (also Unavailable)
    ├── RequestError                a request the agent refuses: ``message`` and ``reason``
    │   ├── BadRequest              the input is wrong               (bad_request, bad_text, ...)
    │   │   ├── SettingsError       a settings change is refused     (bad_settings)
    │   │   ├── ProgramRefused      a deploy is refused              (program_refused)
    │   │   └── PathRefused         a notebook path the agent may not touch (path_refused)
    │   ├── Forbidden               not allowed for this user        (forbidden)
    │   ├── NotFound                no such chat, run or trace       (not_found)
    │   ├── Conflict                the target exists                (exists)
    │   │   ├── ProposalConflict    the notebook changed since       (proposal_conflict)
    │   │   ├── ProposalDecided     the proposal was decided         (proposal_decided)
    │   │   └── ApprovalDecided     the approval was answered        (approval_decided)
    │   ├── PayloadTooLarge         a body over the size limit       (body_too_large)
    │   ├── NotSupported            this server cannot do it         (no_contents)
    │   ├── TooManyRequests         over a rate; ``retry_after_s``   (rate_limited)
    │   └── Unavailable             try again later; ``retry_after_s`` (unavailable)
    │       └── StoreUnavailable
    └── ClientError                 a call to an agent server failed: ``status``, ``reason``,
        │                           ``addr`` (raised by :mod:`jupyter_agent.client`)
        └── CliFailure              an expected ``jupyter agent`` failure: one line, exit 2

    RunCancelled                    (a BaseException, like asyncio.CancelledError) a hard break
    ProgramStuck                    (a BaseException) raised into a program's step by the
                                    watchdog when it yields no effect in time

A :class:`RequestError` is what a service refuses; it knows no HTTP. ``reason`` is a short
machine word (the class's default, or a finer one given when raised: ``bad_text``,
``empty_message``, ``bad_settings``, ``exists``, ...), ``message`` one sentence for a
person. The server maps each class to a status in one table (``server/base.py``:
``ERROR_STATUS``: 400, 403, 404, 409, 413, 501, 503 in the order above, 400 for another
RequestError) and answers ``{message, reason}``; ``Unavailable`` adds ``Retry-After`` when
``retry_after_s`` is set.
Any other error is a 500 whose details stay in the server's log.

No error's ``str``/``repr`` ever holds a credential or a request header: a provider error
keeps the status and a redacted body only. What the effect log records of a provider error
is a :class:`ProviderFailure` (its JSON comes from :mod:`jupyter_agent.codec`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jupyter_agent.codec import dump_dict

# fmt: off
__all__ = [
    "AgentError", "AppCallError", "ApprovalDecided", "BadRequest", "CellTimeout", "CliFailure",
    "ClientError", "ConfigError", "Conflict", "CredentialError", "Forbidden", "KernelDied",
    "KernelError", "McpCallError", "McpConfigError", "McpError", "NondeterminismError",
    "NotFound", "NotSupported", "PathRefused", "PayloadTooLarge", "ProgramFault",
    "ProgramMismatch", "ProgramMissing", "ProgramRefused", "ProgramStuck", "ProposalConflict",
    "ProposalDecided", "ProviderError", "ProviderFailure", "ProviderProtocolError",
    "ProviderStatusError", "ProviderTimeout", "RequestError", "RetryAfterTooLong",
    "RunCancelled", "SecretInRequest", "SettingsError", "StoreError", "StoreUnavailable",
    "TooManyRequests",
    "TraceError", "Unavailable",
]
# fmt: on


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


class SecretInRequest(ProviderError):
    """A model request still held a known secret (or an encoding of one): not sent. Names
    the secret (``NAME (base64)``), never a value."""


class KernelError(AgentError):
    """The agent kernel failed."""


class KernelDied(KernelError):
    """The kernel process is gone (killed, crashed, or culled)."""


class CellTimeout(KernelError):
    """A cell ran past its timeout; the kernel was interrupted (and restarted if needed)."""


class AppCallError(AgentError):
    """An in-cell app call failed, or there is no agent host to answer it."""


class McpError(AgentError):
    """An MCP server the admin configured could not be used. Its message never
    holds a credential (a resolved ``env:NAME`` value or header)."""


class McpConfigError(McpError, ConfigError):
    """A ``mcp_servers`` entry is bad: the message names the server and the field."""


class McpCallError(McpError):
    """A call of an MCP tool failed: an unknown tool, a timeout, a server that exited, or
    the tool's own error (``isError``). The message starts with ``mcp.<server>.<tool>``."""


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


class ProgramMissing(TraceError):
    """A run names a program version this store does not hold (deployed on another server,
    or removed): ``ref`` is its recorded ``name@vN#hash``."""

    def __init__(self, message: str, *, ref: str) -> None:
        super().__init__(message)
        self.ref = ref


class ProgramMismatch(TraceError):
    """A recorded program version's stored files hash differently from what the run
    recorded: ``ref`` the recorded reference, ``found`` the stored hash."""

    def __init__(self, message: str, *, ref: str, found: str) -> None:
        super().__init__(message)
        self.ref = ref
        self.found = found


class ProgramFault(AgentError):
    """A program misbehaved in a run: it raised, yielded something that is not an effect
    of the catalogue, went past one of the run's ceilings, or yielded no effect within the
    step deadline. ``program`` names it (``name@vN#hash``); the run ends ``error``."""

    def __init__(self, message: str, *, program: str) -> None:
        super().__init__(message)
        self.program = program


class StoreError(AgentError):
    """The database refused a read or a write."""


# --- refused requests (what the services raise; the server gives each its status) ---------


class RequestError(AgentError):
    """A refused request: ``message`` for a person, ``reason`` a short machine word.

    ``reason`` defaults to the class's :attr:`default_reason`; give a finer one where a
    client may act on it (``BadRequest("...", reason="bad_text")``).
    """

    default_reason = "bad_request"

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason or self.default_reason

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, reason={self.reason!r})"


class BadRequest(RequestError):
    """The input is wrong (a field of the wrong type, an empty message, a bad path)."""

    default_reason = "bad_request"


class SettingsError(BadRequest):
    """A settings change that is refused; the message says why (never a key value)."""

    default_reason = "bad_settings"


class ProgramRefused(BadRequest):
    """A deploy refused: a bad name or files, a syntax error, no entry point, or the smoke
    test failed. The message says which; the active version stays."""

    default_reason = "program_refused"


class PathRefused(BadRequest):
    """A notebook path the agent may not touch: outside the server's root (``..``, a
    symlink out of it), hidden (a component starting with ``.``), or not a notebook."""

    default_reason = "path_refused"


class Forbidden(RequestError):
    """The request is understood but not allowed for this user."""

    default_reason = "forbidden"


class NotFound(RequestError):
    """No such chat, run or trace (or one the user may not see)."""

    default_reason = "not_found"


class Conflict(RequestError):
    """The target exists (a notebook path, every free name taken)."""

    default_reason = "exists"


class ProposalConflict(Conflict):
    """The notebook changed since the proposal was made (or, for an undo, since it was
    applied): nothing was written; the message names the cells."""

    default_reason = "proposal_conflict"


class ProposalDecided(Conflict):
    """The proposal was already decided (applied, discarded, undone or in conflict)."""

    default_reason = "proposal_decided"


class ApprovalDecided(Conflict):
    """The approval was already answered (by the person, a break or the wall-time
    ceiling)."""

    default_reason = "approval_decided"


class PayloadTooLarge(RequestError):
    """A request body over the configured size limit."""

    default_reason = "body_too_large"


class NotSupported(RequestError):
    """This server cannot do it (no contents manager to write with, say)."""

    default_reason = "not_supported"


class Unavailable(RequestError):
    """Not now: try again later. ``retry_after_s`` (when set) is how long to wait."""

    default_reason = "unavailable"

    def __init__(
        self, message: str, *, reason: str | None = None, retry_after_s: int | None = None
    ) -> None:
        super().__init__(message, reason=reason)
        self.retry_after_s = retry_after_s


class TooManyRequests(RequestError):
    """Over a rate: ``retry_after_s`` is how long to wait (an owner's completions)."""

    default_reason = "rate_limited"

    def __init__(self, message: str, *, retry_after_s: float, reason: str | None = None) -> None:
        super().__init__(message, reason=reason)
        self.retry_after_s = retry_after_s


class StoreUnavailable(StoreError, Unavailable):
    """The database is locked or cannot be reached: a retry later may succeed."""

    default_reason = "unavailable"

    def __init__(self, message: str, *, retry_after_s: int | None = 5) -> None:
        super().__init__(message, retry_after_s=retry_after_s)


# --- the client's and the CLI's errors -----------------------------------------------------


class ClientError(AgentError):
    """A request to an agent server failed (see :mod:`jupyter_agent.client`).

    ``status`` is the HTTP status (None when no HTTP answer came), ``message`` one line for
    a person, ``reason`` the server's machine word; ``addr`` the server's address as shown
    (no token), when the error came from one.
    """

    def __init__(
        self,
        status: int | None,
        message: str,
        reason: str | None = None,
        *,
        addr: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.reason = reason
        self.addr = addr

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(status={self.status!r}, message={self.message!r}, "
            f"reason={self.reason!r})"
        )


class CliFailure(ClientError):
    """An expected failure of ``jupyter agent``: printed as one line, exit status 2.

    A ClientError so a server's answer keeps its ``status`` and ``reason`` when the CLI
    rewords it; a local failure (no such log file) has neither.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        reason: str | None = None,
        addr: str | None = None,
    ) -> None:
        super().__init__(status, message, reason, addr=addr)


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


class ProgramStuck(BaseException):
    """Raised into a program's step (in its worker thread) by the watchdog when the step
    yields no effect within its deadline. A BaseException so ``except Exception`` in a
    program does not swallow it (the watchdog raises it again until the step ends)."""
