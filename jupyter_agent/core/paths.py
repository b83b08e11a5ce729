"""Path normalisation for everything the model or an export shows.

Contract: :func:`normalize_paths` rewrites every path under the kernel environment's prefix
(``sys.prefix``) to ``<env>/...`` and every path under the home folder to ``~/...``. The
longest prefix wins, so an environment inside the home folder still reads ``<env>``. A
prefix only matches whole path components (``/home/al`` never rewrites ``/home/alice``) and
only where a path starts (``/data/home/al`` is left alone). IPython already shortens the
home folder to ``~`` in tracebacks, so the environment is also recognised in that form
(``~/.venv/lib/...`` becomes ``<env>/lib/...``). Pure and deterministic: the same text and
prefixes always give the same result.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["ENV_MARK", "HOME_MARK", "normalize_paths"]

ENV_MARK = "<env>"
HOME_MARK = "~"

# A path starts after something that cannot be part of a path, and a prefix ends at a
# component boundary: both guards keep "/home/al" from matching "/home/alice" or
# "/data/home/al".
_BEFORE = r"(?<![\w.~/\\-])"
_AFTER = r"(?![\w.-])"


def _clean(prefix: str) -> str:
    """The prefix without trailing separators; "" when it would match everything."""
    stripped = prefix.rstrip("/\\")
    return stripped if len(stripped) > 1 else ""


@lru_cache(maxsize=32)
def _pattern(env_prefix: str, home: str) -> tuple[re.Pattern[str], dict[str, str]] | None:
    replacements: dict[str, str] = {}
    env = _clean(env_prefix)
    hom = _clean(home)
    if hom:
        replacements[hom] = HOME_MARK
    if env:
        replacements[env] = ENV_MARK
        if hom and env.startswith(hom + "/"):
            # IPython shows the home folder as "~": recognise the environment in that form.
            replacements[HOME_MARK + env[len(hom) :]] = ENV_MARK
    if not replacements:
        return None
    # Longest first: Python's alternation takes the first branch that matches.
    ordered = sorted(replacements, key=len, reverse=True)
    alternation = "|".join(re.escape(p) for p in ordered)
    return re.compile(f"{_BEFORE}(?:{alternation}){_AFTER}"), replacements


def normalize_paths(text: str, *, env_prefix: str, home: str) -> str:
    """``text`` with paths under ``env_prefix`` shown as ``<env>`` and under ``home`` as ``~``.

    Empty prefixes (and ``/``) are ignored. See the module docstring for the matching rules.
    """
    compiled = _pattern(env_prefix, home)
    if compiled is None or not text:
        return text
    pattern, replacements = compiled
    return pattern.sub(lambda m: replacements[m.group(0)], text)
