"""Message 100 against message 1 of one chat, at an equal prompt size (issue 27's table:
goal <= 1.2x). Not a test: ``python bench/bench_long_chat.py [N]`` (default 100 messages).

One server with the agent on the fake's OpenAI-compatible wire (the turn budget's,
:mod:`bench_turn_budget`). One chat gets N messages (``message i`` and 40 words each),
chat-only turns, each after the same 50 ms pause. Beside each of the last ten, side by
side, a first message of a new chat whose text is padded so that the model request the
fake receives is as large as the long chat's (what a longer prompt costs to encode, send
and parse is the prompt's, not the chat's length's). Prints, as medians: messages 1-10, the
last ten, the padded first messages, the ratios, each turn's phases (the turn budget's:
POST, set-up, each effect, after the reply) for the three groups, and the request sizes.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_turn_budget import CHAT, Agent, _med, phases

from jupyter_agent.llm.fake.server import FakeProvider

PAUSE_S = 0.05
#: Messages per group (the first K, the last K, K padded first messages).
K = 10
WORDS = "words " * 40


def _request_bytes(fake: FakeProvider, since: int, text: str) -> int:
    """The size (JSON) of the turn's model request: received after ``since`` and holding the
    message ``text`` (a summary's request, made beside, holds older messages only)."""
    for request in fake.requests[since:]:
        body = json.dumps(request.json)
        if json.dumps(text)[1:-1] in body:
            return len(body)
    raise RuntimeError("the turn's model request was not found")


def _turn(agent: Agent, chat_id: str, text: str) -> tuple[dict[str, float], int]:
    time.sleep(PAUSE_S)
    agent.fake.load({"steps": CHAT, "repeat": True})
    since = len(agent.fake.requests)
    marks = agent.turn(chat_id, text)
    figures = phases(marks, agent.log_of(marks["run_id"]))
    return figures, _request_bytes(agent.fake, since, text)


def _padded_first(agent: Agent, size: int) -> tuple[dict[str, float], int]:
    """A new chat's first message padded to a model request of about ``size`` bytes."""
    chat_id = agent.chat()
    probe, base = _turn(agent, agent.chat(), "message 1 " + WORDS)
    del probe
    pad = max(0, size - base)
    return _turn(agent, chat_id, "message 1 " + WORDS + "pad " * (pad // 4))


def main(n: int = 100) -> None:
    base = Path(tempfile.mkdtemp(prefix="bench-long-"))
    fake = FakeProvider({"steps": CHAT, "repeat": True}).start()
    agent = Agent(base / "a", fake)
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    sizes: dict[str, list[int]] = defaultdict(list)
    try:
        agent.start()
        for _ in range(3):  # warm-up: the first turns of a server load what turns use
            _turn(agent, agent.chat(), "warm up")
        chat_id = agent.chat()
        for i in range(1, n + 1):
            figures, size = _turn(agent, chat_id, f"message {i} " + WORDS)
            if i <= K:
                groups[f"messages 1-{K}"].append(figures)
                sizes[f"messages 1-{K}"].append(size)
            if i > n - K:
                groups[f"messages {n - K + 1}-{n}"].append(figures)
                sizes[f"messages {n - K + 1}-{n}"].append(size)
                figures, size = _padded_first(agent, size)
                groups["first messages, padded"].append(figures)
                sizes["first messages, padded"].append(size)
    finally:
        agent.stop()
        fake.stop()

    def med(group: str, name: str) -> float:
        return _med([f.get(name, 0.0) for f in groups[group]])

    names = list(groups)
    key = "total (to the reply)"
    first, last, padded = (med(g, key) for g in names)
    print(f"to the reply (medians): {names[0]} {first * 1e3:.1f} ms, {names[1]} "
          f"{last * 1e3:.1f} ms, {names[2]} {padded * 1e3:.1f} ms")  # fmt: skip
    print(f"{names[1]} vs {names[0]}: {last / first:.2f}x; vs {names[2]} (an equal prompt "
          f"size): {last / padded:.2f}x (goal <= 1.2x)")  # fmt: skip
    print("model request bytes (median): " + ", ".join(f"{g} {_med(sizes[g]):.0f}" for g in names))
    every = sorted({name for g in names for f in groups[g] for name in f})
    print(f"{'phase (ms, median)':<28}" + "".join(f"{g:>26}" for g in names))
    for name in every:
        print(f"{name:<28}" + "".join(f"{med(g, name) * 1e3:>26.2f}" for g in names))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
