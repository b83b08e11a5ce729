"""A slow store never delays the rest of the server: every store call of a request runs
off the event loop, so ``GET agent/status`` answers at once while a message, a chat list or
a delete waits 500 ms per statement on the database (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import gc
import http.client
import json
import statistics
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest
from sqlalchemy import event
from tornado.httpclient import HTTPClientError

from tests.server.conftest import agent_app
from tests.server.helpers import call, new_chat

DELAY_S = 0.5
T = TypeVar("T")


@pytest.fixture
def jp_base_url() -> str:
    return "/"


@pytest.fixture
def agent_config() -> dict[str, Any]:
    # The store is SQLite or PostgreSQL by the server suite's pairing (tests/server/conftest).
    return {"pool_size": 0}


class SlowStore:
    """Every statement the store runs first waits ``DELAY_S`` while :attr:`on`."""

    def __init__(self, engine: Any) -> None:
        self.on = False
        self.statements = 0
        event.listen(engine, "before_cursor_execute", self._wait)

    def _wait(self, *_args: Any) -> None:
        if self.on:
            self.statements += 1
            time.sleep(DELAY_S)  # in the thread the store runs in; on the loop it blocks all


@pytest.fixture
def slow_store(jp_serverapp: Any, fetch: Any) -> Iterator[SlowStore]:
    call(fetch, "agent", "chats")  # the service is started and its database made
    slow = SlowStore(agent_app(jp_serverapp).parts.store._engine)
    try:
        yield slow
    finally:
        # Off, not removed: SQLAlchemy's removal mutates the listener list a statement of
        # another thread (the owner settings' refresh) may be iterating ("deque mutated
        # during iteration"). The engine ends with the test's server.
        slow.on = False


def _in_thread(fn: Callable[[], T]) -> Awaitable[T]:
    """``fn()`` in a thread of its own, awaited on the running loop: not in the loop's
    worker threads, which a slow store may all take (what a status must not wait for)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def run() -> None:
        try:
            result = fn()
        except BaseException as exc:  # reported to the test, not lost in the thread
            loop.call_soon_threadsafe(done.set_exception, exc)
        else:
            loop.call_soon_threadsafe(done.set_result, result)

    threading.Thread(target=run, daemon=True).start()
    return done


@pytest.fixture
def status(jp_http_port: int, jp_auth_header: dict[str, str]) -> Callable[[], tuple[int, Any]]:
    """A blocking ``GET agent/status``: ``(code, body)``. Not the test client: it resolves
    its host in one of the loop's worker threads, and a probe must measure the server, not
    the wait for a free worker (all of them may be busy with the slow store's calls)."""

    def get() -> tuple[int, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", jp_http_port, timeout=30)
        try:
            conn.request("GET", "/agent/status", headers=jp_auth_header)
            response = conn.getresponse()
            return response.status, json.loads(response.read())
        finally:
            conn.close()

    return get


def _status_while(
    status: Callable[[], tuple[int, Any]], loop: Any, request: Any
) -> tuple[Any, list[float]]:
    """Make ``request()`` (a fetch, started on the server's loop) and probe
    ``GET agent/status`` (from a thread of its own) until it has answered."""

    async def both() -> tuple[Any, list[float]]:
        pending = asyncio.ensure_future(request())
        latencies = []
        while not pending.done():
            t0 = time.monotonic()
            code, _ = await _in_thread(status)
            assert code == 200
            latencies.append(time.monotonic() - t0)
            await asyncio.sleep(0.05)
        try:
            return await pending, latencies
        except HTTPClientError as err:
            return err, latencies

    # The test process's own full collections (a late test's heap: millions of objects,
    # 0.4-0.6 s with the GIL held) would stall the probe and the server alike: the server's
    # loop is what is measured, so the collector waits for the probes.
    gc.collect()
    gc.disable()
    try:
        result: tuple[Any, list[float]] = loop.run_until_complete(both())
    finally:
        gc.enable()
    return result


def _assert_not_delayed(latencies: list[float], what: Any = None) -> None:
    # A store call on the loop would hold a status answer for a whole statement (500 ms).
    assert len(latencies) >= 5, (what, latencies)
    assert max(latencies) < DELAY_S * 0.8, (what, max(latencies), latencies)
    assert statistics.median(latencies) < DELAY_S / 5, (what, latencies)


def test_a_slow_store_does_not_delay_status(
    fetch: Any, jp_fetch: Any, jp_asyncio_loop: Any, slow_store: SlowStore, status: Any
) -> None:
    chat_id = new_chat(fetch)
    slow_store.on = True
    requests: list[tuple[tuple[str, ...], dict[str, Any]]] = [
        (("chats",), {"method": "POST", "body": b'{"title": "slow"}'}),
        (("chats", chat_id, "messages"), {"method": "POST", "body": b'{"text": "hi"}'}),
        (("chats",), {}),
        (("chats", chat_id), {}),
        (("runs",), {}),
        (("chats", chat_id), {"method": "PATCH", "body": b'{"title": "renamed"}'}),
    ]
    for parts, kwargs in requests:
        before = slow_store.statements
        started = time.monotonic()
        answer, latencies = _status_while(
            status, jp_asyncio_loop, lambda p=parts, k=kwargs: jp_fetch("agent", *p, **k)
        )
        took = time.monotonic() - started
        assert not isinstance(answer, HTTPClientError), answer
        assert answer.code in (200, 201, 202)
        assert slow_store.statements > before  # the request did wait on the store
        assert took >= DELAY_S
        _assert_not_delayed(latencies, (parts, kwargs.get("method", "GET")))
    slow_store.on = False
    code, chat = call(fetch, "agent", "chats", chat_id)
    assert code == 200
    assert chat["title"] == "renamed"


def test_a_slow_store_does_not_delay_status_during_a_delete(
    fetch: Any, jp_fetch: Any, jp_asyncio_loop: Any, slow_store: SlowStore, status: Any
) -> None:
    chat_id = new_chat(fetch)
    slow_store.on = True
    answer, latencies = _status_while(
        status, jp_asyncio_loop, lambda: jp_fetch("agent", "chats", chat_id, method="DELETE")
    )
    assert not isinstance(answer, HTTPClientError), answer
    assert answer.code == 204
    _assert_not_delayed(latencies)


def test_status_answers_while_every_worker_thread_is_busy(
    fetch: Any, jp_asyncio_loop: Any, status: Callable[[], tuple[int, Any]]
) -> None:
    """Under load every worker thread of the server's loop may be waiting on the store
    (a run's reads, a chat's, the history's): a status must not queue behind them."""
    assert call(fetch, "agent", "status")[0] == 200  # the owner's settings are cached
    release = threading.Event()

    async def while_busy() -> tuple[tuple[int, Any], float]:
        loop = asyncio.get_running_loop()
        # More than any default executor has workers (at most 32): every one is taken.
        busy = [loop.run_in_executor(None, release.wait) for _ in range(40)]
        try:
            started = time.monotonic()
            answer = await asyncio.wait_for(_in_thread(status), 10)
            return answer, time.monotonic() - started
        finally:
            release.set()
            await asyncio.gather(*busy)

    (code, body), took = jp_asyncio_loop.run_until_complete(while_busy())
    assert code == 200
    assert "tiers" in body
    assert "demo" in body
    assert took < 2.0, took
