"""Recall's terms and scores (pure): the one tokenizer and the one score both backends share.

:func:`terms` turns a text into index terms: NFKC, casefold, the runs of letters and digits
(``[^\\W_]+``), without English stopwords (:data:`STOPWORDS`), 1-character tokens and
tokens longer than :data:`MAX_TERM_CHARS` (hashes, base64 blobs: noise, and too long for a
PostgreSQL lexeme), each reduced by the Snowball English stemmer. The store keeps a doc's
terms space-joined and gives them to SQLite FTS5 and to a PostgreSQL ``tsvector`` verbatim,
so both backends match the same terms.

:func:`score` is how much of a query a doc covers, each query term weighted by how rare it
is among the owner's docs: ``sum(idf(t) for t in Q if t in D) / sum(idf(t) for t in Q)``
with ``idf(t) = ln(1 + (N + 1) / (df(t) + 0.5))``, rounded to 4 places. It depends only on
which query terms a doc holds (not how often, not the doc's length), so a fact of one line
that says what was asked scores as well as a long turn that mentions it. Deterministic:
the same inputs give the same float on every machine.

:func:`clip_words` is how a hit's text is cut to its length: at whitespace only, so the
secret filter (:func:`~jupyter_agent.core.memory.recall.without_secrets`) always sees a key
whole, or not at all.

The stemmer is the pure-Python Snowball English stemmer of ``snowballstemmer`` (never the
optional C ``PyStemmer`` it may prefer): stored terms and query terms must come from the
same algorithm on every machine. Stems are cached (the words of chats repeat), one stemmer
per thread (a stemmer object holds its current word).
"""

from __future__ import annotations

import math
import re
import threading
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from snowballstemmer.english_stemmer import EnglishStemmer  # type: ignore[import-untyped]

__all__ = [
    "ELLIPSIS",
    "KIND_ORDER",
    "KIND_WEIGHTS",
    "MAX_QUERY_TERMS",
    "MAX_TERM_CHARS",
    "STOPWORDS",
    "clip_words",
    "hit_score",
    "idf",
    "preload",
    "query_terms",
    "score",
    "terms",
]

#: A query keeps at most this many distinct terms (the first seen).
MAX_QUERY_TERMS: Final = 24
#: Longer tokens are dropped: hashes and encoded blobs, never words anyone searches for.
MAX_TERM_CHARS: Final = 64

_TOKEN: Final = re.compile(r"[^\W_]+")

#: English function words (matched before stemming, after casefolding): they say nothing
#: about what a text is about. Fixed here: changing it changes every stored doc's terms.
_STOPWORD_LIST: Final = """
    a about above after again against all am an and any are aren as at be because been
    before being below between both but by can cannot could couldn did didn do does doesn
    doing don down during each few for from further had hadn has hasn have haven having he
    her here hers herself him himself his how i if in into is isn it its itself just let
    ll me more most mustn my myself no nor not now of off on once only or other ought our
    ours ourselves out over own re same shan she should shouldn so some such than that the
    their theirs them themselves then there these they this those through to too under
    until up ve very was wasn we were weren what when where which while who whom why will
    with won would wouldn you your yours yourself yourselves
"""
STOPWORDS: Final = frozenset(_STOPWORD_LIST.split())

_local = threading.local()

#: What :func:`clip_words` puts where it cut.
ELLIPSIS: Final = "…"


def clip_words(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else its start ended by
    :data:`ELLIPSIS` (``limit`` characters at most in all), cut at the last whitespace
    before the limit: never inside a run without whitespace (a token, a key), so a run that
    would straddle the limit is dropped whole, as is a first run longer than the limit."""
    if len(text) <= limit:
        return text
    room = max(0, limit - len(ELLIPSIS))
    if room < len(text) and not text[room].isspace():
        # The cut would fall inside a run: go back to the whitespace before it.
        cut = next((i for i in range(room - 1, -1, -1) if text[i].isspace()), 0)
    else:
        cut = room
    return text[:cut].rstrip() + ELLIPSIS


def preload() -> None:
    """Import the stemmer: the ``snowballstemmer`` package imports every language's (about
    15 ms), so not at the server's start; in a thread once it listens, or at the first use."""
    from snowballstemmer.english_stemmer import EnglishStemmer  # noqa: F401


def _stemmer() -> EnglishStemmer:
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        from snowballstemmer.english_stemmer import EnglishStemmer

        stemmer = _local.stemmer = EnglishStemmer()
    return stemmer


@lru_cache(maxsize=100_000)
def _term(token: str) -> str:
    """The term of a casefolded token, or "" for a token that is not one."""
    if not 1 < len(token) <= MAX_TERM_CHARS or token in STOPWORDS:
        return ""
    return str(_stemmer().stemWord(token))


def terms(text: str) -> list[str]:
    """The index terms of ``text``, in text order, repeats kept (see the module docstring)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return [term for term in map(_term, _TOKEN.findall(folded)) if term]


def query_terms(text: str) -> list[str]:
    """The distinct terms of a query in first-seen order, at most :data:`MAX_QUERY_TERMS`."""
    seen: dict[str, None] = {}
    for term in terms(text):
        if term not in seen:
            seen[term] = None
            if len(seen) == MAX_QUERY_TERMS:
                break
    return list(seen)


def idf(df: int, n_docs: int) -> float:
    """``ln(1 + (N + 1) / (df + 0.5))``: large for a rare term, small (never 0) for a common one."""
    return math.log(1.0 + (n_docs + 1) / (df + 0.5))


def score(query: Sequence[str], doc: Iterable[str], df: Mapping[str, int], n_docs: int) -> float:
    """The idf-weighted share of ``query`` terms that ``doc`` holds, in [0, 1], rounded to
    4 places (0.0 for an empty query). ``df`` maps a term to how many docs hold it (a
    missing term: 0); ``n_docs`` is how many docs there are."""
    held = set(doc)
    total = matched = 0.0
    for term in query:
        weight = idf(df.get(term, 0), n_docs)
        total += weight
        if term in held:
            matched += weight
    return round(matched / total, 4) if total > 0 else 0.0


#: How much a hit of each kind is worth: a fact saved to be remembered over a summary of
#: talk over a raw turn.
KIND_WEIGHTS: Final = {"memory": 1.0, "chunk": 0.9, "turn": 0.8}
#: The order of kinds among hits of equal score.
KIND_ORDER: Final = {"memory": 0, "chunk": 1, "turn": 2}


def hit_score(kind: str, coverage: float) -> float:
    """A hit's score: its :func:`score` times its kind's weight, rounded to 4 places."""
    return round(KIND_WEIGHTS[kind] * coverage, 4)
