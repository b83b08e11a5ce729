"""The scrubber of what agent kernels send: known secrets redacted, text valid Unicode."""

from __future__ import annotations

from pathlib import Path

import pytest

from jupyter_agent.runtime.secrets import (
    MIN_SECRET_CHARS,
    NO_SECRETS,
    SERVER_TOKEN,
    Scrubber,
    known_secrets,
)

KEY = "sk-ant-test-0123456789abcdef"
TOKEN = "9f86d081884c7d659a2feaa0c55ad015"


def stream(text: str, name: str = "stdout") -> dict[str, str]:
    return {"output_type": "stream", "name": name, "text": text}


def test_a_secret_is_replaced_by_its_name_wherever_it_occurs() -> None:
    scrubber = Scrubber({KEY: "ANTHROPIC_API_KEY", TOKEN: SERVER_TOKEN})
    text = f"key={KEY}\ntoken {TOKEN} and again {KEY}."
    assert scrubber.scrub(text) == (
        "key=[redacted: ANTHROPIC_API_KEY]\ntoken [redacted: server token] and again "
        "[redacted: ANTHROPIC_API_KEY]."
    )


def test_text_without_a_secret_is_returned_as_is() -> None:
    scrubber = Scrubber({KEY: "K"})
    text = "nothing to see " * 100
    assert scrubber.scrub(text) is text
    assert scrubber.clean(text) is text
    value = {"prints": [{"text": "a"}, {"text": "é"}], "n": 3}
    assert scrubber.clean_json(value) is value


def test_the_longest_secret_wins_where_one_holds_another() -> None:
    short, long = "abcdefgh12", "abcdefgh12-and-more"
    scrubber = Scrubber({short: "SHORT", long: "LONG"})
    assert scrubber.scrub(f"{long} {short}") == "[redacted: LONG] [redacted: SHORT]"
    # The order the secrets were given in does not matter.
    assert Scrubber({long: "LONG", short: "SHORT"}).scrub(long) == "[redacted: LONG]"


def test_overlapping_secrets_leave_no_character_of_either() -> None:
    first, second = "AAAAbbbbCCCC", "CCCCddddEEEE"
    scrubber = Scrubber({first: "FIRST", second: "SECOND"})
    out = scrubber.scrub("<AAAAbbbbCCCCddddEEEE>")
    assert out == "<[redacted: FIRST, SECOND]>"
    # Repeated overlaps (a secret whose end is its start) too.
    repeating = Scrubber({"abcabcab": "R"})
    assert repeating.scrub("xabcabcabcabx") == "x[redacted: R]x"


def test_short_values_are_never_secrets() -> None:
    scrubber = Scrubber({"true": "FLAG", "1234567": "PIN", "12345678": "LONGER"})
    assert len(scrubber) == 1
    assert scrubber.names == ("LONGER",)
    assert scrubber.scrub("true 1234567 12345678") == "true 1234567 [redacted: LONGER]"
    assert MIN_SECRET_CHARS == 8


def test_its_repr_names_the_secrets_and_never_shows_a_value() -> None:
    scrubber = Scrubber({KEY: "ANTHROPIC_API_KEY"})
    assert KEY not in repr(scrubber)
    assert "ANTHROPIC_API_KEY" in repr(scrubber)
    assert not NO_SECRETS
    assert scrubber


def test_clean_repairs_lone_surrogates_and_scrubs() -> None:
    scrubber = Scrubber({KEY: "K"})
    assert scrubber.clean(f"a\ud800b {KEY}") == "a\ufffdb [redacted: K]"
    assert NO_SECRETS.clean("x\udfffy") == "x\ufffdy"
    assert NO_SECRETS.clean("pair \ud83d\ude00") == "pair \U0001f600"


def test_clean_json_cleans_every_string_keys_included() -> None:
    scrubber = Scrubber({KEY: "K"})
    value = {
        "prints": [{"text": "ok"}, {"text": f"key {KEY}"}],
        "error": {"ename": "E", "evalue": "\ud800", "traceback": [f"line {KEY}", "x"]},
        f"{KEY}": 1,
        "n": None,
    }
    out = scrubber.clean_json(value)
    assert out == {
        "prints": [{"text": "ok"}, {"text": "key [redacted: K]"}],
        "error": {"ename": "E", "evalue": "\ufffd", "traceback": ["line [redacted: K]", "x"]},
        "[redacted: K]": 1,
        "n": None,
    }
    assert out["prints"][0] is value["prints"][0]  # unchanged parts are not copied


def test_live_output_catches_a_secret_split_across_chunks() -> None:
    scrubber = Scrubber({KEY: "K"})
    live = scrubber.live()
    chunks = ["env: sk-a", "nt-test-0123", "456789abcdef\nnext", " line s"]
    out = [o for chunk in chunks for o in live.feed(stream(chunk))]
    out += live.close()
    text = "".join(o["text"] for o in out)
    assert text == "env: [redacted: K]\nnext line s"
    assert all(KEY[:9] not in o["text"] for o in out)
    assert out[0]["text"] == "env: "  # what cannot begin the key goes out at once


