"""What the server warms in a thread once it listens (runtime/warm.py): in a fresh process,
``warm_first_turn`` loads httpx, httpcore's asyncio backend and the stemmer, builds the one
TLS context and a turn's codecs; a part that fails is logged and the others still run."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from jupyter_agent import codec
from jupyter_agent.llm.pools import tls_context
from jupyter_agent.llm.transport import Transport
from jupyter_agent.runtime import warm

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
from jupyter_agent import codec
from jupyter_agent.llm.pools import tls_context
from jupyter_agent.runtime.warm import DUMPED, LOADED, warm_first_turn
names = ("httpx", "anyio._backends._asyncio", "httpcore._backends.anyio", "snowballstemmer")
before = [n for n in names if n in sys.modules]
warm_first_turn()
print(json.dumps({
    "before": before,
    "after": [n for n in names if n in sys.modules],
    "tls": tls_context.cache_info().currsize,
    "dumped": all(t in codec._ENCODERS for t in DUMPED),
    "loaded": all(k in codec._DECODERS for k in LOADED),
}))
"""


def test_warming_loads_and_builds_what_a_first_turn_needs() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=REPO, check=True
    )
    got = json.loads(done.stdout.splitlines()[-1])
    assert got["before"] == []  # nothing of it is loaded by importing the app's parts
    assert got["after"] == [
        "httpx",
        "anyio._backends._asyncio",
        "httpcore._backends.anyio",
        "snowballstemmer",
    ]
    assert got["tls"] == 1
    assert got["dumped"]
    assert got["loaded"]


def test_a_failing_part_leaves_the_others_warmed(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    ran: list[str] = []

    def broken() -> None:
        raise OSError("no metadata here")

    monkeypatch.setattr(warm, "warm_kernel_packages", broken)
    monkeypatch.setattr(warm, "preload_stemmer", lambda: ran.append("stemmer"))
    monkeypatch.setattr(warm, "_codecs", lambda: ran.append("codecs"))
    warm.warm_first_turn()
    assert ran == ["stemmer", "codecs"]
    assert "warming test_a_failing_part_leaves_the_others_warmed.<locals>.broken failed" in (
        caplog.text
    )


def test_every_client_verifies_with_the_one_tls_context() -> None:
    transport = Transport()
    clients = [transport._new_client(loopback) for loopback in (True, False)]
    for client in clients:
        assert client._transport._pool._ssl_context is tls_context()  # type: ignore[attr-defined]


@codec.camel_case
@dataclass(frozen=True)
class Point:
    x_pos: int


def test_a_warmed_codec_encodes_as_one_built_at_its_use() -> None:
    codec.warm([Point], [(Point, False)])
    assert Point in codec._ENCODERS
    assert (Point, False) in codec._DECODERS
    assert codec.dump(Point(x_pos=1)) == {"xPos": 1}
    assert codec.load(Point, {"xPos": 2}) == Point(x_pos=2)
