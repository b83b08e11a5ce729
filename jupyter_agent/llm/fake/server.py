"""The scripted fake model provider: a real HTTP server on loopback speaking the real wires.

:class:`FakeProvider` serves ``POST /v1/messages`` (Anthropic Messages),
``POST /v1/chat/completions`` (OpenAI Chat Completions, with OpenAI-compatible
``reasoning_content``) and ``POST /v1/responses`` (OpenAI Responses), streamed (SSE) when
the body says ``"stream": true``. Each request is answered by the next step of a script
(``docs/fake-script.md``; :mod:`jupyter_agent.llm.fake.script`), rendered by
:mod:`jupyter_agent.llm.fake.wire` (JSON bodies) and :mod:`jupyter_agent.llm.fake.sse` (SSE).

It runs in a background thread (``ThreadingHTTPServer``; Nagle off, HTTP/1.1 keep-alive),
so sync code, async code and the Jupyter server process itself can use it. ``stop()`` never
waits for a slow (``delay_s``) or hanging (``timeout``) step. A slow step's client that
goes away first (a cancelled call) counts in ``went_away``.

Rules the real APIs follow and the fake checks (answering in their real error shapes):
with ``expect_key``, a missing or wrong key (``x-api-key`` for Anthropic, ``Authorization:
Bearer`` for OpenAI) gets 401; a thinking block / reasoning item sent back altered, and an
Anthropic request whose first message is not the user's, get 400
``invalid_request_error``. None of them consumes a step. Every request is recorded in
``requests`` (path, headers as received, JSON body, wire, step index); ``accepted``
counts the connections accepted (``open_connections`` those still open).

``POST /v1/embeddings`` (OpenAI's wire) answers every request with deterministic vectors
(:mod:`jupyter_agent.llm.fake.embed`: a hashed bag of terms, 64 dims, L2-normalised; the
``embed_terms`` / ``embed_synonyms`` / ``embed_dims`` arguments shape them). It takes no
script step; its requests are recorded in ``embed_requests`` (not ``requests``, so a test
counting model calls is not disturbed). Setting ``embed_error`` to a status (500, 503, ...)
makes it answer that error, and ``embed_delay_s`` delays it: an embeddings endpoint that
fails or hangs while the chat endpoints work.

Prompt caching is emulated when asked (``FakeProvider(..., prefix_cache=True)`` or the
script's ``"prefix_cache": true``: :mod:`jupyter_agent.llm.fake.cache`).

Command line: ``python -m jupyter_agent.llm.fake.server --port 0 --script FILE [--prefix-cache]``
prints the base URL and serves until killed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import socket
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

from jupyter_agent.llm.fake import embed as fake_embed
from jupyter_agent.llm.fake import sse as fake_sse
from jupyter_agent.llm.fake import wire as wire_fmt
from jupyter_agent.llm.fake.cache import PrefixCache
from jupyter_agent.llm.fake.script import Script, Step, parse_script, turn_position
from jupyter_agent.llm.fake.waits import wait_or_gone

__all__ = ["FakeProvider", "RecordedRequest", "main"]

ROUTES = {
    "/v1/messages": "anthropic",
    "/v1/chat/completions": "openai-chat",
    "/v1/responses": "openai-responses",
}
EMBEDDINGS = "/v1/embeddings"


@dataclass(frozen=True)
class RecordedRequest:
    """One request the fake received. ``headers`` keys are lower-case; ``step`` is None
    when no step answered it (auth failure, bad thinking block, a first message not the
    user's, unknown route)."""

    path: str
    headers: dict[str, str]
    json: Any
    wire: str | None
    step: int | None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeProvider


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test output is not the place for access logs."""

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, add=True)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        self.server.fake._track(self.connection, add=False)

    def do_POST(self) -> None:
        try:
            self.server.fake._serve(self)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True  # the client went away (cancelled): nothing to do
            self.server.fake.went_away += 1

    def do_GET(self) -> None:
        self.send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)

    def start_stream(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()

    def send_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()


class FakeProvider:
    """A scripted model provider on loopback. See the module docstring."""

    def __init__(
        self,
        script: Script | list[Any] | dict[str, Any] | str | Path,
        *,
        expect_key: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        prefix_cache: bool = False,
        embed_terms: Callable[[str], Sequence[str]] | None = None,
        embed_synonyms: Mapping[str, str] | None = None,
        embed_dims: int = fake_embed.DIMS,
    ) -> None:
        self._script = parse_script(script)
        self._embed_terms = embed_terms or fake_embed.plain_terms
        self._embed_synonyms = dict(embed_synonyms or {})
        self._embed_dims = embed_dims
        #: A status the embeddings route answers with instead of vectors (None: vectors).
        self.embed_error: int | None = None
        #: Seconds the embeddings route waits before answering (cut short by ``stop()``).
        self.embed_delay_s = 0.0
        self.embed_requests: list[RecordedRequest] = []
        self._prefix_cache = prefix_cache
        self._cache = PrefixCache()
        self._expect_key = expect_key
        self._host, self._port = host, port
        self._lock = threading.Lock()
        self._next = 0
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.signer = wire_fmt.Signer()
        self.requests: list[RecordedRequest] = []
        self.went_away = 0  #: slow steps whose client went away first (cancelled calls)
        #: Connections accepted so far (a client that reuses its connections opens one).
        self.accepted = 0

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> FakeProvider:
        """Bind and serve in a daemon thread; returns self."""
        if self._server is not None:
            return self
        self._stopping.clear()
        server = _Server((self._host, self._port), _Handler)
        server.fake = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.name = f"fake-provider-{self.port}"
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake slow steps, close open connections. Idempotent."""
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        server.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeProvider is not started")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT``: the Anthropic base URL; OpenAI's is this plus ``/v1``."""
        host = self._host if ":" not in self._host else f"[{self._host}]"
        return f"http://{host}:{self.port}"

    # ---------------------------------------------------------------- script

    def load(self, script: Script | list[Any] | dict[str, Any] | str | Path) -> None:
        """Replace the script; the next request gets its first step."""
        parsed = parse_script(script)
        with self._lock:
            self._script, self._next = parsed, 0

    @property
    def open_connections(self) -> int:
        """How many accepted connections are still open."""
        with self._lock:
            return len(self._connections)

    @property
    def remaining(self) -> int:
        """Steps not answered yet (a repeating script never runs out: its length)."""
        with self._lock:
            if self._script.repeat:
                return len(self._script.steps)
            return max(0, len(self._script.steps) - self._next)

    def _take(self, wire: str, body: dict[str, Any]) -> tuple[int, Step] | None:
        with self._lock:
            steps = self._script.steps_for(wire, body)
            position = turn_position(wire, body) if self._script.per_turn else self._next
            if self._script.repeat:
                index = position % len(steps)
            elif position >= len(steps):
                return None
            else:
                index = position
            self._next += 1
            return index, steps[index]

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
                self.accepted += 1
            else:
                self._connections.discard(conn)

    # ---------------------------------------------------------------- serving

    def _record(self, h: _Handler, body: Any, wire: str | None, step: int | None) -> None:
        headers = {k.lower(): v for k, v in h.headers.items()}
        with self._lock:
            self.requests.append(RecordedRequest(h.path, headers, body, wire, step))

    def _key_ok(self, h: _Handler, wire: str) -> bool:
        if self._expect_key is None:
            return True
        if wire == "anthropic":
            return h.headers.get("x-api-key") == self._expect_key
        return h.headers.get("authorization") == f"Bearer {self._expect_key}"

    def _serve(self, h: _Handler) -> None:
        raw = h.rfile.read(int(h.headers.get("content-length") or 0))
        path = h.path.split("?", 1)[0]
        wire = ROUTES.get(path)
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = None
        if path == EMBEDDINGS:
            return self._embeddings(h, body)
        if wire is None:
            self._record(h, body, None, None)
            h.send_json(404, {"error": {"message": f"no route {h.path}", "type": "not_found"}})
            return
        if not isinstance(body, dict):
            self._record(h, body, wire, None)
            return self._error(h, wire, 400, None, "request body must be a JSON object")
        if not self._key_ok(h, wire):
            self._record(h, body, wire, None)
            message = "invalid x-api-key" if wire == "anthropic" else "Incorrect API key provided"
            return self._error(h, wire, 401, None, message)
        problem = wire_fmt.check_roles(wire, body) or wire_fmt.check_thinking(
            wire, body, self.signer
        )
        if problem:
            self._record(h, body, wire, None)
            return self._error(h, wire, 400, "invalid_request_error", problem)
        taken = self._take(wire, body)
        self._record(h, body, wire, None if taken is None else taken[0])
        if taken is None:
            count = len(self._script.steps)
            message = f"fake provider: script exhausted ({count} steps answered)"
            return self._error(h, wire, 400, "invalid_request_error", message)
        self._answer(h, wire, body, *taken)

    def _embeddings(self, h: _Handler, body: Any) -> None:
        headers = {k.lower(): v for k, v in h.headers.items()}
        with self._lock:
            self.embed_requests.append(RecordedRequest(h.path, headers, body, None, None))
        wire = "openai-chat"  # OpenAI's error shapes
        if self.embed_delay_s and self._stopping.wait(self.embed_delay_s):
            h.close_connection = True
            return
        if not self._key_ok(h, wire):
            return self._error(h, wire, 401, None, "Incorrect API key provided")
        if self.embed_error is not None:
            message = f"fake provider: embeddings error {self.embed_error}"
            return self._error(h, wire, self.embed_error, None, message)
        if not isinstance(body, dict):
            return self._error(h, wire, 400, None, "request body must be a JSON object")
        status, reply = fake_embed.embeddings_reply(
            body, dims=self._embed_dims, terms=self._embed_terms, synonyms=self._embed_synonyms
        )
        h.send_json(status, reply)

    def _error(
        self,
        h: _Handler,
        wire: str,
        status: int,
        kind: str | None,
        message: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        h.send_json(status, wire_fmt.error_body(wire, status, kind, message), headers)

    def _answer(self, h: _Handler, wire: str, body: dict[str, Any], index: int, step: Step) -> None:
        if step.delay_s:  # a slow step; a client gone meanwhile is counted, not answered
            stopped, gone = wait_or_gone(h.connection, self._stopping, step.delay_s)
            self.went_away += int(gone)
            if stopped or gone:
                h.close_connection = True
                return
        if step.timeout:
            self._stopping.wait()
            h.close_connection = True
            return
        mismatch = wire_fmt.check_expect(step, wire, body)
        if mismatch:
            message = f"fake provider step {index}: {mismatch}"
            return self._error(h, wire, 400, "invalid_request_error", message)
        if step.error is not None:
            err = step.error
            headers = {}
            if err.retry_after is not None:
                headers["retry-after"] = err.retry_after
            if err.retry_after_ms is not None:
                headers["retry-after-ms"] = str(err.retry_after_ms)
            message = err.message or f"fake provider: scripted error {err.status}"
            return self._error(h, wire, err.status, err.type, message, headers)
        stream = body.get("stream") is True
        if step.raw_body is not None or step.raw_stream is not None:
            return self._raw(h, wire, index, step, stream)
        if step.malformed:
            if not stream:
                return h.send_json(200, b'{"id": "broken", "content": [')
            h.start_stream()
            h.send_chunk(b'data: {"id": "broken", "choices": [\n\n')
            h.send_chunk(b"")
            return
        cached = None
        if self._prefix_cache or self._script.prefix_cache:
            cached = self._cache.serve(wire, body)
        plan = wire_fmt.make_plan(step, body, cache_read=cached)
        if not stream:
            return h.send_json(200, wire_fmt.render_json(wire, plan, body, self.signer))
        frames = fake_sse.render_stream(wire, plan, body, self.signer)
        h.start_stream()
        deltas = 0
        for sequence, frame in enumerate(frames):
            if step.stream_error_after is not None and deltas >= step.stream_error_after:
                error = fake_sse.stream_error_frame(wire, step.stream_error_type, sequence)
                h.send_chunk(error.encode())
                break
            h.send_chunk(frame.encode())
            deltas += frame.text_delta
        h.send_chunk(b"")

    def _raw(self, h: _Handler, wire: str, index: int, step: Step, stream: bool) -> None:
        # Exactly the scripted text, never rendered: replies no adapter would build.
        raw = step.raw_stream if stream else step.raw_body
        if raw is None:
            kind = "raw_stream" if stream else "raw_body"
            form = "a streaming" if stream else "a non-streaming"
            message = f"fake provider step {index}: {form} request needs {kind!r}"
            return self._error(h, wire, 400, "invalid_request_error", message)
        data = raw.encode("utf-8", "surrogatepass")
        if not stream:
            return h.send_json(200, data)
        h.start_stream()
        h.send_chunk(data)
        h.send_chunk(b"")


def main(argv: list[str] | None = None) -> int:
    """``python -m jupyter_agent.llm.fake.server --port 0 --script FILE``."""
    parser = argparse.ArgumentParser(prog="python -m jupyter_agent.llm.fake.server")
    parser.add_argument("--script", required=True, help="the JSON script file")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--prefix-cache", action="store_true", help="emulate prompt caching")
    args = parser.parse_args(argv)
    fake = FakeProvider(
        Path(args.script), host=args.host, port=args.port, prefix_cache=args.prefix_cache
    ).start()
    print(fake.base_url, flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    try:
        while not done.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        fake.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
