"""In-cell apps (``chat``, ``llm``, ...) and ``batch``: calls the host performs for the cell.

The proxies are built from :data:`jupyter_agent.core.loop.apps.ALL_APPS`. A method call binds its
arguments to the catalogue signature (defaults applied), sends ONE request to the host and
blocks for the reply; the host performs it as an ``app.call`` effect. Wire (the prompt of a
stdin ``input_request``, answered by ``input_reply``; both JSON):

- call:  ``{"jupyter_agent": "app", "app": A, "method": M, "args": {...}}``
  reply: ``{"ok": bool, "value": ..., "error": str | None, "seq": int, "mutation": bool,
  "args"?: {...}}`` (``args``: what to record of the arguments instead of the call's own,
  when the host refused a text that holds a secret)
- batch: ``{"jupyter_agent": "batch", "items": [{"app", "method", "args"}, ...]}``
  reply: ``{"results": [<one call reply per item, in order>]}``

A failed call raises :class:`~jupyter_agent.exceptions.AppCallError` with the host's
message. ``batch(*calls)`` takes specs made with ``proxy.method.spec(...)`` (or tuples
``("llm", "chat", {"messages": ...})``, or one list of either) and returns a list of
:class:`AppResult` in order (``.ok``, ``.value``, ``.error``, ``.seq``; ``.unwrap()`` returns
the value or raises AppCallError): an item's failure never hides the other items.

``notebook.read``'s JSON value becomes a :class:`~.notebook_view.NotebookView` (also in a
batch's ``AppResult.value``); ``notebook.variables``'s a
:class:`~.person_values.KernelVariables`; ``notebook.fetch``'s the copied value itself, from
the reply's unlogged ``payload`` (:func:`~.person_values.fetched`).

App ``mcp`` is not in the catalogue: its methods are ``"<server>.<tool>"`` of the
MCP servers the host knows (:mod:`.mcp_app` binds ``mcp``). Its calls travel and are
recorded like any other; in a batch as ``mcp.s.t.spec(...)`` or ``("mcp", "s.t", {...})``
(the arguments go as given: the host checks them against the tool). Its reply value becomes
what :func:`~.mcp_values.mcp_value` makes of it.
"""

from __future__ import annotations

import ast
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from jupyter_agent.codec import dump_dict
from jupyter_agent.core.digest.cells import AppCallRecord
from jupyter_agent.core.loop.apps import ALL_APPS, AppSpec, MethodSpec
from jupyter_agent.core.mcp.catalogue import MCP_APP
from jupyter_agent.exceptions import AppCallError
from jupyter_agent.kernel.mcp_values import mcp_value
from jupyter_agent.kernel.notebook_view import NotebookView
from jupyter_agent.kernel.person_values import KernelVariables, fetched, inspected

__all__ = [
    "AppCall",
    "AppProxy",
    "AppResult",
    "HostChannel",
    "build_apps",
    "make_batch",
    "summarize_args",
]

_SUMMARY_STR = 200
_SUMMARY_ITEMS = 20


class HostChannel(Protocol):
    """How app proxies reach the host (the kernel implements it over the stdin channel)."""

    def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Send one request, block for the JSON reply; AppCallError when there is no host."""
        ...

    def record(self, record: AppCallRecord) -> None:
        """Add one call to the current cell's ``app_calls``."""
        ...

    def next_batch(self) -> int:
        """A new batch number, unique within the current cell (for ``AppCallRecord.batch``)."""
        ...


def summarize_args(value: Any, depth: int = 0) -> Any:
    """A bounded, JSON-able summary of call arguments for the cell's app-call records."""
    if isinstance(value, str):
        if len(value) > _SUMMARY_STR:
            return value[:_SUMMARY_STR] + f"... ({len(value)} chars)"
        return value
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if depth >= 4:
        return f"<{type(value).__name__}>"
    if isinstance(value, dict):
        items = list(value.items())
        out = {str(k): summarize_args(v, depth + 1) for k, v in items[:_SUMMARY_ITEMS]}
        if len(items) > _SUMMARY_ITEMS:
            out["..."] = f"{len(items) - _SUMMARY_ITEMS} more"
        return out
    if isinstance(value, (list, tuple)):
        seq = [summarize_args(v, depth + 1) for v in value[:_SUMMARY_ITEMS]]
        if len(value) > _SUMMARY_ITEMS:
            seq.append(f"... {len(value) - _SUMMARY_ITEMS} more")
        return seq
    return summarize_args(repr(value), depth)


