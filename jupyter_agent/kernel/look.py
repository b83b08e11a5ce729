"""What runs inside the PERSON's kernel when the agent looks at it: summaries of its
variables, one variable's richer summary, its last error, a copy of one value.

This module is never imported there: the host sends its source (:func:`expression`) as
one ``user_expressions`` entry of a silent execute (``silent=True, store_history=False``),
so the person's kernel needs nothing of ``jupyter_agent`` and keeps no trace of the look:
the source runs in a private dict (its imports and names land there, never in the
person's namespace), no cell is added to the history, the execution count stays. The
expression's value is one JSON string (its ``text/plain`` repr, which the host reads back
with :func:`ast.literal_eval`).

Contracts, for the person's namespace ``ns``:

- :func:`variables`: the names a person would call their data (no module, function,
  class, private ``_name`` or IPython's own ``In``/``Out``/``exit``/``quit``/``get_ipython``),
  sorted, each ``{name, type, summary}`` with a short shape for common data types
  (``DataFrame 1,000 x 12`` with its columns and dtypes, ``ndarray (3, 224, 224)
  float32``, ``list[5]``, a scalar's repr), until ``budget`` characters; the rest counted
  in ``cut`` and listed by name only in ``more`` (up to 200 names).
- :func:`inspect_value`: one variable's richer summary, at most ``budget`` characters.
- :func:`state`: the execution count and the last error's traceback (``sys.last_*``,
  which IPython sets when a cell fails), as text.
- :func:`dump`: pickle one value to ``path`` (protocol 5), refusing it past ``cap`` bytes
  before more than ``cap`` bytes are written; ``{type, bytes}``.

Nothing here imports pandas or numpy: their objects are recognised by their type's module
and name, so a look never loads a library the person did not load. Stdlib only.
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import Any

__all__ = ["dump", "expression", "inspect_value", "state", "variables"]

_HIDDEN = frozenset({"In", "Out", "exit", "quit", "get_ipython", "open"})
_SKIP_TYPES = frozenset({"module", "function", "builtin_function_or_method", "type", "method"})
_REPR = 80
_COLUMNS = 12
_MORE = 200


def _kind(value: Any) -> str:
    """``package.Class`` (``pandas.DataFrame``: the top package, whatever module defines it)."""
    t = type(value)
    return f"{t.__module__.partition('.')[0]}.{t.__qualname__}"


def _short(value: Any, limit: int = _REPR) -> str:
    if isinstance(value, (str, bytes)) and len(value) > limit:
        value = value[:limit]  # never the repr of a whole big text
    try:
        text = repr(value)
    except Exception as exc:  # a broken __repr__ is the person's: say so, go on
        text = f"<repr failed: {type(exc).__name__}>"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _frame(value: Any) -> str:
    rows, cols = value.shape
    names = [f"{c}: {d}" for c, d in list(value.dtypes.items())[:_COLUMNS]]
    more = f", ... {cols - _COLUMNS} more" if cols > _COLUMNS else ""
    return f"DataFrame {rows:,} x {cols:,} ({', '.join(names)}{more})"


def summary(value: Any) -> str:
    """A one-line summary of ``value`` (see the module docstring)."""
    kind = _kind(value)
    try:
        if kind == "pandas.DataFrame":
            return _frame(value)
        if kind == "pandas.Series":
            return f"Series {len(value):,} {value.dtype} (name {value.name!r})"
        if kind == "numpy.ndarray":
            return f"ndarray {tuple(value.shape)} {value.dtype}"
        if kind == "polars.DataFrame":
            return f"polars DataFrame {value.height:,} x {value.width:,}"
    except Exception:  # an odd subclass: fall back to its repr
        pass
    if isinstance(value, (str, bytes)) and len(value) > _REPR:
        return f"{type(value).__name__} of {len(value):,}: {_short(value)}"
    if isinstance(value, (bool, int, float, complex, str, bytes)) or value is None:
        return _short(value)
    if isinstance(value, (list, tuple, set, frozenset, dict)):
        return f"{type(value).__name__}[{len(value)}]"
    return _short(value)


def _listed(ns: dict[str, Any]) -> list[str]:
    names = []
    for name, value in ns.items():
        if name.startswith("_") or name in _HIDDEN:
            continue
        if type(value).__name__ in _SKIP_TYPES:
            continue
        if callable(value) and not hasattr(value, "shape"):
            continue
        names.append(name)
    return sorted(names)


def variables(ns: dict[str, Any], budget: int = 6000) -> dict[str, Any]:
    """The person's variables, summarised within ``budget`` characters."""
    out: list[dict[str, str]] = []
    used = 0
    names = _listed(ns)
    more: list[str] = []
    for name in names:
        if used >= budget:
            more.append(name)
            continue
        value = ns[name]
        item = {"name": name, "type": type(value).__name__, "summary": summary(value)}
        used += len(name) + len(item["type"]) + len(item["summary"]) + 4
        out.append(item)
    return {"variables": out, "total": len(names), "cut": len(more), "more": more[:_MORE]}


