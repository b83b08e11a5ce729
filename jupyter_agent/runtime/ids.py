"""Ids and times as the host makes them: ``<kind>_<ulid>`` and ISO-8601 UTC with ``Z``.

A ULID (26 Crockford base32 characters: 48 bits of milliseconds, 80 random bits) sorts by
creation time, which is what run listings need. Written here rather than taken from a
package because it is twenty lines and the project needs no other feature of one.
"""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone

__all__ = ["new_id", "now_iso", "ulid"]

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_last_ms = 0
_last_rand = 0


def ulid() -> str:
    """A new ULID; monotonic within one process (same millisecond -> random part + 1)."""
    global _last_ms, _last_rand
    ms = time.time_ns() // 1_000_000
    if ms <= _last_ms:
        ms = _last_ms
        rand = (_last_rand + 1) & ((1 << 80) - 1)
    else:
        rand = int.from_bytes(os.urandom(10), "big")
    _last_ms, _last_rand = ms, rand
    value = (ms << 80) | rand
    return "".join(_ALPHABET[(value >> shift) & 31] for shift in range(125, -1, -5))


def new_id(kind: str) -> str:
    """``{kind}_{ulid}``, e.g. ``run_01J...``, ``chat_01J...``."""
    return f"{kind}_{ulid()}"


def now_iso() -> str:
    """The current UTC time as ISO-8601 with millisecond precision and ``Z``."""
    now = datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
