"""Many runs at once on real servers sharing one PostgreSQL database (the load test and
``bench/bench_load.py`` share this).

- :class:`StatusPoller`: a thread polling ``GET agent/status`` (the cheap route) every
  ``interval_s`` and keeping each answer's latency (:meth:`StatusPoller.between`).
- :func:`burst`: N chats (on one server or several) send one message each at the same
  moment (a barrier across N threads, each chat's events socket opened beforehand) and
  each waits for its run's ``run_end`` on that socket (no polling, which would load the
  server it measures).
- :func:`stored_turns`, :func:`stored_runs`: the database's ``agent_turns`` of some chats
  and ``agent_runs`` of some runs, read directly (not through a server), to count what was
  written.

The fake model's script (:data:`ONE_CELL`) asks for one cell per run, then replies.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import httpx
import psycopg
import websocket

from tests.faults.server import FaultServer, wait_for

__all__ = [
    "CELL",
    "NO_CELL",
    "ONE_CELL",
    "Burst",
    "StatusPoller",
    "burst",
    "kernel_count",
    "pct",
    "settle_pool",
    "stored_runs",
    "stored_turns",
]

CELL = "x = sum(range(1000))\nprint(x)"
ONE_CELL = {
    "steps": [{"text": "Running it.", "cells": [CELL]}, {"text": "Done."}],
    "repeat": True,
    "per_turn": True,
}
#: A run that only replies (no kernel): the store and the run path without cell costs.
NO_CELL = {"steps": [{"text": "Noted."}], "repeat": True, "per_turn": True}


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of ``values`` (not empty)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class StatusPoller(threading.Thread):
    """Polls ``GET agent/status`` every ``interval_s``; ``samples``: (sent at, latency)."""

    def __init__(self, server: FaultServer, interval_s: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.server, self.interval_s = server, interval_s
        self.samples: list[tuple[float, float]] = []
        self.errors: list[str] = []
        self._stopping = threading.Event()

    def run(self) -> None:
        headers = {"Authorization": f"token {self.server.token}"}
        with httpx.Client(base_url=self.server.addr, headers=headers, timeout=60) as http:
            while not self._stopping.is_set():
                start = time.perf_counter()
                try:
                    http.get("agent/status").raise_for_status()
                except httpx.HTTPError as exc:
                    self.errors.append(type(exc).__name__)
                took = time.perf_counter() - start
                self.samples.append((start, took))
                time.sleep(max(0.0, self.interval_s - took))

    def between(self, start: float, end: float) -> list[float]:
        """The latencies of the polls sent from ``start`` to ``end`` (perf_counter)."""
        return [took for at, took in list(self.samples) if start <= at <= end]

    def stop(self) -> None:
        self._stopping.set()
        self.join(90)


def kernel_count(server: FaultServer) -> int:
    """How many agent kernels the server has (warm, starting, held by runs), from
    ``GET agent/status`` (they are in no Jupyter listing); -1 while one is starting."""
    headers = {"Authorization": f"token {server.token}"}
    answer = httpx.get(f"{server.addr}agent/status", headers=headers, timeout=30)
    answer.raise_for_status()
    kernels = answer.json()["kernels"]
    if kernels["starting"]:
        return -1
    return int(kernels["warm"] + kernels["in_use"])


def settle_pool(server: FaultServer, size: int, timeout_s: float = 300) -> None:
    """Wait until exactly the pool's ``size`` warm kernels exist (run kernels gone)."""
    wait_for(f"{size} warm kernels", lambda: kernel_count(server) == size, timeout_s)


@dataclass
class Burst:
    """One burst: the run id each chat's message started, its wall time, what failed."""

    run_ids: dict[str, str] = field(default_factory=dict)
    start: float = 0.0
    end: float = 0.0
    failures: list[str] = field(default_factory=list)
    stop_reasons: dict[str, str] = field(default_factory=dict)

    @property
    def wall_s(self) -> float:
        return self.end - self.start


def burst(targets: list[tuple[FaultServer, str]], text: str, timeout_s: float = 600) -> Burst:
    """Each ``(server, chat_id)`` sends ``text`` at the same moment; returns once every run
    has ended.

    A run counts as ended at its ``run_end`` event on the chat's socket (opened before the
    send, so it cannot be missed); one that does not end within ``timeout_s`` is a failure.
    """
    sockets = [
        websocket.create_connection(
            f"{server.addr.replace('http://', 'ws://', 1)}agent/chats/{chat_id}/events",
            header=[f"Authorization: token {server.token}"],
            timeout=timeout_s,
        )
        for server, chat_id in targets
    ]
    result = Burst()
    barrier = threading.Barrier(len(targets) + 1)
    lock = threading.Lock()
    ends: list[float] = []

    def one(server: FaultServer, chat_id: str, ws: websocket.WebSocket) -> None:
        with httpx.Client(
            base_url=server.addr,
            headers={"Authorization": f"token {server.token}"},
            timeout=timeout_s,
        ) as http:
            barrier.wait()
            try:
                sent = http.post(f"agent/chats/{chat_id}/messages", json={"text": text})
                sent.raise_for_status()
                run_id = sent.json()["run_id"]
                with lock:
                    result.run_ids[chat_id] = run_id
                while True:
                    event = json.loads(ws.recv())
                    if event["type"] == "run_end" and event["run_id"] == run_id:
                        with lock:
                            result.stop_reasons[run_id] = event["stop_reason"]
                        break
            except Exception as exc:  # reported by the caller, with every other failure
                with lock:
                    result.failures.append(f"{chat_id}: {exc!r}")
            finally:
                with lock:
                    ends.append(time.perf_counter())
                ws.close()

    threads = [
        threading.Thread(target=one, args=(server, chat_id, ws))
        for (server, chat_id), ws in zip(targets, sockets, strict=True)
    ]
    for thread in threads:
        thread.start()
    barrier.wait()
    result.start = time.perf_counter()
    for thread in threads:
        thread.join(timeout_s + 30)
    result.end = max(ends) if ends else time.perf_counter()
    return result


def _pairs(db_url: str, sql: str, keys: Iterable[str]) -> list[tuple[str, str]]:
    """The two-column rows of ``sql`` (one ``= ANY(%s)`` parameter: ``keys``), read directly."""
    _scheme, _, rest = db_url.partition("://")
    with psycopg.connect(f"postgresql://{rest}") as conn:
        rows = conn.execute(sql, [list(keys)]).fetchall()
    return [(str(a), str(b)) for a, b in rows]


def stored_turns(db_url: str, chat_ids: Iterable[str]) -> list[tuple[str, str]]:
    """``(chat_id, run_id)`` of every ``agent_turns`` row of these chats."""
    sql = "SELECT chat_id, run_id FROM agent_turns WHERE chat_id = ANY(%s)"
    return _pairs(db_url, sql, chat_ids)


def stored_runs(db_url: str, run_ids: Iterable[str]) -> list[tuple[str, str]]:
    """``(run_id, status)`` of every ``agent_runs`` row of these runs."""
    return _pairs(db_url, "SELECT run_id, status FROM agent_runs WHERE run_id = ANY(%s)", run_ids)
