"""Known secret values scrubbed from every record, in simple encodings too; text made valid.

A model's code can read secrets the kernel's environment filter kept from it (the
server's ``/proc/<pid>/environ``, the server token in the runtime dir, a key file), print
them encoded, and a model can decode them back into its reply. One :class:`Scrubber` is
applied wherever text reaches a record, a model or a client: what the kernel sends back
(cell and bash results, live outputs, in-cell app requests), every result the run driver
records (model replies, their thinking and tool calls, app call results, what the loop
reads from the store), the messages and titles a person sends, the events, and the
requests a model call sends (:mod:`jupyter_agent.runtime.secret_guard` refuses one that
still holds a secret):

- each occurrence of a known secret value becomes ``[redacted: NAME]``, and of one of its
  encodings (:mod:`jupyter_agent.runtime.secret_forms`: base64 and URL-safe base64 at any
  offset, padded or not; hex in either case; reversed; URL-encoded) ``[redacted: NAME
  (base64)]`` and so on; where occurrences overlap, the whole overlapped stretch becomes
  one marker naming each, so no character of either survives (a whole base64 encoding
  goes with its padding; of one inside longer encoded text, the edge character that mixes
  the secret's bits with its neighbours' stays);
- each lone surrogate becomes U+FFFD (:func:`jupyter_agent.text.repair`), so the text can
  be written to a file, the database and a socket.

The known values (:func:`known_secrets`) are every resolved provider key (the tiers' and
the key policy's ``env:NAME`` references), the Jupyter server token, and the value of every
environment variable the kernel's environment filter removes
(:mod:`~jupyter_agent.runtime.kernels.envfilter`; names let through by ``kernel_env_keep`` are not
secrets), plus the password part of a ``user:password@`` URL. Values shorter than
:data:`MIN_SECRET_CHARS` are ignored, and so are their encodings (redacting ``1`` or
``true`` would mangle output and protect nothing), and so is an environment value naming
an existing absolute path on the server (``AWS_CA_BUNDLE=/etc/ssl/certs/ca.pem``,
``SSH_AUTH_SOCK``): it points to a secret, it is not one, and it shows up in ordinary
output.

What still passes: other transformations (an encoding of an encoding, a cipher, base64
wrapped over several lines, a secret split over two prints with other output between, one
character per line). A secret split over two chunks of one stream (a pipe read boundary, two
streamed deltas of a reply) is caught: :class:`LiveScrubber` holds back a chunk's tail while
it could be the start of a needle.

Cheap on the common path: the needles (about 7 per secret) are made once per scrubber;
text with no secret in it costs one C-speed substring search per needle (about 0.1 ms per
MB each, so about 0.7 ms per MB per secret; a combined regular expression measured 5 to 10
times slower) and one validity check (``isascii``, else a UTF-8 encode), and is returned as
the same object; the replacement work runs only on text that holds a secret.
"""

from __future__ import annotations

import os.path
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final, TypeVar

from jupyter_agent.runtime.kernels.envfilter import is_secret_name, is_secret_value
from jupyter_agent.runtime.secret_forms import encoded_forms
from jupyter_agent.text import repair

__all__ = [
    "MIN_SECRET_CHARS",
    "NO_SECRETS",
    "SERVER_TOKEN",
    "LiveScrubber",
    "Scrubber",
    "known_secrets",
    "url_password",
]

#: Values shorter than this are never treated as secrets.
MIN_SECRET_CHARS: Final = 8
#: The NAME in the marker of the Jupyter server's token.
SERVER_TOKEN: Final = "server token"

# The same shape as envfilter's URL rule, with the password captured.
_URL_PASSWORD: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/@\s:]*:([^/@\s]*)@")

# After a base64 needle: the last character of an encoding that ends there (it mixes the
# secret's last bits with zeros) and its "=" padding.
_PADDED_END: Final = re.compile(r"[A-Za-z0-9+/_\-]?={1,2}")
_BASE64: Final = ("(base64)", "(base64url)")

T = TypeVar("T")


def marker(names: Iterable[str]) -> str:
    """The text that replaces a secret: ``[redacted: NAME]`` (names joined by ``, ``)."""
    return f"[redacted: {', '.join(names)}]"


