"""Request bodies and query arguments into typed values: the handlers' only parsing.

Each helper returns the clean value or raises
:class:`~jupyter_agent.exceptions.BadRequest` whose message names the field (``'text' must
be a string``) and whose ``reason`` the caller gives (``bad_text``); ``server/base.py``
answers it 400 ``{message, reason}``. A field that is absent or ``null`` takes its
default; a required one is refused with the same message as one of the wrong type.

Text in a body is valid Unicode or refused: :func:`json_object` answers a body holding a
lone surrogate (JSON's ``"\\ud800"``, which ``json.loads`` accepts but nothing can store)
with ``bad_unicode`` naming the field, once for every route, so no handler and no service
method ever sees one; a NUL character (which PostgreSQL cannot store) likewise, and a
number no column holds (an integer outside 64 bits: ``bad_json``). Query arguments and URL
path parts are decoded by ``AgentBase.decode_argument`` (strict UTF-8, no NUL); integer
ones are range-checked by :func:`query_int`. A field a route does not take is refused
with :func:`only_keys` (``unknown_field`` unless the route has its own reason).

What a value *means* (an empty message, a path outside the root, a tier the key policy
refuses) is the service's to check: these helpers check shapes and types only.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Collection, Mapping
from typing import Any, Final, Protocol

from jupyter_agent.exceptions import BadRequest, PayloadTooLarge
from jupyter_agent.runtime.notebook.contents import shown
from jupyter_agent.runtime.runs.chat_service import Control, View
from jupyter_agent.text import first_leaf, lone_surrogate

__all__ = [
    "INT_MAX",
    "INT_MIN",
    "Query",
    "control",
    "flag",
    "integer",
    "json_object",
    "mapping",
    "only_keys",
    "optional_string",
    "proposal_decision",
    "query_flag",
    "query_int",
    "string",
    "string_list",
    "view",
]

#: The integers a body or a query may hold (a signed 64-bit column's range).
INT_MIN: Final = -(2**63)
INT_MAX: Final = 2**63 - 1

_TRUE: Final = frozenset({"1", "true", "yes"})
_VIEW_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "path": (str,),
    "cell": (str, int),
    "selection": (str,),
    "cell_id": (str,),
    "mentions": (list,),
}
#: At most this many ``@`` mentions per message; a variable's summary is cut at this many
#: characters (the panel sends ``notebook.variables``' summaries, about 200).
MAX_MENTIONS: Final = 20
MAX_MENTION_SUMMARY: Final = 600


def _mention(item: Any, where: str) -> dict[str, Any]:
    """One ``@`` mention: ``{kind: "cell", cell, cell_id?, path?}`` (``path``: the cell's
    notebook, when not the view's) or ``{kind: "variable", name, summary?}``
    (``bad_view``)."""
    if not isinstance(item, dict):
        raise BadRequest(f"'{where}' must be an object {{kind, ...}}", reason="bad_view")
    kind = item.get("kind")
    if kind == "cell":
        only_keys(item, ("kind", "cell", "cell_id", "path"), reason="bad_view")
        cell, cell_id, path = item.get("cell"), item.get("cell_id"), item.get("path")
        if not isinstance(cell, (int, str)) or isinstance(cell, bool):
            raise BadRequest(f"'{where}.cell' must be an index or an id", reason="bad_view")
        if cell_id is not None and not isinstance(cell_id, str):
            raise BadRequest(f"'{where}.cell_id' must be a string", reason="bad_view")
        if path is not None and (not isinstance(path, str) or not path or len(path) > 4096):
            raise BadRequest(f"'{where}.path' must be a notebook's path", reason="bad_view")
        pairs = (("kind", kind), ("cell", cell), ("cell_id", cell_id), ("path", path))
        return {k: v for k, v in pairs if v is not None}
    if kind == "variable":
        only_keys(item, ("kind", "name", "summary"), reason="bad_view")
        name, summary = item.get("name"), item.get("summary")
        if not isinstance(name, str) or not name.isidentifier() or len(name) > 200:
            raise BadRequest(f"'{where}.name' must be a variable name", reason="bad_view")
        out: dict[str, Any] = {"kind": kind, "name": name}
        if summary is not None:
            if not isinstance(summary, str):
                raise BadRequest(f"'{where}.summary' must be a string", reason="bad_view")
            out["summary"] = summary[:MAX_MENTION_SUMMARY]
        return out
    raise BadRequest(f"'{where}.kind' must be 'cell' or 'variable'", reason="bad_view")


class Query(Protocol):
    """What a handler offers to read query arguments (tornado's ``get_query_argument``)."""

    def get_query_argument(self, name: str, default: Any = ...) -> Any: ...


def json_object(body: bytes, *, limit: int) -> dict[str, Any]:
    """The request body decoded as a JSON object; empty is ``{}``.

    ``PayloadTooLarge`` (``body_too_large``) over ``limit`` bytes; ``BadRequest``
    (``bad_json``) for a body that is not JSON (``NaN`` and ``Infinity`` are not), not an
    object, nested too deeply for the decoder, or holding an integer of more than 4300
    digits (Python's limit), or, naming the field, a number out of range (an integer
    outside :data:`INT_MIN`..:data:`INT_MAX`, a float too large to be finite);
    ``BadRequest`` (``bad_unicode``) for one holding a lone surrogate anywhere, keys
    included (``'text' holds a lone surrogate (\\ud800): send valid Unicode``) or a NUL
    character, which PostgreSQL cannot store (``'title' holds a NUL character
    (\\u0000): send text without it``).
    """
    if len(body) > limit:
        raise PayloadTooLarge(
            f"Request body of {len(body)} bytes is over the limit of {limit} bytes"
        )
    if not body.strip():
        return {}
    try:
        value = json.loads(body, parse_constant=_no_constant)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(f"Invalid JSON body: {exc}", reason="bad_json") from exc
    except RecursionError:  # "[" * 100000: the C decoder gives up at the recursion limit
        raise BadRequest("Invalid JSON body: nested too deeply", reason="bad_json") from None
    except ValueError as exc:  # an integer over sys.get_int_max_str_digits() digits
        raise BadRequest(f"Invalid JSON body: {_number_error(exc)}", reason="bad_json") from None
    if not isinstance(value, dict):
        raise BadRequest("The JSON body must be an object", reason="bad_json")
    found = lone_surrogate(value)
    if found is not None:
        where, escape = found
        raise BadRequest(
            f"'{where}' holds a lone surrogate ({escape}): send valid Unicode",
            reason="bad_unicode",
        )
    bad = first_leaf(value, _unstorable)
    if bad is not None:
        where, leaf = bad
        if isinstance(leaf, str):
            raise BadRequest(
                f"'{where}' holds a NUL character (\\u0000): send text without it",
                reason="bad_unicode",
            )
        raise BadRequest(
            f"'{where}' is out of range: integers lie between -2**63 and 2**63-1, "
            "numbers are finite",
            reason="bad_json",
        )
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _number_error(exc: ValueError) -> str:
    text = str(exc)
    if "integer string conversion" in text:
        return f"an integer has more than {sys.get_int_max_str_digits()} digits"
    return text


def _unstorable(leaf: Any) -> bool:
    """A NUL in a string (or key), an integer outside 64 bits, or an infinite float."""
    if isinstance(leaf, str):
        return "\x00" in leaf
    if isinstance(leaf, bool):
        return False
    if isinstance(leaf, int):
        return not INT_MIN <= leaf <= INT_MAX
    if isinstance(leaf, float):
        return not math.isfinite(leaf)
    return False


def _absent(body: Mapping[str, Any], name: str) -> bool:
    return body.get(name) is None


def string(body: Mapping[str, Any], name: str, *, reason: str, default: str | None = None) -> str:
    """Field ``name`` as a string; ``default`` when absent (None: the field is required)."""
    if _absent(body, name) and default is not None:
        return default
    value = body.get(name)
    if not isinstance(value, str):
        raise BadRequest(f"'{name}' must be a string", reason=reason)
    return value


def optional_string(body: Mapping[str, Any], name: str, *, reason: str) -> str | None:
    """Field ``name`` as a string, or None when absent."""
    if _absent(body, name):
        return None
    return string(body, name, reason=reason)


def flag(body: Mapping[str, Any], name: str, *, reason: str, default: bool = False) -> bool:
    """Field ``name`` as ``true`` or ``false``; ``default`` when absent."""
    if _absent(body, name):
        return default
    value = body[name]
    if not isinstance(value, bool):
        raise BadRequest(f"'{name}' must be true or false", reason=reason)
    return value


def string_list(
    body: Mapping[str, Any], name: str, *, reason: str, what: str = "strings"
) -> list[str]:
    """Field ``name`` as a list of strings (``what`` they are, for the message); ``[]``
    when absent."""
    value = body.get(name) or []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise BadRequest(f"'{name}' must be a list of {what}", reason=reason)
    return list(value)


def integer(
    body: Mapping[str, Any],
    name: str,
    *,
    reason: str,
    minimum: int = INT_MIN,
    maximum: int = INT_MAX,
) -> int | None:
    """Field ``name`` as an integer from ``minimum`` to ``maximum``, or None when absent
    (``true`` is not an integer): ``'to' must be an integer from 1 to 999999``."""
    if _absent(body, name):
        return None
    value = body[name]
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise BadRequest(f"'{name}' must be an integer from {minimum} to {maximum}", reason=reason)
    return value


def mapping(body: Mapping[str, Any], name: str, *, reason: str) -> dict[str, Any]:
    """Field ``name`` as a JSON object; ``{}`` when absent."""
    if _absent(body, name):
        return {}
    value = body[name]
    if not isinstance(value, Mapping):
        raise BadRequest(f"'{name}' must be an object", reason=reason)
    return dict(value)


def only_keys(
    body: Mapping[str, Any],
    allowed: Collection[str],
    *,
    reason: str,
    what: str = "field",
    doing: str = "sent",
) -> None:
    """Refuse a body with fields other than ``allowed``: ``unknown {what}(s) a, b: only
    'x' can be {doing}``."""
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        names = ", ".join(f"'{name}'" for name in sorted(allowed))
        known = f"only {names} can be {doing}" if allowed else f"nothing can be {doing} here"
        raise BadRequest(
            f"unknown {what}(s) {', '.join(_cut(n) for n in unknown)}: {known}",
            reason=reason,
        )


def _cut(name: str) -> str:
    return name if len(name) <= 40 else f"{name[:40]}..."


def control(body: Mapping[str, Any], name: str = "control") -> Control | None:
    """Field ``control``: ``{"kind": "break", "hard"?: bool}`` or absent (``bad_control``)."""
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, dict) or value.get("kind") != "break":
        raise BadRequest(
            f'\'{name}\' must be {{"kind": "break", "hard"?: bool}}', reason="bad_control"
        )
    hard = value.get("hard", False)
    if not isinstance(hard, bool):
        raise BadRequest(f"'{name}.hard' must be true or false", reason="bad_control")
    return Control(hard=hard)


def approval(body: Mapping[str, Any]) -> tuple[bool, bool]:
    """The body of an approval: ``{approve: bool, rest_of_turn?: bool}`` -> (approve,
    rest_of_turn); ``approve`` is required (``bad_approval``), no other key is taken."""
    only_keys(body, ("approve", "rest_of_turn"), reason="bad_approval")
    if not isinstance(body.get("approve"), bool):
        raise BadRequest("'approve' must be true or false", reason="bad_approval")
    return body["approve"], flag(body, "rest_of_turn", reason="bad_approval")


def view(body: Mapping[str, Any], name: str = "view") -> View | None:
    """Field ``view``: ``{path?, cell?, cell_id?, selection?, mentions?}`` or absent
    (``bad_view``); the path's meaning is checked by the service. ``mentions``: the
    composer's ``@cell`` and ``@variable`` mentions (:func:`_mention`)."""
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise BadRequest(
            f"'{name}' must be an object {{path?, cell?, selection?}}", reason="bad_view"
        )
    clean: dict[str, Any] = {}
    for key, item in value.items():
        kinds = _VIEW_TYPES.get(key)
        if kinds is None:
            raise BadRequest(f"'{name}' has an unknown key {key!r}", reason="bad_view")
        if item is None:
            continue
        if not isinstance(item, kinds) or isinstance(item, bool):
            raise BadRequest(f"'{name}.{key}' has the wrong type", reason="bad_view")
        clean[key] = item
    mentions = clean.pop("mentions", None)
    if mentions:
        if len(mentions) > MAX_MENTIONS:
            raise BadRequest(
                f"'{name}.mentions' holds at most {MAX_MENTIONS} mentions", reason="bad_view"
            )
        clean["mentions"] = tuple(
            _mention(m, f"{name}.mentions[{i}]") for i, m in enumerate(mentions)
        )
    return View(**clean)


def proposal_decision(body: Mapping[str, Any]) -> tuple[bool, list[str] | None]:
    """``{apply: bool, cells?: [cell ids]}`` (``bad_decision``): ``apply`` is required;
    ``cells`` absent (or null) means every edit."""
    only_keys(body, ("apply", "cells"), reason="bad_decision")
    if not isinstance(body.get("apply"), bool):
        raise BadRequest("'apply' must be true or false", reason="bad_decision")
    cells = None
    if not _absent(body, "cells"):
        cells = string_list(body, "cells", reason="bad_decision", what="cell ids")
    return body["apply"], cells


def query_int(
    handler: Query,
    name: str,
    *,
    reason: str,
    default: int,
    minimum: int = INT_MIN,
    maximum: int = INT_MAX,
) -> int:
    """Query argument ``name`` as an integer from ``minimum`` to ``maximum``; ``default``
    when absent."""
    raw = handler.get_query_argument(name, None)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:  # not an integer, or over Python's 4300 digits
        raise BadRequest(f"'{name}' must be an integer, not {shown(raw)}", reason=reason) from None
    if not minimum <= value <= maximum:
        raise BadRequest(
            f"'{name}' must be an integer from {minimum} to {maximum}, not {shown(raw)}",
            reason=reason,
        )
    return value


def query_flag(handler: Query, name: str) -> bool:
    """Query argument ``name`` as a flag: ``1``, ``true`` or ``yes`` are true."""
    return str(handler.get_query_argument(name, "")) in _TRUE
