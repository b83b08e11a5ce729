"""The turn budget (issue 27): where a turn's time goes, per phase and per effect, as ratios
to the floor, measured side by side in one run. ``python bench/bench_turn_budget.py [N]
[--json]`` (default N=20: medians of N turns).

One fake provider on loopback answers at once, on the OpenAI-compatible wire (Chat
Completions, streamed). The floors are hand-made clients doing the same calls: the chat
floor one streamed POST, the code floor two streamed POSTs and one execute in a warm
ipykernel (jupyter_client). The agent runs in a real ``jupyter server``; a turn is the
REST POST of the message and the events WebSocket until ``run_end``.

Floor samples and turns alternate, each after the same pause (50 ms before a chat turn,
1.5 s before a code turn: the warm pool refills): side by side, at the same pace. The pace
matters on this kind of machine: after 50 ms idle the same work takes about twice as long
as back to back (the chat floor 1.6 ms against 0.7-0.8 ms; a store read 0.9 ms against
0.25). Earlier versions measured the floors back to back and the turns paced, which about
doubled every ratio; the back-to-back floors are still printed, for comparison.

Per turn, from the client's clock and the run's own effect log (its ``t`` stamps):

- ``POST``: the message's POST until its 202;
- ``set-up``: the 202 until the log's first effect;
- each effect kind (``config.get``, ``mailbox.drain``, ``recall.search``, ``http.post``,
  ``cell.run``, ``turn.append``, ...): the sum of intent-to-result spans in the turn;
- ``between effects``: the log's first intent to its last result, less the effects (the
  loop, the log writes, the driver);
- ``after the reply``: the final ``reply`` event until ``run_end`` (what the person does
  not wait for, but the next message does).

Then what any durable turn through a Jupyter server pays here, at each kind's pace
(:func:`structural`): the server's own cheapest authenticated request (``GET api/me``,
jupyter_server's handler, no agent code) and one durable SQLite commit with the store's
settings (``journal_mode=TRUNCATE``, ``synchronous=FULL``, in the agent's data folder). A
turn stores its message before its 202, so its reply costs at least the floor, one request
and one commit (:func:`least`); it stores its turn before its ``run_end``, so that costs one
commit more. No durable implementation could do better on this machine.

Each line is a median, in ms, then:

- as a ratio of the turn's floor, against the issue's goal (:data:`GOAL`: ``met`` or
  ``missed``). On this project's 2-core machines the least durable turn itself is above
  both goals (a chat turn's 3x, a code turn's 1.3x): they are printed, not kept;
- as a ratio of the least durable turn of its kind, against the project's budget
  (:data:`BUDGET`: ``ok`` or ``OVER``): what must not drift. Both sides of that ratio are
  measured on the same machine in the same run, so it travels between machines better than
  a ratio to the floor alone. Each budget sits above the figures of issue 27's last stop;
  an effect's span comes from the log's millisecond stamps, so an effect's budget leaves at
  least one millisecond of room above them.

Nothing is asserted: exit status 0 whatever the figures (a wide machine-to-machine noise);
the README's performance section states the same budget.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from jupyter_client.manager import start_new_kernel

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_server import Server

from jupyter_agent.llm.fake.server import FakeProvider

MODEL = "gpt-4o"
CELL = "x = sum(range(1000))\nprint(x)"
CHAT = [{"text": "Hello."}]
CODE = [{"text": "Running it.", "cells": [CELL]}, {"text": "Done."}]
BODY = {"model": MODEL, "stream": True, "messages": [{"role": "user", "content": "go"}]}

#: The issue's goals, as ratios of the turn's floor (a chat turn <= 3x its floor, a code turn
#: <= 1.3x, and a share of that per phase). A chat turn's goal is below what any durable
#: turn through a Jupyter server costs here (:func:`structural`): printed, met or not.
GOAL: dict[str, dict[str, float]] = {
    "chat": {
        "total (to the reply)": 3.0,
        "POST": 0.5,
        "set-up": 0.3,
        "config.get": 0.2,
        "mailbox.drain": 0.1,
        "recall.search": 0.2,
        "http.post": 1.3,
        "between effects": 0.5,
        "after the reply": 1.0,
    },
    "code": {
        "total (to the reply)": 1.3,
        "POST": 0.05,
        "set-up": 0.05,
        "config.get": 0.02,
        "http.post": 0.3,
        "cell.run": 1.0,
        "between effects": 0.1,
        "after the reply": 0.2,
    },
}

#: The budget the project keeps (the README states it), as ratios of the least any durable
#: turn of the kind costs on the same machine in the same run (:func:`least`: its floor, one
#: jupyter_server request and one durable commit; to ``run_end``, one commit more). What
#: must not drift: a change that goes over it is a regression to explain. A phase not
#: listed has none of its own.
BUDGET: dict[str, dict[str, float]] = {
    "chat": {
        "total (to the reply)": 3.0,
        "total (to run_end)": 3.25,
        "POST": 1.15,
        "set-up": 0.2,
        "config.get": 0.45,
        "recall.search": 0.45,
        "http.post": 0.75,
        "between effects": 0.45,
        "after the reply": 1.0,
    },
    "code": {
        "total (to the reply)": 2.25,
        "total (to run_end)": 2.5,
        "POST": 0.5,
        "set-up": 0.1,
        "config.get": 0.2,
        "recall.search": 0.2,
        "http.post": 0.45,
        "cell.run": 0.7,
        "between effects": 0.2,
        "after the reply": 0.5,
    },
}


def _med(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def _t(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


class Agent:
    """A server with the agent on the fake's OpenAI-compatible wire."""

    def __init__(self, base: Path, fake: FakeProvider) -> None:
        tier = {"provider": "openai-compatible", "model": MODEL, "base_url": fake.base_url + "/v1"}
        self.server = Server(base, {"tiers": {"codegen": tier}})
        path = base / "config" / "jupyter_server_config.json"
        config = json.loads(path.read_text())
        config["KernelPool"] = {"size": 2}
        path.write_text(json.dumps(config))
        self.fake = fake
        self.client: httpx.Client | None = None

    def start(self) -> None:
        self.server.start()
        self.client = self.server.client()
        self.server.wait_ready(self.client)

    def chat(self) -> str:
        assert self.client is not None
        return str(self.client.post("agent/chats", json={"title": "bench"}).json()["id"])

    def turn(self, chat_id: str, text: str = "go") -> dict[str, Any]:
        """One message to its ``run_end``: the client's wall-clock marks and the run id."""
        assert self.client is not None
        ws = self.server.events(chat_id)
        try:
            sent = time.time()
            answer = self.client.post(f"agent/chats/{chat_id}/messages", json={"text": text})
            accepted = time.time()
            run_id = str(answer.json()["run_id"])
            reply = None
            while True:
                event = json.loads(ws.recv())
                if event.get("run_id") != run_id:  # a catch-up notice has none
                    continue
                if event["type"] == "reply" and event.get("done"):
                    reply = time.time()
                if event["type"] == "run_end":
                    ended = time.time()
                    break
        finally:
            ws.close()
        return {"run_id": run_id, "sent": sent, "accepted": accepted, "reply": reply or ended,
                "ended": ended}  # fmt: skip

    def log_of(self, run_id: str) -> Path:
        return next(self.server.base.glob(f"data/**/runs/{run_id}.jsonl"))

    def stop(self) -> None:
        if self.client is not None:
            self.client.close()
        self.server.stop()