class Scrubber:
    """Replaces known secret values in text and JSON values (see the module docstring).

    ``secrets`` maps each secret value to the NAME its marker shows. Immutable; its
    ``repr`` names the secrets, never shows a value.
    """

    def __init__(
        self, secrets: Mapping[str, str] | None = None, *, min_chars: int = MIN_SECRET_CHARS
    ) -> None:
        kept = {v: n for v, n in (secrets or {}).items() if len(v) >= min_chars}
        # Every value's literal first, then the encodings: where a needle is both one
        # value's literal and another's encoding, the marker names the literal.
        labels = dict(kept)
        for value, name in kept.items():
            for needle, encoding in encoded_forms(value).items():
                labels.setdefault(needle, f"{name} ({encoding})" if encoding else name)
        self._set(labels, set(kept.values()), len(kept))

    def _set(self, labels: Mapping[str, str], names: set[str], count: int) -> None:
        # Longest first: where one needle holds another, the longer one is found.
        self._values: tuple[str, ...] = tuple(sorted(labels, key=lambda v: (-len(v), v)))
        self._names = dict(labels)
        self._base64 = frozenset(v for v, label in labels.items() if label.endswith(_BASE64))
        self._secret_names = tuple(sorted(names))
        self._count = count
        # For held_tail: the needles by their first character, and the longest one.
        by_first: dict[str, list[str]] = {}
        for value in self._values:
            by_first.setdefault(value[0], []).append(value)
        self._by_first = {ch: tuple(group) for ch, group in by_first.items()}
        self._longest = len(self._values[0]) if self._values else 0
        # Every needle is written by json.dumps (ASCII) as itself: see may_hold.
        self._json_plain = all(_json_plain(v) for v in self._values)

    def _only(self, needles: Iterable[str]) -> Scrubber:
        """A scrubber that looks for ``needles`` (some of this one's) alone."""
        narrow = Scrubber()
        narrow._set({v: self._names[v] for v in needles}, set(self._secret_names), self._count)
        return narrow

    @property
    def names(self) -> tuple[str, ...]:
        """The NAMEs of the secrets this scrubber knows (sorted, each once)."""
        return self._secret_names

    @property
    def needles(self) -> int:
        """How many strings it looks for: each secret's literal value and encodings."""
        return len(self._values)

    def __bool__(self) -> bool:
        return bool(self._values)

    def __len__(self) -> int:
        return self._count

    def __repr__(self) -> str:
        return f"Scrubber(names={list(self.names)!r})"

    # --- text ------------------------------------------------------------------------------

    def scrub(self, text: str) -> str:
        """``text`` with every known secret replaced (the same object when none is in it)."""
        if not self._values:
            return text
        spans = self.spans(text)
        return self.render(text, spans) if spans else text

    def clean(self, text: str) -> str:
        """``text`` repaired (lone surrogates to U+FFFD), then scrubbed."""
        return self.scrub(_repaired(text))

    def clean_json(self, value: T) -> T:
        """A JSON value with every string (keys included) cleaned; ``value`` itself when
        nothing changed (no copy on the common path)."""
        scrubber = self
        if self._values and not isinstance(value, str):
            # One search per secret over all the strings at once (a result holds hundreds
            # of small ones); the walk then looks only for the secrets that are there.
            joined = "\x00".join(_strings(value))
            present = [v for v in self._values if v in joined]
            if len(present) < len(self._values):
                scrubber = self._only(present)
        fixed, _changed = scrubber._walk(value)
        return fixed  # type: ignore[no-any-return]

    def found(self, value: Any) -> list[str]:
        """The names the markers would show (``NAME``, ``NAME (base64)``, ...) of the
        secrets in a JSON value (every string, keys included), each once, in the order
        found; empty when it holds none."""
        if not self._values:
            return []
        names: list[str] = []
        joined = "\x00".join(_strings(value))
        for _start, _end, found in self.spans(joined):
            names.extend(name for name in found if name not in names)
        return names

    def may_hold(self, encoded: str) -> bool:
        """Whether the JSON value whose ``json.dumps`` text (ASCII, the default) is
        ``encoded`` may hold a known secret: False is sure (no string of it holds one);
        True means :meth:`found` must tell. One C-speed search per needle over the text
        a request is sent as, instead of a walk of its strings: a needle that json.dumps
        writes as itself (printable ASCII, no quote or backslash) is in the text wherever
        it is in a string; with a needle it would escape the answer is always True."""
        if not self._values:
            return False
        if not self._json_plain:
            return True
        return any(value in encoded for value in self._values)

    def live(self) -> LiveScrubber:
        """A scrubber for one request's outputs as they arrive (see :class:`LiveScrubber`)."""
        return LiveScrubber(self)

    # --- internals -------------------------------------------------------------------------

    def spans(self, text: str) -> list[tuple[int, int, list[str]]]:
        """Where secrets occur in ``text``: ``(start, end, names)`` sorted; an occurrence
        inside a longer one is dropped, partly overlapping ones are merged."""
        found: list[tuple[int, int, str]] = []
        for value in self._values:
            if value not in text:  # the common path: one C-speed search per secret
                continue
            start = text.find(value)
            padded = value in self._base64
            while start >= 0:
                end = start + len(value)
                if padded and (tail := _PADDED_END.match(text, end)):
                    end = tail.end()  # a whole encoding's last character and its padding
                found.append((start, end, self._names[value]))
                start = text.find(value, start + 1)
        if not found:
            return []
        found.sort(key=lambda f: (f[0], -f[1]))  # at one start, the longest first
        merged: list[tuple[int, int, list[str]]] = []
        for start, end, name in found:
            if merged and start < merged[-1][1]:
                last = merged[-1]
                if end <= last[1]:
                    continue  # inside a longer secret's occurrence: the longer one names it
                names = last[2] if name in last[2] else [*last[2], name]
                merged[-1] = (last[0], end, names)
            else:
                merged.append((start, end, [name]))
        return merged

    @staticmethod
    def render(text: str, spans: list[tuple[int, int, list[str]]]) -> str:
        """``text`` with each span of :meth:`spans` replaced by its marker."""
        pieces: list[str] = []
        at = 0
        for start, end, names in spans:
            pieces.append(text[at:start])
            pieces.append(marker(names))
            at = end
        pieces.append(text[at:])
        return "".join(pieces)

    def held_tail(self, text: str) -> int:
        """The length of the longest end of ``text`` that could begin a secret (a proper
        prefix of one): what a stream must hold back until its next chunk."""
        size = len(text)
        by_first = self._by_first
        # Only the last (longest needle - 1) characters can begin an unfinished occurrence;
        # the first position that begins one gives the longest end.
        for at in range(max(size - self._longest + 1, 0), size):
            needles = by_first.get(text[at])
            if needles is None:
                continue
            rest = text[at:]
            for value in needles:
                if len(value) > size - at and value.startswith(rest):
                    return size - at
        return 0

    def _walk(self, value: Any) -> tuple[Any, bool]:
        if isinstance(value, str):
            out = self.clean(value)
            return out, out is not value
        if isinstance(value, list):
            items = [self._walk(v) for v in value]
            if any(changed for _, changed in items):
                return [v for v, _ in items], True
            return value, False
        if isinstance(value, tuple):
            items = [self._walk(v) for v in value]
            if any(changed for _, changed in items):
                return tuple(v for v, _ in items), True
            return value, False
        if isinstance(value, dict):
            pairs = [(self._walk(k), self._walk(v)) for k, v in value.items()]
            if any(kc or vc for (_, kc), (_, vc) in pairs):
                return {k: v for (k, _), (v, _) in pairs}, True
            return value, False
        return value, False


