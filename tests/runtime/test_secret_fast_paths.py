"""The secret checks on a model call's path, made cheap, find what the full walks find.

- ``Scrubber.held_tail`` (needles grouped by first character) against the plain
  definition, over random text built from the needles' own pieces;
- ``Scrubber.may_hold`` (one search of the encoded request) never says no where a string
  of the request holds a needle, and needles JSON would escape fall back to the walk;
- the guard refuses a request whose secret json.dumps escapes (a quote, a backslash,
  non-ASCII), through ``perform`` as a run calls it.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from jupyter_agent.effects import HTTP_POST, Effect
from jupyter_agent.llm.spec import RequestSpec
from jupyter_agent.llm.transport import Transport
from jupyter_agent.runtime.loop.model_calls import perform
from jupyter_agent.runtime.secret_guard import ScrubbingTransport
from jupyter_agent.runtime.secrets import LiveScrubber, Scrubber

SECRETS = {"sk-live-0123456789abcdef": "KEY", "tok_ABCDEFGH12345678": "TOKEN"}


def reference_held_tail(needles: list[str], text: str) -> int:
    """The definition: the longest end of ``text`` that is a proper prefix of a needle."""
    return max(
        (
            k
            for k in range(1, len(text) + 1)
            for n in needles
            if len(n) > k and n.startswith(text[-k:])
        ),
        default=0,
    )


def test_held_tail_is_the_longest_end_that_could_begin_a_secret() -> None:
    scrubber = Scrubber(SECRETS)
    needles = list(scrubber._values)
    rng = random.Random(7)
    for _ in range(3000):
        pieces = [rng.choice(needles)[: rng.randint(0, 12)] for _ in range(rng.randint(0, 3))]
        text = rng.choice(["", "x", " word ", "s", "k-"]) + "".join(pieces)
        if rng.random() < 0.5:
            needle = rng.choice(needles)
            text += needle[: rng.randint(1, len(needle) - 1)]
        assert scrubber.held_tail(text) == reference_held_tail(needles, text), text


def test_live_text_is_feed_without_the_dicts() -> None:
    scrubber = Scrubber(SECRETS)
    stream = "say sk-live-0123456789abcdef and tok_ABCDEFGH12345678 then more " * 3
    rng = random.Random(3)
    for _ in range(200):
        cuts = sorted(rng.sample(range(1, len(stream)), 12))
        chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=False)]
        by_text, by_feed = LiveScrubber(scrubber), LiveScrubber(scrubber)
        texts = [by_text.text("delta", c) for c in chunks]
        fed = [
            o["text"]
            for c in chunks
            for o in by_feed.feed({"output_type": "stream", "name": "delta", "text": c})
        ]
        assert [t for t in texts if t] == fed
        tail = [o["text"] for o in by_text.close()]
        assert "".join(texts + tail) == scrubber.scrub(stream)
        assert "sk-live" not in "".join(texts + tail)


@pytest.mark.parametrize(
    "body",
    [
        {"messages": [{"content": "the key is sk-live-0123456789abcdef"}]},
        {"sk-live-0123456789abcdef": 1},  # in a key
        {"a": ["x", {"b": "tok_ABCDEFGH12345678"}]},
        {"text": "hex " + b"sk-live-0123456789abcdef".hex()},
    ],
)
def test_may_hold_says_yes_wherever_a_string_holds_a_needle(body: dict[str, Any]) -> None:
    scrubber = Scrubber(SECRETS)
    assert scrubber.found(body)
    assert scrubber.may_hold(json.dumps(body))


def test_may_hold_says_no_only_when_the_request_holds_none() -> None:
    scrubber = Scrubber(SECRETS)
    assert not scrubber.may_hold(json.dumps({"messages": [{"content": "é nothing here"}]}))
    assert not Scrubber().may_hold("sk-live-0123456789abcdef")
    # a needle json.dumps escapes cannot be looked for in the encoded text: always "maybe"
    for value in ('quo"te-secret-123', "back\\slash-secret", "non-ascii-sécret-12"):
        assert Scrubber({value: "X"}).may_hold("{}")


@pytest.mark.parametrize(
    "secret", ['key"with-quote-1234', "key\\back-slash-1234", "clé-secrète-1234"]
)
async def test_a_secret_json_escapes_is_still_refused(fake_provider: Any, secret: str) -> None:
    fake = fake_provider([{"text": "never asked"}])
    transport = ScrubbingTransport(Transport(env={}, max_attempts=1), Scrubber({secret: "ODD"}))
    spec = RequestSpec(
        url=fake.base_url + "/v1/messages",
        wire="anthropic",
        json={
            "model": "m",
            "max_tokens": 10,
            "messages": [{"role": "user", "content": f"x {secret} y"}],
        },
    )
    effect = Effect(name=HTTP_POST, data=spec.to_intent())
    data, error = await perform(effect, config={}, transport=transport)  # type: ignore[arg-type]
    await transport.aclose()
    assert data is None
    assert error is not None
    assert error["type"] == "SecretInRequest"
    assert fake.requests == []
