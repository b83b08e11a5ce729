"""core/memory/terms.py: the terms both backends index and the score recall ranks by."""

from __future__ import annotations

import math

import pytest

from jupyter_agent.core.memory.terms import (
    MAX_QUERY_TERMS,
    STOPWORDS,
    clip_words,
    hit_score,
    idf,
    query_terms,
    score,
    terms,
)


def test_terms_normalise_split_drop_and_stem() -> None:
    assert terms("Plotting the SALES figures, by region!") == ["plot", "sale", "figur", "region"]
    # NFKC (full-width letters, ligatures), casefold (ß), diacritics kept, digits kept.
    wide = "\uff30\uff41\uff4e\uff44\uff41\uff53"  # full-width "Pandas"
    assert terms(f"{wide} \ufb01le Straße café 2024") == ["panda", "file", "strass", "café", "2024"]
    # Underscores, dots and dashes split; one-character tokens and stopwords are dropped.
    assert terms("sales_2024.parquet a-b x it's") == ["sale", "2024", "parquet"]
    assert terms("") == []
    assert terms("the of and I you") == []
    assert terms("a" * 64 + " " + "b" * 65) == ["a" * 64]  # hashes and blobs are not terms
    assert terms("东京 データ") == ["东京", "データ"]
    assert {"the", "and", "not", "you"} <= STOPWORDS


def test_query_terms_are_distinct_in_first_seen_order_and_capped() -> None:
    assert query_terms("plots plot PLOTTING sales plot") == ["plot", "sale"]
    many = " ".join(f"word{i}" for i in range(40))
    assert query_terms(many) == [f"word{i}" for i in range(MAX_QUERY_TERMS)]


def test_score_is_idf_weighted_coverage() -> None:
    df = {"sale": 10, "quokka": 1}
    n = 100
    w_sale, w_quokka = idf(10, n), idf(1, n)
    assert w_sale == pytest.approx(math.log(1 + 101 / 10.5))
    assert w_quokka > w_sale
    q = ["sale", "quokka", "absent"]
    w_absent = idf(0, n)
    total = w_sale + w_quokka + w_absent
    assert score(q, ["quokka", "other"], df, n) == round(w_quokka / total, 4)
    assert score(q, ["sale", "quokka", "absent"], df, n) == 1.0
    assert score(q, [], df, n) == 0.0
    assert score([], ["sale"], df, n) == 0.0
    # The rare term is worth more than the common one; repeats in the doc do not count.
    assert score(q, ["quokka"], df, n) > score(q, ["sale", "sale", "sale"], df, n)
    assert hit_score("memory", 0.5) == 0.5
    assert hit_score("chunk", 0.5) == 0.45
    assert hit_score("turn", 0.3333) == 0.2666


def test_clip_words_cuts_at_whitespace_only() -> None:
    assert clip_words("short text", 600) == "short text"
    assert clip_words("abc def ghi", 11) == "abc def ghi"
    assert clip_words("abc def ghi", 10) == "abc def…"  # "ghi" would be cut: dropped
    assert clip_words("abc def ghi", 9) == "abc def…"
    assert clip_words("abc defghi jk", 9) == "abc…"
    assert clip_words("abcdefghijk more", 8) == "…"  # a first run longer than the limit
    assert clip_words("ab\tcd\nef gh", 7) == "ab\tcd…"
    for limit in range(1, 40):
        text = "one two three fourteen fifteen sixteen seventeen"
        clipped = clip_words(text, limit)
        assert len(clipped) <= limit
        head = clipped.removesuffix("…")
        assert text.startswith(head)
        assert head == "" or text[len(head) :][:1].isspace()