def _stream(http: httpx.Client, url: str) -> None:
    with http.stream("POST", url, json=BODY) as response:
        response.raise_for_status()
        for _ in response.iter_bytes():
            pass


class Floors:
    """The hand-made clients: the chat floor (one streamed post) and the code floor (two
    and an execute in a warm ipykernel through jupyter_client)."""

    def __init__(self, fake: FakeProvider) -> None:
        self.fake = fake
        self.url = fake.base_url + "/v1/chat/completions"
        self.km, self.kc = start_new_kernel(kernel_name="python3")
        self.http = httpx.Client(trust_env=False)

    def sample(self, kind: str) -> float:
        """Seconds of one chat or code floor."""
        self.fake.load(CHAT if kind == "chat" else CODE)
        start = time.perf_counter()
        _stream(self.http, self.url)
        if kind == "code":
            self.kc.execute_interactive(CELL, output_hook=lambda m: None)
            _stream(self.http, self.url)
        return time.perf_counter() - start

    def back_to_back(self, kind: str, n: int) -> float:
        """The median of ``n`` samples with no pause between them (everything hot: the
        figure of the earlier versions of this bench)."""
        return _med([self.sample(kind) for _ in range(n)])

    def close(self) -> None:
        self.http.close()
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def phases(marks: dict[str, Any], log: Path) -> dict[str, float]:
    """Seconds per phase and per effect kind of one turn (see the module docstring)."""
    lines = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    intents = {ln["seq"]: ln for ln in lines if ln["phase"] == "intent"}
    out: dict[str, float] = defaultdict(float)
    busy = 0.0
    for line in lines:
        intent = intents.get(line["seq"])
        if line["phase"] != "result" or intent is None or intent.get("parent") is not None:
            continue
        took = _t(line["t"]) - _t(intent["t"])
        out[intent["name"]] += took
        busy += took
    stamped = [_t(ln["t"]) for ln in lines if "t" in ln]
    first, last = (min(stamped), max(stamped)) if stamped else (marks["accepted"],) * 2
    out["POST"] = marks["accepted"] - marks["sent"]
    out["set-up"] = max(0.0, first - marks["accepted"])
    out["between effects"] = max(0.0, (last - first) - busy)
    out["after the reply"] = marks["ended"] - marks["reply"]
    out["total (to the reply)"] = marks["reply"] - marks["sent"]
    out["total (to run_end)"] = marks["ended"] - marks["sent"]
    return dict(out)


