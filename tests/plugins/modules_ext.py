"""A tiny Jupyter server extension for tests: ``GET /test/modules`` answers the names in
``sys.modules`` of the server's process (which modules a start loaded); with ``?at=load``,
those loaded when the extensions were loaded (this one after ``jupyter_agent``), before
the server's loop ran anything the agent starts once it listens. ``GET /test/gc`` answers
``{"frozen": N}``: how many objects ``gc.freeze()`` has moved out of the collector's
reach in that process (0: never called)."""

from __future__ import annotations

import gc
import json
import sys
from typing import Any

from jupyter_server.base.handlers import APIHandler
from tornado import web

_AT_LOAD: list[str] = []


class ModulesHandler(APIHandler):  # type: ignore[misc]
    @web.authenticated
    def get(self) -> None:
        at_load = self.get_query_argument("at", "") == "load"
        self.finish(json.dumps(_AT_LOAD if at_load else sorted(sys.modules)))


class GcHandler(APIHandler):  # type: ignore[misc]
    @web.authenticated
    def get(self) -> None:
        self.finish(json.dumps({"frozen": gc.get_freeze_count()}))


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "tests.plugins.modules_ext"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    _AT_LOAD[:] = sorted(sys.modules)
    serverapp.web_app.add_handlers(
        ".*$", [(r"/test/modules", ModulesHandler), (r"/test/gc", GcHandler)]
    )