def _signature(spec: MethodSpec) -> inspect.Signature:
    """The Python signature of a catalogue method, parsed from its ``signature`` text."""
    head, _, rest = spec.signature.partition("(")
    arglist = rest.split("->")[0].strip()
    if not head or not arglist.endswith(")"):
        raise ValueError(f"bad catalogue signature: {spec.signature!r}")
    tree = ast.parse(f"def f({arglist}: pass")
    func = tree.body[0]
    assert isinstance(func, ast.FunctionDef)
    args = func.args
    params: list[inspect.Parameter] = []
    defaults = [None] * (len(args.args) - len(args.defaults)) + list(args.defaults)
    for arg, default in zip(args.args, defaults, strict=True):
        params.append(
            inspect.Parameter(
                arg.arg,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                default=inspect.Parameter.empty if default is None else ast.literal_eval(default),
            )
        )
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        params.append(
            inspect.Parameter(
                arg.arg,
                inspect.Parameter.KEYWORD_ONLY,
                default=(
                    inspect.Parameter.empty if kw_default is None else ast.literal_eval(kw_default)
                ),
            )
        )
    return inspect.Signature(params)


@dataclass(frozen=True)
class AppCall:
    """A call not yet made: what ``batch`` sends (``llm.chat.spec("hi")``)."""

    app: str
    method: str
    args: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """``{app, method, args}``: one call or batch item of the wire (module doc)."""
        return dump_dict(self)


@dataclass(frozen=True)
class AppResult:
    """One batch item's outcome."""

    ok: bool
    value: Any = None
    error: str | None = None
    seq: int | None = None

    def unwrap(self) -> Any:
        """The value, or AppCallError with the host's message."""
        if not self.ok:
            raise AppCallError(self.error or "app call failed")
        return self.value


#: The objects some methods' JSON values become in the cell (``notebook.read()``'s view).
_VALUE_TYPES: dict[tuple[str, str], Callable[[dict[str, Any]], Any]] = {
    ("notebook", "read"): NotebookView,
    ("notebook", "variables"): KernelVariables,
    ("notebook", "inspect"): inspected,
}


def _check_json(call: AppCall) -> None:
    try:
        json.dumps(call.args)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{call.app}.{call.method}: arguments must be JSON values ({exc})"
        ) from None


def _record(
    host: HostChannel, call: AppCall, reply: dict[str, Any], batch: int | None = None
) -> AppResult:
    ok = bool(reply.get("ok"))
    error = None if ok else str(reply.get("error") or "app call failed")
    seq = reply.get("seq")
    # The host's version of the arguments, when it refused what they held (a secret).
    args = reply["args"] if isinstance(reply.get("args"), dict) else call.args
    host.record(
        AppCallRecord(
            seq=seq if isinstance(seq, int) else None,
            app=call.app,
            method=call.method,
            args=summarize_args(args),
            ok=ok,
            mutation=bool(reply.get("mutation")),
            error=error,
            batch=batch,
        )
    )
    value = reply.get("value")
    wrap = _VALUE_TYPES.get((call.app, call.method))
    if ok and (call.app, call.method) == ("notebook", "fetch"):
        return AppResult(ok=ok, value=fetched(reply), error=error, seq=seq)
    if ok and wrap is not None and isinstance(value, dict):
        value = wrap(value)
    elif ok and call.app == MCP_APP:
        value = mcp_value(value)
    return AppResult(ok=ok, value=value, error=error, seq=seq)