def measure(
    agent: Agent, floors: Floors, kind: str, n: int, pause_s: float
) -> tuple[float, dict[str, float]]:
    """(the floor, each phase's median) of ``n`` turns of ``kind``, each floor sample and
    each turn after the same pause: side by side, at the same pace."""
    steps = CHAT if kind == "chat" else CODE
    per: dict[str, list[float]] = defaultdict(list)
    floor: list[float] = []
    for _ in range(n):
        time.sleep(pause_s)  # a warm pool and an idle machine, as a person typing leaves them
        floor.append(floors.sample(kind))
        agent.fake.load({"steps": steps, "repeat": True})
        time.sleep(pause_s)
        marks = agent.turn(agent.chat())
        for name, value in phases(marks, agent.log_of(marks["run_id"])).items():
            per[name].append(value)
    return _med(floor), {name: _med(values) for name, values in per.items()}


def structural(agent: Agent, n: int, pause_s: float) -> dict[str, float]:
    """Seconds (medians of ``n``, each after ``pause_s``) of what every durable turn
    through a Jupyter server pays: ``request`` (``GET api/me``, jupyter_server's own
    handler) and ``commit`` (one row of 1 KB committed with the store's durability)."""
    assert agent.client is not None
    db = sqlite3.connect(agent.server.base / "data" / "bench-commit.sqlite", isolation_level=None)
    db.execute("PRAGMA journal_mode=TRUNCATE")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, body TEXT)")
    request: list[float] = []
    commit: list[float] = []
    try:
        for _ in range(n):
            time.sleep(pause_s)
            start = time.perf_counter()
            agent.client.get("api/me").raise_for_status()
            request.append(time.perf_counter() - start)
            time.sleep(pause_s)
            start = time.perf_counter()
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO t (body) VALUES (?)", ("x" * 1024,))
            db.execute("COMMIT")
            commit.append(time.perf_counter() - start)
    finally:
        db.close()
    return {"request": _med(request), "commit": _med(commit)}


def least(floor: float, paced: dict[str, float]) -> dict[str, float]:
    """Seconds the least durable turn costs: to its reply (the floor, one request, the
    message's commit) and to its ``run_end`` (and the turn's commit)."""
    reply = floor + paced["request"] + paced["commit"]
    return {"reply": reply, "run_end": reply + paced["commit"]}


