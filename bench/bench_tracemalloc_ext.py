"""A bench-only Jupyter server extension: ``GET /bench/tracemalloc?start=FRAMES`` starts
tracing, ``?take=NAME`` keeps a
tracemalloc snapshot under NAME, ``?diff=A,B`` answers the top lines that grew from A to
B (``[{where, size_kb, count}]``), and ``GET /bench/types`` collects and counts the live
gc-tracked objects per type (``{type: count}``: what holds the growth, beside where it was
allocated). Loaded by
``bench/bench_memory.py`` only (``PYTHONTRACEMALLOC`` set, this folder on ``PYTHONPATH``);
never part of the package.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import tracemalloc
from typing import Any

from jupyter_server.base.handlers import JupyterHandler
from tornado import web

_SNAPSHOTS: dict[str, tracemalloc.Snapshot] = {}
_SKIP = (tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen*"))


class _Trace(JupyterHandler):  # type: ignore[misc]
    @web.authenticated
    def get(self) -> None:
        gc.collect()
        frames = self.get_argument("start", "")
        if frames:  # trace from now on: what is still held later grew after this point
            tracemalloc.start(int(frames))
            self.finish(json.dumps({"tracing": int(frames)}))
            return
        take = self.get_argument("take", "")
        if take:
            _SNAPSHOTS[take] = tracemalloc.take_snapshot().filter_traces(_SKIP)
            self.finish(json.dumps({"taken": take}))
            return
        a, b = self.get_argument("diff").split(",")
        if self.get_argument("tb", ""):  # the top growths with their whole tracebacks
            grown = _SNAPSHOTS[b].compare_to(_SNAPSHOTS[a], "traceback")[:8]
            self.finish(
                json.dumps(
                    [
                        {"size_kb": round(s.size_diff / 1024, 1), "frames": s.traceback.format()}
                        for s in grown
                    ]
                )
            )
            return
        stats = _SNAPSHOTS[b].compare_to(_SNAPSHOTS[a], "lineno")
        top: list[dict[str, Any]] = [
            {
                "where": f"{s.traceback[0].filename}:{s.traceback[0].lineno}",
                "size_kb": round(s.size_diff / 1024, 1),
                "count": s.count_diff,
            }
            for s in stats[:25]
        ]
        self.finish(json.dumps(top))


class _Types(JupyterHandler):  # type: ignore[misc]
    @web.authenticated
    def get(self) -> None:
        gc.unfreeze()  # the start's heap (freeze_start_heap) is counted too
        gc.collect()
        counts: dict[str, int] = {}
        for obj in gc.get_objects():
            name = f"{type(obj).__module__}.{type(obj).__qualname__}"
            counts[name] = counts.get(name, 0) + 1
        self.finish(json.dumps(counts))


class _Holders(JupyterHandler):  # type: ignore[misc]
    """``?type=MODULE.QUALNAME``: for 3 live objects of that type (the newest), the chain
    of what refers to them, 6 levels up (types and, for dicts, their keys): who holds the
    growth."""

    @web.authenticated
    def get(self) -> None:
        gc.unfreeze()  # a holder made at the start (freeze_start_heap) is a referrer too
        gc.collect()
        wanted = self.get_argument("type")
        targets = [
            o for o in gc.get_objects() if f"{type(o).__module__}.{type(o).__qualname__}" == wanted
        ][-3:]
        chains = [
            [repr(targets[i])[:200], *_chain(targets[i], 6, {id(targets)})]
            for i in range(len(targets))
        ]
        self.finish(json.dumps({"count": len(chains), "chains": chains}))


def _chain(obj: object, depth: int, ignore: set[int]) -> list[str]:
    """A path of referrers from ``obj`` up: at each step the first referrer that is not a
    frame nor this search's own bookkeeping. Plain loops: a comprehension naming
    ``current`` would make it a cell, itself a referrer."""
    path: list[str] = []
    frame_type = type(sys._getframe())
    current = obj
    for _ in range(depth):
        referrers = gc.get_referrers(current)
        ignore.add(id(referrers))
        holder = None
        for r in referrers:
            if id(r) not in ignore and not isinstance(r, frame_type):
                holder = r
                break
        if holder is None:
            break
        label = f"{type(holder).__module__}.{type(holder).__qualname__}"
        if isinstance(holder, dict):
            for k, v in holder.items():
                if v is current:
                    label += f" key={k!r}"[:100]
                    break
        elif hasattr(holder, "__qualname__"):
            label += f" {holder.__qualname__}"
        path.append(label)
        current = holder
    return path


class _Timers(JupyterHandler):  # type: ignore[misc]
    """The loop's scheduled timers: cancelled ones still held, and the live ones by
    callback and by how far ahead they fire (what keeps request contexts alive)."""

    @web.authenticated
    def get(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        live: dict[str, int] = {}
        cancelled = 0
        for handle in list(getattr(loop, "_scheduled", [])):
            if handle.cancelled():
                cancelled += 1
                continue
            callback = getattr(handle, "_callback", None)
            args = getattr(handle, "_args", None) or ()
            if args and getattr(callback, "__name__", "") == "_run_callback":
                callback = args[0]  # IOLoop.call_later's wrapper: what it runs
                callback = getattr(callback, "func", callback)  # a functools.partial's
            name = getattr(callback, "__qualname__", repr(callback))[:80]
            key = f"{name} in ~{round(handle.when() - now, -1):.0f} s"
            live[key] = live.get(key, 0) + 1
        self.finish(json.dumps({"cancelled": cancelled, "live": live}))


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    return [{"module": "bench_tracemalloc_ext"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    serverapp.web_app.add_handlers(
        ".*$",
        [
            (r"/bench/tracemalloc", _Trace),
            (r"/bench/types", _Types),
            (r"/bench/holders", _Holders),
            (r"/bench/timers", _Timers),
        ],
    )