def _strings(value: Any) -> Iterator[str]:
    """Every string of a JSON value (keys included), depth first."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                yield key
            yield from _strings(item)


def _json_plain(value: str) -> bool:
    """Whether json.dumps (ASCII) writes every character of ``value`` as itself."""
    return value.isascii() and value.isprintable() and '"' not in value and "\\" not in value


def _repaired(text: str) -> str:
    """:func:`~jupyter_agent.text.repair`, with a fast path for text that is valid (ASCII is
    checked in microseconds per MB, UTF-8 encoding in a fraction of a millisecond; the
    surrogate search costs about 15 ms per MB)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return repair(text)
    return text


#: The scrubber that knows no secret: it only repairs text.
NO_SECRETS: Final = Scrubber()


class LiveScrubber:
    """Cleans one request's outputs (nbformat shapes) in the order the kernel sends them.

    Stream text is cleaned per stream name across chunks: the end of a chunk that could
    begin a secret is held back and joined to the next chunk of that stream (a key split
    by a pipe read is still caught). Any other output first releases what the streams
    hold (order kept), then goes out cleaned. :meth:`close` releases the rest. So the
    live view may lag a stream by a few characters until its next chunk.
    """

    def __init__(self, scrubber: Scrubber) -> None:
        self._scrubber = scrubber
        self._held: dict[str, str] = {}

    def feed(self, output: dict[str, Any]) -> list[dict[str, Any]]:
        """The outputs to pass on now for one output from the kernel (maybe none)."""
        if output.get("output_type") != "stream":
            return [*self.close(), self._scrubber.clean_json(output)]
        name = str(output.get("name") or "stdout")
        text = self.text(name, str(output.get("text") or ""))
        return [{**output, "text": text}] if text else []

    def text(self, name: str, chunk: str) -> str:
        """The cleaned text to pass on now for the next ``chunk`` of stream ``name`` (maybe
        empty: all of it held back); :meth:`feed` of one stream output, without the dicts."""
        held = self._held.pop(name, None)
        text = _repaired(chunk) if held is None else held + _repaired(chunk)
        scrubber = self._scrubber
        cut = len(text) - scrubber.held_tail(text)
        spans = scrubber.spans(text)
        # A whole secret that ends in the held tail is not cut in two: hold all of it.
        for start, end, _names in spans:
            if start < cut < end:
                cut = start
        if cut < len(text):
            self._held[name] = text[cut:]
        if cut == 0:
            return ""
        if not spans:
            return text if cut == len(text) else text[:cut]
        done = [span for span in spans if span[1] <= cut]
        return scrubber.render(text[:cut], done)

    def close(self) -> list[dict[str, Any]]:
        """What the streams still hold, cleaned (one stream output per name)."""
        held, self._held = self._held, {}
        return [
            {"output_type": "stream", "name": name, "text": self._scrubber.scrub(text)}
            for name, text in held.items()
        ]


