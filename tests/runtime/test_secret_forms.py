"""The encodings of a known secret the scrubber finds (pure: no I/O)."""

from __future__ import annotations

import base64
import itertools
import json
import random
import string
from urllib.parse import quote, quote_plus

import pytest

from jupyter_agent.runtime.secret_forms import ENCODINGS, encoded_forms
from jupyter_agent.runtime.secrets import MIN_SECRET_CHARS, Scrubber

# Characters that URL-encode differently with quote, quote(safe="") and quote_plus.
KEY = "sk-ant-te/st+k3y?>>k3yk3yk3y x@y"  # its base64 holds "+": base64url differs
NAME = "ANTHROPIC_API_KEY"
SCRUBBER = Scrubber({KEY: NAME})
RAW = KEY.encode()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode()


#: Each encoding the scrubber knows, applied to the key alone.
FORMS = {
    "base64": b64(RAW),
    "base64 unpadded": b64(RAW).rstrip("="),
    "base64url": b64url(RAW),
    "base64url unpadded": b64url(RAW).rstrip("="),
    "hex": RAW.hex(),
    "HEX": RAW.hex().upper(),
    "reversed": KEY[::-1],
    "quote": quote(KEY, safe=""),
    "quote safe /": quote(KEY),
    "quote_plus": quote_plus(KEY),
}
LABELS = {
    "base64": "base64",
    "base64 unpadded": "base64",
    "base64url": "base64url",
    "base64url unpadded": "base64url",
    "hex": "hex",
    "HEX": "hex",
    "reversed": "reversed",
    "quote": "url-encoded",
    "quote safe /": "url-encoded",
    "quote_plus": "url-encoded",
}


def test_the_forms_differ_from_the_literal_and_each_other() -> None:
    # Else a case below would test the literal again.
    assert KEY not in FORMS.values()
    assert len(set(FORMS.values())) == len(FORMS)
    assert set(LABELS.values()) == set(ENCODINGS)


@pytest.mark.parametrize("form", sorted(FORMS))
def test_each_encoding_of_the_key_alone_is_redacted_and_named(form: str) -> None:
    text = f"the value: {FORMS[form]}\n"
    out = SCRUBBER.scrub(text)
    assert out.startswith("the value: ")
    assert f"[redacted: {NAME} ({LABELS[form]})]" in out, out
    assert KEY not in out
    assert FORMS[form] not in out


def test_a_whole_base64_encoding_goes_with_its_padding() -> None:
    for encoded in (FORMS["base64"], FORMS["base64url"]):
        assert encoded.endswith("=")
        assert SCRUBBER.scrub(f"<{encoded}>").endswith(")]>")
    unpadded = FORMS["base64 unpadded"]  # no "=": its last character stays (4 bits of it)
    assert SCRUBBER.scrub(f"<{unpadded}>").endswith(f")]{unpadded[-1]}>")


def test_the_literal_marker_names_no_encoding() -> None:
    assert SCRUBBER.scrub(f"<{KEY}>") == f"<[redacted: {NAME}]>"


@pytest.mark.parametrize(("before", "after"), list(itertools.product(range(4), range(4))))
@pytest.mark.parametrize("encode", [b64, b64url])
def test_base64_of_the_key_inside_longer_bytes_is_found_at_every_offset(
    before: int, after: int, encode: object
) -> None:
    rng = random.Random(before * 10 + after)
    data = rng.randbytes(before) + RAW + rng.randbytes(after)
    encoded = encode(data)  # type: ignore[operator]
    out = SCRUBBER.scrub(f"blob={encoded};")
    assert "[redacted: " in out
    # At most the 2 characters at each edge that mix the key's bits with its neighbours'.
    kept = out.removeprefix("blob=").removesuffix(";")
    head, _, tail = kept.partition("[redacted: ")
    tail = tail.split("]", 1)[1]
    assert len(head) <= -(-before * 4 // 3) + 1
    assert len(tail) <= -(-after * 4 // 3) + 3  # and the padding


def test_values_under_the_minimum_have_no_needles_at_all() -> None:
    short = "abc/+@1"  # 7 characters
    assert len(short) < MIN_SECRET_CHARS
    scrubber = Scrubber({short: "SHORT"})
    assert not scrubber
    for text in (short, b64(short.encode()), short.encode().hex(), short[::-1], quote(short)):
        assert scrubber.scrub(text) is text


def test_every_needle_of_a_minimum_length_value_is_long_enough() -> None:
    for value in ("12345678", "\u00e9" * 8, "ab+/cd=?"):
        forms = encoded_forms(value)
        assert min(len(needle) for needle in forms) >= MIN_SECRET_CHARS, forms
        assert next(iter(forms)) == value
        assert forms[value] == ""


def test_a_value_that_is_its_own_encoding_is_named_as_the_literal() -> None:
    value = "sk-ant-abc_123456"  # quote(value) == value
    forms = encoded_forms(value)
    assert forms[value] == ""
    assert list(forms.values()).count("url-encoded") == 0
    assert Scrubber({value: "K"}).scrub(quote(value)) == "[redacted: K]"


def test_one_secrets_literal_wins_over_anothers_encoding() -> None:
    first = "abcdefgh12345678"
    second = first[::-1]  # the first one's reversed form is the second one itself
    scrubber = Scrubber({first: "FIRST", second: "SECOND"})
    assert scrubber.scrub(second) == "[redacted: SECOND]"
    assert scrubber.scrub(first) == "[redacted: FIRST]"


def test_text_without_the_secret_is_returned_as_is() -> None:
    rng = random.Random(7)
    texts = [
        "".join(rng.choices(string.printable, k=5000)),
        b64(rng.randbytes(4000)),
        rng.randbytes(3000).hex(),
        "the key is in the environment, as ANTHROPIC_API_KEY",
    ]
    for text in texts:
        assert SCRUBBER.scrub(text) is text


def test_json_values_and_found_name_each_form() -> None:
    value = {
        "content": [
            {"type": "thinking", "thinking": f"decoded {FORMS['hex']}"},
            {"type": "text", "text": f"it reads {FORMS['base64']}"},
            {"type": "tool_use", "input": {"code": f"k = '{FORMS['reversed']}'"}},
        ]
    }
    assert SCRUBBER.found(value) == [f"{NAME} (hex)", f"{NAME} (base64)", f"{NAME} (reversed)"]
    clean = SCRUBBER.clean_json(value)
    assert SCRUBBER.found(clean) == []
    dumped = json.dumps(clean)
    for form in ("hex", "base64", "reversed"):
        assert FORMS[form] not in dumped
    assert SCRUBBER.clean_json(clean) is clean  # nothing left: the same object back
    assert SCRUBBER.found({"a": "nothing here"}) == []


def test_a_stream_split_inside_an_encoded_form_is_still_caught() -> None:
    live = SCRUBBER.live()
    form = FORMS["base64"]
    pieces = ["printing: " + form[:9], form[9:20], form[20:] + " done\n"]
    out = []
    for piece in pieces:
        out += live.feed({"output_type": "stream", "name": "stdout", "text": piece})
    out += live.close()
    text = "".join(o["text"] for o in out)
    # The last character (the key's last bits and zeros) and the padding go with it.
    assert text == f"printing: [redacted: {NAME} (base64)] done\n"


def test_its_repr_and_names_show_no_value() -> None:
    assert repr(SCRUBBER) == f"Scrubber(names=['{NAME}'])"
    assert SCRUBBER.names == (NAME,)
    assert len(SCRUBBER) == 1
    assert SCRUBBER.needles > len(ENCODINGS)
