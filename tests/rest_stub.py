"""A small real tornado server speaking a few agent routes with the real shapes (DESIGN 3).

Used by the client and CLI tests to check error handling and the trace verbs' HTTP side
while the real server routes are being built. It serves runs from effect logs in a folder,
under a base URL, behind a token (``Authorization: token T``), with ``{message, reason}``
JSON errors; and a chat events WebSocket that sends the kept events from ``since``.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tornado import web, websocket
from tornado.httpserver import HTTPServer

from jupyter_agent.trace.log import read_log
from jupyter_agent.trace.notebook import run_notebook
from jupyter_agent.trace.show import show_run
from jupyter_agent.trace.stats import run_stats


@dataclass
class StubState:
    token: str
    runs: Path
    events: list[dict[str, Any]] = field(default_factory=list)
    sent: list[dict[str, Any]] = field(default_factory=list)


class _Base(web.RequestHandler):
    state: StubState

    def initialize(self, state: StubState) -> None:
        self.state = state

    def prepare(self) -> None:
        if self.request.headers.get("Authorization") != f"token {self.state.token}":
            raise web.HTTPError(403)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        self.set_header("Content-Type", "application/json")
        message, reason = self._reason, None
        exc = kwargs.get("exc_info", (None, None))[1]
        if isinstance(exc, web.HTTPError):
            message = exc.log_message or message
            reason = exc.reason
        self.finish(json.dumps({"message": message, "reason": reason}))

    def log_path(self, run_id: str) -> Path:
        path = self.state.runs / f"{run_id}.jsonl"
        if not path.is_file():
            raise web.HTTPError(404, f"unknown run: {run_id}", reason="unknown_run")
        return path


class Status(_Base):
    def get(self) -> None:
        self.write({"version": "0.0.stub", "tiers": {}, "demo": True})


class Runs(_Base):
    def get(self) -> None:
        runs = []
        for path in sorted(self.state.runs.glob("*.jsonl"), reverse=True):
            trace = read_log(path)
            turn = show_run(trace)["turn"] or {}
            llm = turn.get("llm") or {}
            runs.append(
                {
                    "run_id": trace.run_id,
                    "chat_id": trace.header.get("chat_id"),
                    "program": "toolcaller",
                    "status": "done",
                    "started": trace.header.get("created"),
                    "ended": None,
                    "model": turn.get("model"),
                    "modelCalls": llm.get("modelCalls", 0),
                    "cells": llm.get("cells", 0),
                    "usage": llm.get("usage") or {},
                    "cost": llm.get("cost"),
                    "stopReason": llm.get("stopReason"),
                    "endCause": llm.get("endCause"),
                }
            )
        limit = int(self.get_argument("limit", "50"))
        self.write({"runs": runs[:limit], "next": None})


class Run(_Base):
    def get(self, run_id: str) -> None:
        path = self.log_path(run_id)
        if self.get_argument("log", None) == "raw":
            self.set_header("Content-Type", "application/x-ndjson")
            self.write(path.read_bytes())
            return
        self.write(show_run(read_log(path), full=self.get_argument("full", "") == "1"))


class Stats(_Base):
    def get(self, run_id: str) -> None:
        self.write(run_stats(read_log(self.log_path(run_id))))


class Notebook(_Base):
    def get(self, run_id: str) -> None:
        self.write(dict(run_notebook(read_log(self.log_path(run_id)))))


class Messages(_Base):
    def post(self, chat_id: str) -> None:
        body = json.loads(self.request.body or b"{}")
        if not isinstance(body.get("text"), str):
            raise web.HTTPError(400, "text must be a string", reason="bad_request")
        self.state.sent.append({"chat_id": chat_id, **body})
        self.set_status(202)
        self.write({"run_id": "run_01STUB", "routed": "run"})


class Forbidden(_Base):
    """What jupyter_server's authorizer answers a token without the permission."""

    def get(self) -> None:
        raise web.HTTPError(403, "User is not authorized to execute on resource: agent.")


class Broken(_Base):
    def get(self) -> None:
        self.set_status(502)
        self.set_header("Content-Type", "text/html")
        self.finish("<html>bad gateway</html>")


class Events(websocket.WebSocketHandler):
    def initialize(self, state: StubState) -> None:
        self.state = state

    def prepare(self) -> None:
        if self.request.headers.get("Authorization") != f"token {self.state.token}":
            raise web.HTTPError(403)

    def open(self, chat_id: str) -> None:  # type: ignore[override]
        since = int(self.get_argument("since", "0"))
        for event in self.state.events:
            if event["chat_id"] == chat_id and event["seq"] > since:
                self.write_message(json.dumps(event))
        self.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def stub_server(state: StubState, base_url: str = "/") -> Iterator[str]:
    """Serve the stub on a free loopback port in a thread; yields its address."""
    routes = [
        (r"agent/status", Status),
        (r"agent/runs", Runs),
        (r"agent/runs/([^/]+)", Run),
        (r"agent/runs/([^/]+)/stats", Stats),
        (r"agent/runs/([^/]+)/notebook", Notebook),
        (r"agent/chats/([^/]+)/messages", Messages),
        (r"agent/chats/([^/]+)/events", Events),
        (r"agent/broken", Broken),
        (r"agent/forbidden", Forbidden),
    ]
    app = web.Application([(base_url + p, h, {"state": state}) for p, h in routes])
    port = free_port()
    ready = threading.Event()
    holder: dict[str, Any] = {}

    def serve() -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        server = HTTPServer(app)
        server.listen(port, "127.0.0.1")
        holder.update(loop=loop, server=server)
        ready.set()
        loop.run_forever()
        server.stop()
        loop.run_until_complete(server.close_all_connections())
        loop.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield f"http://127.0.0.1:{port}{base_url}"
    finally:
        holder["loop"].call_soon_threadsafe(holder["loop"].stop)
        thread.join(10)