def url_password(url: str) -> str | None:
    """The password of a ``scheme://user:password@host`` URL (a database URL), else None."""
    match = _URL_PASSWORD.search(url or "")
    return match.group(1) or None if match else None


def known_secrets(
    *,
    environ: Mapping[str, str],
    key_refs: Iterable[str] = (),
    server_token: str | None = None,
    keep: Iterable[str] = (),
    exists: Callable[[str], bool] = os.path.exists,
) -> dict[str, str]:
    """The secret values to scrub, each mapped to the NAME its marker shows.

    ``key_refs`` are credential references (``env:NAME``; others are ignored): their values
    are scrubbed even when ``keep`` lets the name through. ``server_token`` is labelled
    :data:`SERVER_TOKEN`. Every variable of ``environ`` the kernel's environment filter
    removes (and ``keep`` does not let through) adds its value, and the password of a
    ``user:password@`` URL in it, unless the value is an absolute path that ``exists``
    (a pointer to a secret, not one). Where one value has several names, a key reference's
    name wins, then the token's, then the first name in sorted order.
    """
    found: dict[str, str] = {}

    def add(value: str | None, name: str) -> None:
        if not value:
            return
        found.setdefault(value, name)
        stripped = value.strip()
        if stripped and stripped != value:
            found.setdefault(stripped, name)

    for ref in key_refs:
        if ref.startswith("env:"):
            name = ref.removeprefix("env:")
            add(environ.get(name), name)
    add(server_token, SERVER_TOKEN)
    kept = set(keep)
    for name in sorted(environ):
        value = environ[name]
        if name in kept or not (is_secret_name(name) or is_secret_value(value)):
            continue
        if os.path.isabs(value) and exists(value):
            continue
        add(value, name)
        for match in _URL_PASSWORD.finditer(value):
            add(match.group(1), f"{name} password")
    return found