def report(
    kind: str, floor: float, lowest: dict[str, float], figures: dict[str, float]
) -> list[dict[str, Any]]:
    """Print and return the phases of ``kind``: ms, x the floor against :data:`GOAL`, x the
    least durable turn (``lowest``, of :func:`least`) against :data:`BUDGET`."""
    goals, budget = GOAL[kind], BUDGET[kind]
    order = ["total (to the reply)", "total (to run_end)", "POST", "set-up"]
    effects = sorted(
        (k for k in figures if k not in order and k not in ("between effects", "after the reply")),
        key=lambda k: -figures[k],
    )
    rows = []
    print(
        f"\n{kind} turn (floor {floor * 1e3:.2f} ms; least durable turn {lowest['reply'] * 1e3:.2f}"
        f" ms to the reply, {lowest['run_end'] * 1e3:.2f} ms to run_end)"
    )
    print(
        f"  {'phase':<22} {'ms':>7} {'x floor':>8} {'goal':>6} {'':<7}{'x least':>8} {'budget':>7}"
    )
    for name in [*order, *effects, "between effects", "after the reply"]:
        if name not in figures:
            continue
        ms, ratio = figures[name] * 1e3, figures[name] / floor if floor else 0.0
        base = lowest["run_end"] if name == "total (to run_end)" else lowest["reply"]
        share = figures[name] / base if base else 0.0
        goal, cap = goals.get(name), budget.get(name)
        met = "" if goal is None else ("met" if ratio <= goal else "missed")
        kept = "" if cap is None else ("ok" if share <= cap else "OVER")
        shown_goal = "" if goal is None else f"{goal:.2f}x"
        shown_cap = "" if cap is None else f"{cap:.2f}x"
        print(
            f"  {name:<22} {ms:7.2f} {ratio:8.2f} {shown_goal:>6} {met:<7}{share:8.2f}"
            f" {shown_cap:>7} {kept}"
        )
        rows.append(
            {"phase": name, "ms": ms, "x_floor": ratio, "goal": goal, "goal_met": met,
             "x_least": share, "budget": cap, "budget_kept": kept}
        )  # fmt: skip
    return rows


def main(n: int = 20, as_json: bool = False) -> None:
    base = Path(tempfile.mkdtemp(prefix="bench-budget-"))
    fake = FakeProvider({"steps": CHAT, "repeat": True}).start()
    agent = Agent(base / "a", fake)
    try:
        agent.start()
        agent.fake.load({"steps": CHAT, "repeat": True})
        for _ in range(3):  # warm-up: imports on first use, the pool's first kernels
            agent.turn(agent.chat())
        floors = Floors(fake)
        try:
            hot = {kind: floors.back_to_back(kind, n) for kind in ("chat", "code")}
            chat_floor, chat = measure(agent, floors, "chat", n, 0.05)
            code_floor, code = measure(agent, floors, "code", n, 1.5)
            # What a request and a commit cost at each kind's pace (a machine idle for
            # 1.5 s does the same work about twice as slowly as after 50 ms).
            paced = {"chat": structural(agent, n, 0.05), "code": structural(agent, n, 1.5)}
        finally:
            floors.close()
    finally:
        agent.stop()
        fake.stop()
    print(
        f"floors by hand, at the turns' pace: chat {chat_floor * 1e3:.2f} ms, code "
        f"{code_floor * 1e3:.2f} ms (back to back, everything hot: chat "
        f"{hot['chat'] * 1e3:.2f} ms, code {hot['code'] * 1e3:.2f} ms)"
    )
    floors_of = {"chat": chat_floor, "code": code_floor}
    leasts = {kind: least(floors_of[kind], paced[kind]) for kind in ("chat", "code")}
    rows = {
        "chat": report("chat", chat_floor, leasts["chat"], chat),
        "code": report("code", code_floor, leasts["code"], code),
    }
    for kind, turn in (("chat", chat), ("code", code)):
        request, commit = paced[kind]["request"], paced[kind]["commit"]
        durable, ended = leasts[kind]["reply"], leasts[kind]["run_end"]
        print(
            f"\nthe least any durable {kind} turn through Jupyter pays here: its floor"
            f" {floors_of[kind] * 1e3:.2f} ms + one request {request * 1e3:.2f} ms (GET api/me,"
            f" no agent code) + one durable commit {commit * 1e3:.2f} ms (the message's) ="
            f" {durable * 1e3:.2f} ms = {durable / floors_of[kind]:.2f}x the floor to its reply;"
            f" the {kind} turn is {turn['total (to the reply)'] / durable:.2f}x that. With the"
            f" turn's commit, {ended * 1e3:.2f} ms = {ended / floors_of[kind]:.2f}x to its"
            f" run_end; the {kind} turn is {turn['total (to run_end)'] / ended:.2f}x that"
        )
    if as_json:
        figures: dict[str, Any] = {
            "least_ms": {
                kind: {
                    "request": paced[kind]["request"] * 1e3,
                    "commit": paced[kind]["commit"] * 1e3,
                    "reply": leasts[kind]["reply"] * 1e3,
                    "run_end": leasts[kind]["run_end"] * 1e3,
                }
                for kind in ("chat", "code")
            },
            "floors_ms": {kind: value * 1e3 for kind, value in floors_of.items()},
            "hot_floors_ms": {kind: value * 1e3 for kind, value in hot.items()},
            **rows,
        }
        print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--json"]
    main(int(args[0]) if args else 20, as_json="--json" in sys.argv)
