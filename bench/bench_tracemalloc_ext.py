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

import gc
import json
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
        gc.collect()
        counts: dict[str, int] = {}
        for obj in gc.get_objects():
            name = f"{type(obj).__module__}.{type(obj).__qualname__}"
            counts[name] = counts.get(name, 0) + 1
        self.finish(json.dumps(counts))


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    return [{"module": "bench_tracemalloc_ext"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    serverapp.web_app.add_handlers(
        ".*$", [(r"/bench/tracemalloc", _Trace), (r"/bench/types", _Types)]
    )