class AppMethod:
    """``app.method``: call it to perform the call now, or ``.spec(...)`` for ``batch``."""

    def __init__(self, app: str, spec: MethodSpec, host: HostChannel) -> None:
        self._app = app
        self._spec = spec
        self._host = host
        self._sig = _signature(spec)
        self.__doc__ = f"{spec.signature}\n\n{spec.doc}"

    def spec(self, *args: Any, **kwargs: Any) -> AppCall:
        """The call as data, for ``batch(...)``."""
        try:
            bound = self._sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{self._spec.signature}: {exc}") from None
        bound.apply_defaults()
        call = AppCall(self._app, self._spec.name, dict(bound.arguments))
        _check_json(call)
        return call

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        call = self.spec(*args, **kwargs)
        reply = self._host.request({"jupyter_agent": "app", **call.to_json()})
        return _record(self._host, call, reply).unwrap()

    def __repr__(self) -> str:
        return f"<app method {self._spec.signature}>"


class AppProxy:
    """An app bound in the namespace (``chat``, ``llm``); its methods come from the catalogue."""

    def __init__(self, spec: AppSpec, host: HostChannel) -> None:
        self._spec = spec
        self.__doc__ = spec.doc + "\n\n" + "\n".join(m.signature for m in spec.methods)
        for method in spec.methods:
            setattr(self, method.name, AppMethod(spec.name, method, host))

    def __repr__(self) -> str:
        methods = ", ".join(m.signature for m in self._spec.methods)
        return f"<app {self._spec.name}: {methods}>"


def _as_call(item: Any) -> AppCall:
    if isinstance(item, AppCall):
        return item
    if isinstance(item, (tuple, list)) and len(item) in (2, 3):
        app, method = str(item[0]), str(item[1])
        args = dict(item[2]) if len(item) == 3 else {}
        if app == MCP_APP:  # no catalogue signature here: the host checks the tool's
            server, dot, tool = method.partition(".")
            if not (server and dot and tool):
                raise AppCallError(f"batch: an mcp method is 'server.tool', not {method!r}")
            call = AppCall(app, method, args)
            _check_json(call)
            return call
        from jupyter_agent.core.loop.apps import find_method

        spec = find_method(app, method)
        if spec is None:
            raise AppCallError(f"batch: no app method {app}.{method}")
        try:
            bound = _signature(spec).bind(**args)
        except TypeError as exc:
            raise TypeError(f"{spec.signature}: {exc}") from None
        bound.apply_defaults()
        call = AppCall(app, method, dict(bound.arguments))
        _check_json(call)
        return call
    raise TypeError(
        "batch items are llm.chat.spec(...)-style specs or (app, method, {args}) tuples, "
        f"not {type(item).__name__}"
    )


def make_batch(host: HostChannel) -> Callable[..., list[AppResult]]:
    """The ``batch`` function bound in the namespace."""

    def batch(*items: Any) -> list[AppResult]:
        """Fan several app calls out in ONE host round trip; results in order (AppResult).

        ``batch(llm.chat.spec("q1"), llm.chat.spec("q2"))`` or
        ``batch([("llm", "chat", {"messages": "q1"}), ...])``. The host performs the items
        concurrently; each result has ``.ok``, ``.value``, ``.error`` and ``.unwrap()``.
        """
        if len(items) == 1 and isinstance(items[0], list):
            items = tuple(items[0])
        calls = [_as_call(item) for item in items]
        if not calls:
            return []
        reply = host.request(
            {"jupyter_agent": "batch", "items": [call.to_json() for call in calls]}
        )
        results = reply.get("results")
        if not isinstance(results, list) or len(results) != len(calls):
            error = str(reply.get("error") or "the host gave no result list for the batch")
            results = [{"ok": False, "error": error}] * len(calls)
        number = host.next_batch()
        return [
            _record(host, call, result if isinstance(result, dict) else {}, number)
            for call, result in zip(calls, results, strict=True)
        ]

    return batch


def build_apps(host: HostChannel) -> dict[str, AppProxy]:
    """One proxy per catalogue app, keyed by the name bound in the namespace."""
    return {spec.name: AppProxy(spec, host) for spec in ALL_APPS}
