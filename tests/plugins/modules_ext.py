"""A tiny Jupyter server extension for tests: ``GET /test/modules`` answers the names in
``sys.modules`` of the server's process (which modules a start loaded)."""

from __future__ import annotations

import json
import sys
from typing import Any

from jupyter_server.base.handlers import APIHandler
from tornado import web


class ModulesHandler(APIHandler):  # type: ignore[misc]
    @web.authenticated
    def get(self) -> None:
        self.finish(json.dumps(sorted(sys.modules)))


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "tests.plugins.modules_ext"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    serverapp.web_app.add_handlers(".*$", [(r"/test/modules", ModulesHandler)])
