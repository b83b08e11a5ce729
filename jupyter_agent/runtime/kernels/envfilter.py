"""The agent kernel's environment filter: no credential reaches the kernel process.

:func:`filter_env` removes every variable whose NAME contains ``KEY``, ``TOKEN``,
``SECRET``, ``PASSWORD`` or ``CREDENTIAL`` (case-insensitive), ``JUPYTER_TOKEN``,
``SSH_AUTH_SOCK``, every ``AWS_*`` and ``AZURE_*`` name, ``GOOGLE_APPLICATION_CREDENTIALS``,
and every variable whose VALUE is a URL with a ``user:password@`` part. Names listed in
``keep`` (the server's ``kernel_env_keep``) pass through unchanged.

The result is the complete environment the kernel is launched with (``env=`` of
``start_kernel``): jupyter_client uses it as is, it is not merged back with ``os.environ``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = ["filter_env", "is_secret_name", "is_secret_value"]

_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL")
_NAMES = frozenset({"JUPYTER_TOKEN", "SSH_AUTH_SOCK", "GOOGLE_APPLICATION_CREDENTIALS"})
_PREFIXES = ("AWS_", "AZURE_")
# scheme://user:password@host — a password may be empty only after an explicit colon.
_URL_WITH_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/@\s:]*:[^/@\s]*@")


def is_secret_name(name: str) -> bool:
    """True when a variable of this name must not reach the kernel."""
    upper = name.upper()
    return (
        upper in _NAMES or upper.startswith(_PREFIXES) or any(part in upper for part in _NAME_PARTS)
    )


def is_secret_value(value: str) -> bool:
    """True when the value holds a URL with a ``user:password`` part."""
    return _URL_WITH_PASSWORD.search(value) is not None


def filter_env(env: Mapping[str, str], keep: Iterable[str] = ()) -> dict[str, str]:
    """A copy of ``env`` without secret-looking variables; names in ``keep`` always pass."""
    kept = set(keep)
    return {
        name: value
        for name, value in env.items()
        if name in kept or not (is_secret_name(name) or is_secret_value(value))
    }