def test_live_output_keeps_order_and_streams_apart() -> None:
    scrubber = Scrubber({KEY: "K"})
    live = scrubber.live()
    out = live.feed(stream("out sk-ant"))
    out += live.feed(stream("err line\n", "stderr"))
    display = {"output_type": "display_data", "data": {"text/plain": f"{KEY}"}, "metadata": {}}
    out += live.feed(display)
    assert [(o["output_type"], o.get("name")) for o in out] == [
        ("stream", "stdout"),
        ("stream", "stderr"),
        ("stream", "stdout"),  # the held tail goes out before the display
        ("display_data", None),
    ]
    assert out[2]["text"] == "sk-ant"
    assert out[3]["data"]["text/plain"] == "[redacted: K]"
    assert live.close() == []


def test_live_output_does_not_cut_a_whole_secret_that_ends_in_a_held_tail() -> None:
    first, second = "abcdefgh", "ghijklmnop"
    scrubber = Scrubber({first: "FIRST", second: "SECOND"})
    live = scrubber.live()
    out = live.feed(stream("x abcdefgh"))  # "gh" could begin SECOND: all of FIRST waits
    assert "".join(o["text"] for o in out) == "x "
    out = live.feed(stream("ijklmnop!"))
    assert "".join(o["text"] for o in out) == "[redacted: FIRST, SECOND]!"


def test_live_output_repairs_surrogates() -> None:
    live = NO_SECRETS.live()
    assert live.feed(stream("a\ud800b")) == [stream("a\ufffdb")]
    err = {"output_type": "error", "ename": "E", "evalue": "\udc00", "traceback": ["\ud800"]}
    assert live.feed(err) == [{**err, "evalue": "\ufffd", "traceback": ["\ufffd"]}]


def test_known_secrets_from_keys_token_and_the_filtered_environment() -> None:
    environ = {
        "ANTHROPIC_API_KEY": KEY,
        "MY_LLM": "llm-value-not-named-like-a-key",
        "GITHUB_TOKEN": "ghp_abcdefghijklmnop",
        "DATABASE_URL": "postgres://me:hunter2hunter2@db/x",
        "HOME": "/home/someone",
        "KEPT_TOKEN": "kept-value-123456",
        "SHORT_KEY": "abc",
        "AWS_REGION": "eu-west-1x",
    }
    found = known_secrets(
        environ=environ,
        key_refs=["env:MY_LLM", "env:ANTHROPIC_API_KEY", "env:MISSING", "file:/x"],
        server_token=TOKEN,
        keep=["KEPT_TOKEN"],
    )
    assert found == {
        "llm-value-not-named-like-a-key": "MY_LLM",
        KEY: "ANTHROPIC_API_KEY",
        TOKEN: SERVER_TOKEN,
        "ghp_abcdefghijklmnop": "GITHUB_TOKEN",
        "postgres://me:hunter2hunter2@db/x": "DATABASE_URL",
        "hunter2hunter2": "DATABASE_URL password",
        "abc": "SHORT_KEY",  # known, but the Scrubber ignores it (too short)
        "eu-west-1x": "AWS_REGION",
    }
    scrubber = Scrubber(found)
    assert "SHORT_KEY" not in scrubber.names


def test_a_key_reference_names_its_value_first() -> None:
    environ = {"JUPYTER_TOKEN": TOKEN, "OTHER_SECRET": KEY, "LLM": KEY}
    found = known_secrets(environ=environ, key_refs=["env:LLM"], server_token=TOKEN)
    assert found == {KEY: "LLM", TOKEN: SERVER_TOKEN}


@pytest.mark.parametrize("value", [f"  {KEY}\n", f"{KEY}\n"])
def test_a_value_with_blanks_around_is_also_known_without_them(value: str) -> None:
    found = known_secrets(environ={"X_KEY": value})
    assert found[KEY] == "X_KEY"


def test_an_environment_value_naming_an_existing_path_is_a_pointer_not_a_secret(
    tmp_path: Path,
) -> None:
    bundle = tmp_path / "ca-bundle.pem"
    bundle.write_text("certs")
    environ = {"AWS_CA_BUNDLE": str(bundle), "SOME_KEY": "/not/an/existing/path/x"}
    found = known_secrets(environ=environ)
    assert found == {"/not/an/existing/path/x": "SOME_KEY"}
    # A key reference is a key, wherever it points.
    assert known_secrets(environ=environ, key_refs=["env:AWS_CA_BUNDLE"]) == {
        str(bundle): "AWS_CA_BUNDLE",
        "/not/an/existing/path/x": "SOME_KEY",
    }