def _frame_detail(value: Any) -> list[str]:
    lines = [_frame(value), "", "head():", value.head().to_string()]
    nulls = value.isna().sum()
    lines += ["", "nulls per column:", nulls[nulls > 0].to_string() if nulls.any() else "none"]
    with contextlib.suppress(Exception):  # no numeric column, or an odd dtype
        lines += ["", "describe():", value.describe().to_string()]
    return lines


def _array_detail(value: Any) -> list[str]:
    lines = [summary(value)]
    try:
        if value.size and value.dtype.kind in "biuf":
            lines.append(
                f"min {value.min()!r}, max {value.max()!r}, mean {value.mean()!r}, "
                f"std {value.std()!r}"
            )
    except Exception:
        pass
    lines.append(_short(value, 400))
    return lines


def inspect_value(ns: dict[str, Any], name: str, budget: int = 4000) -> dict[str, Any]:
    """One variable's richer summary (a KeyError's message names what exists)."""
    if name not in ns or name.startswith("_"):
        raise KeyError(f"no variable {name!r} in the person's kernel")
    value = ns[name]
    kind = _kind(value)
    try:
        if kind == "pandas.DataFrame":
            lines = _frame_detail(value)
        elif kind == "pandas.Series":
            lines = [summary(value), value.head(10).to_string(), value.describe().to_string()]
        elif kind == "numpy.ndarray":
            lines = _array_detail(value)
        else:
            attrs = [a for a in dir(value) if not a.startswith("_")][:40]
            lines = [f"{kind}: {_short(value, 1000)}", f"attributes: {', '.join(attrs)}"]
    except Exception as exc:  # the object's own methods failed: its repr still helps
        lines = [f"{kind}: {_short(value, 1000)}", f"(summary failed: {exc!r})"]
    text = "\n".join(lines)
    cut = len(text) > budget
    return {"name": name, "type": type(value).__name__, "text": text[:budget], "cut": cut}


def state(ns: dict[str, Any]) -> dict[str, Any]:
    """The execution count and the last failed cell's traceback (None: no error yet)."""
    import traceback

    error = None
    if getattr(sys, "last_value", None) is not None:
        lines = traceback.format_exception(sys.last_type, sys.last_value, sys.last_traceback)
        error = "".join(lines)[-4000:]
    shell = ns.get("get_ipython")
    count = None
    if callable(shell):
        try:
            count = int(shell().execution_count)
        except Exception:
            count = None
    return {"execution_count": count, "last_error": error, "python": sys.version.split()[0]}


class _Capped:
    """A file that refuses to grow past ``cap`` bytes (nothing past it is written)."""

    def __init__(self, fh: Any, cap: int) -> None:
        self.fh, self.cap, self.size = fh, cap, 0

    def write(self, data: Any) -> int:
        self.size += len(memoryview(data).cast("B"))
        if self.size > self.cap:
            raise OverflowError(self.size)
        return int(self.fh.write(data))


def dump(ns: dict[str, Any], name: str, path: str, cap: int) -> dict[str, Any]:
    """Pickle ``ns[name]`` to ``path`` within ``cap`` bytes (see the module docstring)."""
    import pickle

    if name not in ns or name.startswith("_"):
        raise KeyError(f"no variable {name!r} in the person's kernel")
    value = ns[name]
    with open(path, "wb") as fh:
        out = _Capped(fh, cap)
        try:
            pickle.dump(value, out, protocol=5)
        except OverflowError:
            return {"type": type(value).__name__, "bytes": None, "over": cap}
    return {"type": type(value).__name__, "bytes": out.size}


def _answer(fn: str, ns: dict[str, Any], args: dict[str, Any]) -> str:
    try:
        value = globals()[fn](ns, **args)
        return json.dumps({"ok": value}, default=str)
    except Exception as exc:
        return json.dumps({"error": f"{type(exc).__name__}: {exc}"})


def expression(source: str, fn: str, args: dict[str, Any]) -> str:
    """The ``user_expressions`` entry that runs ``fn(ns, **args)`` of this module's
    ``source`` in a private dict and evaluates to its JSON answer
    (``{"ok": value}`` or ``{"error": message}``)."""
    program = source + f"\n_out = _answer({fn!r}, _ns, json.loads({json.dumps(args)!r}))\n"
    return (
        "(lambda d: (__import__('builtins').exec(" + repr(program) + ", d), d['_out'])[1])"
        "({'_ns': globals(), '__name__': '_jupyter_agent_look'})"
    )
