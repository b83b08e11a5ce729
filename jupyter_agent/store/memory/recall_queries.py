"""Recall: the docs of the index that best cover a query, the same on SQLite and PostgreSQL.

A hit's score is :func:`~jupyter_agent.core.memory.terms.hit_score`: the idf-weighted share
of the query's terms the doc holds (N and df from ``agent_recall_df``: the owner's docs,
exact), times its kind's weight. Hits are ordered by (-score, kind: memory < chunk <
turn, -created, ref id) and the first ``k`` returned.

Candidates, with bounded work whatever the query. A doc's score depends only on WHICH
query terms it holds, and a doc that holds none of the rarest terms can score at most the
share of the others. So the candidates are the docs holding any of the rarest terms P:
the query's terms, rarest first, while their document frequencies add up to at most
``candidates`` (at least the rarest one). Per kind, one statement reads the newest
``candidates`` docs of that kind holding a term of P (SQLite: the FTS5 column of the kind,
``memory : ("t1" OR "t2")``, in descending rowid order, so the index alone orders them and
the read stops at the limit; PostgreSQL: ``tsv @@ 't1' | 't2'`` on its GIN index, by
``doc_id`` descending), and each is scored exactly (which query terms its stored terms
hold). So a query reads at most 3 x ``candidates`` docs, however common its words: a bare
full-text query ranking every doc that shares a word with the query reads them all.

It is the exact top k when no kind had more than ``candidates`` docs holding P (always so
on small data) and the k-th score beats what a doc holding none of P could score (the
usual case when a query has one telling word); otherwise it is the best of the newest
docs holding the query's rarest words. Either way both backends read the same candidates
(the same df, the same doc ids: ids follow the order docs were written) and score them
with the same Python function, so they return the same hits, in the same order, with the
same scores. The backend's own rank (bm25, ts_rank) is never used.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import bindparam, text

from jupyter_agent.core.memory.records import HIT_KINDS, RecallHit
from jupyter_agent.core.memory.terms import (
    KIND_ORDER,
    clip_words,
    hit_score,
    query_terms,
    score,
)
from jupyter_agent.store.memory import recall_index

__all__ = ["DEFAULT_CANDIDATES", "HIT_TEXT_CHARS", "recall"]

#: A hit's text is clipped to this many characters.
HIT_TEXT_CHARS: Final = 600
#: Docs of a kind read at most per recall (see the module docstring and bench_recall.py).
DEFAULT_CANDIDATES: Final = 250


@dataclass(frozen=True)
class _Row:
    kind: str
    ref_id: str
    chat_id: str | None
    created: str
    score: float


def _frequencies(conn: Any, owner: str, terms: Sequence[str]) -> tuple[dict[str, int], int]:
    query = text(
        "SELECT term, df FROM agent_recall_df WHERE owner = :owner AND term IN :terms"
    ).bindparams(bindparam("terms", expanding=True))
    found = {
        str(term): int(df)
        for term, df in conn.execute(query, {"owner": owner, "terms": ["", *terms]})
    }
    return found, found.pop("", 0)


def _rarest(q: Sequence[str], df: Mapping[str, int], budget: int) -> list[str]:
    """P: the rarest terms (ties: query order) while their df add up to <= ``budget``."""
    held = sorted((t for t in q if df.get(t, 0) > 0), key=lambda t: df[t])
    chosen: list[str] = []
    total = 0
    for term in held:
        if chosen and total + df[term] > budget:
            break
        chosen.append(term)
        total += df[term]
    return chosen


def _statement(
    pg: bool,
    kinds: Sequence[str],
    *,
    category: bool,
    exclude_turns: bool,
    n_chunks: int,
    sparse: bool = True,
) -> Any:
    """The candidates: per kind, the newest docs of that kind holding a term of P (each
    kind's own LIMIT), in one statement. ``sparse``: few enough docs hold P that
    PostgreSQL should read them through the GIN index (:func:`_sparse`)."""
    where = ["d.owner = :owner"]
    if exclude_turns:
        where.append("NOT (d.kind = 'turn' AND d.chat_id = :x_chat AND d.created >= :x_since)")
    if n_chunks:
        keys = ", ".join(f":x{i}" for i in range(n_chunks))
        where.append(f"NOT (d.kind = 'chunk' AND d.ref_id IN ({keys}))")
    parts = []
    for kind in kinds:
        conditions = [*where, f"d.kind = '{kind}'"]
        if category and kind == "memory":
            conditions.append(
                "d.ref_id IN (SELECT m.id FROM agent_memories m"
                " WHERE m.owner = :owner AND m.category = :category)"
            )
        head = f"SELECT '{kind}' AS kind, d.ref_id AS ref_id, d.chat_id AS chat_id,"
        head += " d.created AS created, d.terms AS terms"
        if pg:
            # PostgreSQL overestimates an OR of rare terms and walks the primary key
            # backwards, filtering every doc (all 120,000 of them for 55 matches): "+ 0"
            # leaves it the GIN index, always for the memories and chunks (their own
            # partial indexes, small), for the turns when P is sparse (we know its df).
            # The turns of a dense P (a common term) are found fastest by that walk.
            bitmap = sparse or kind != "turn"
            order = "d.doc_id + 0" if bitmap else "d.doc_id"
            body = (
                f" FROM agent_recall_docs d WHERE d.tsv @@ CAST(:match AS tsquery)"
                f" AND {' AND '.join(conditions)} ORDER BY {order} DESC LIMIT :scan"
            )
        else:
            # CROSS JOIN: the FTS scan drives (SQLite never reorders a CROSS JOIN), in
            # descending rowid order straight from the index, stopping at the LIMIT.
            body = (
                " FROM agent_recall_fts f CROSS JOIN agent_recall_docs d ON d.doc_id = f.rowid"
                f" WHERE agent_recall_fts MATCH :m_{kind} AND {' AND '.join(conditions)}"
                " ORDER BY f.rowid DESC LIMIT :scan"
            )
        parts.append(f"SELECT * FROM ({head}{body}) AS c_{kind}")
    return text(" UNION ALL ".join(parts))


def _sparse(held_by: int, n_docs: int, candidates: int) -> bool:
    """Whether reading the ``held_by`` docs holding P through the GIN index beats walking
    the newest docs until ``candidates`` hold it (about ``n_docs * candidates / held_by``
    docs): PostgreSQL's own guess, from its statistics, is far off for an OR of terms."""
    return held_by <= candidates or held_by * held_by <= n_docs * candidates


def _match(pg: bool, kind: str, terms: Sequence[str]) -> str:
    if pg:
        return " | ".join(f"'{t}'" for t in terms)
    return f"{kind} : (" + " OR ".join(f'"{t}"' for t in terms) + ")"


def _best(rows: list[_Row], k: int) -> list[_Row]:
    """The first ``k`` rows by (-score, kind order, -created, ref id)."""
    if len(rows) > k:  # only the rows that can be among the first k need the full sort
        kth = heapq.nlargest(k, ((r.score, -KIND_ORDER[r.kind]) for r in rows))[-1]
        rows = [r for r in rows if (r.score, -KIND_ORDER[r.kind]) >= kth]
    rows = sorted(rows, key=lambda r: r.ref_id)
    rows.sort(key=lambda r: r.created, reverse=True)  # stable: ties keep ref id order
    rows.sort(key=lambda r: (-r.score, KIND_ORDER[r.kind]))
    return rows[:k]


def recall(
    conn: Any,
    query: str,
    *,
    owner: str,
    kinds: Sequence[str],
    k: int,
    category: str | None,
    exclude_chat: str | None,
    exclude_since: str | None,
    exclude_chunks: Sequence[tuple[int, int]],
    candidates: int,
) -> list[RecallHit]:
    """The top ``k`` hits for ``query`` (see the module docstring); [] when the query has
    no terms. ``category``: memories of that category only (turns and chunks have none).
    ``exclude_chat`` with ``exclude_since``: that chat's turns created at or after it are
    left out; ``exclude_chunks``: (level, first_turn) of that chat's chunks left out.
    ``candidates``: the most docs of a kind read (>= 1)."""
    unknown = [kind for kind in kinds if kind not in HIT_KINDS]
    if unknown:
        raise ValueError(f"unknown recall kinds: {unknown}")
    if candidates < 1:
        raise ValueError(f"candidates must be at least 1, got {candidates}")
    wanted = [k_ for k_ in HIT_KINDS if k_ in kinds and (category is None or k_ == "memory")]
    q = query_terms(query)
    if not q or not wanted or k < 1:
        return []
    df, n_docs = _frequencies(conn, owner, q)
    chosen = _rarest(q, df, candidates)
    if not chosen:  # no doc holds any query term
        return []
    pg = conn.dialect.name == "postgresql"
    excluded = [
        recall_index.chunk_key(exclude_chat, level, first)
        for level, first in exclude_chunks
        if exclude_chat is not None
    ]
    exclude_turns = exclude_chat is not None and exclude_since is not None
    statement = _statement(
        pg,
        wanted,
        category=category is not None,
        exclude_turns=exclude_turns,
        n_chunks=len(excluded),
        sparse=_sparse(sum(df[t] for t in chosen), n_docs, candidates),
    )
    params: dict[str, Any] = {"owner": owner, "scan": candidates}
    if pg:
        params["match"] = _match(pg, "", chosen)
    else:
        params.update({f"m_{kind}": _match(pg, kind, chosen) for kind in wanted})
    params.update({f"x{i}": key for i, key in enumerate(excluded)})
    if category is not None:
        params["category"] = category
    if exclude_turns:
        params.update(x_chat=exclude_chat, x_since=exclude_since)
    needles = [(t, f" {t} ") for t in q]
    # A score depends only on which query terms a doc holds: computed once per such set.
    coverage: dict[tuple[str, ...], float] = {}
    found: list[_Row] = []
    for kind, ref_id, chat_id, created, doc_terms in conn.execute(statement, params):
        padded = f" {doc_terms} "
        held = tuple(t for t, needle in needles if needle in padded)
        share = coverage.get(held)
        if share is None:
            share = coverage[held] = score(q, held, df, n_docs)
        if share > 0:
            found.append(_Row(kind, ref_id, chat_id, created, hit_score(kind, share)))
    return _hits(conn, _best(found, k))


def _hits(conn: Any, rows: Sequence[_Row]) -> list[RecallHit]:
    """The rows as hits: their texts, chat titles, chunk spans and memory categories."""
    if not rows:
        return []
    by_kind: dict[str, list[str]] = {}
    for row in rows:
        by_kind.setdefault(row.kind, []).append(row.ref_id)
    texts: dict[tuple[str, str], str] = {}
    extra: dict[tuple[str, str], dict[str, Any]] = {}
    if "memory" in by_kind:
        query = text("SELECT id, text, category FROM agent_memories WHERE id IN :ids").bindparams(
            bindparam("ids", expanding=True)
        )
        for memory_id, body, category in conn.execute(query, {"ids": by_kind["memory"]}):
            texts[("memory", memory_id)] = body
            extra[("memory", memory_id)] = {"category": category}
    if "turn" in by_kind:
        query = text("SELECT id, user_text, record FROM agent_turns WHERE id IN :ids").bindparams(
            bindparam("ids", expanding=True)
        )
        for turn_id, user_text, record in conn.execute(query, {"ids": by_kind["turn"]}):
            reply = recall_index.record_reply(record)
            texts[("turn", turn_id)] = f"user: {user_text}\nagent: {reply}"
    spans = [key.rsplit(":", 2) for key in by_kind.get("chunk", ())]
    if spans:
        where = " OR ".join(
            f"(chat_id = :c{i} AND level = :l{i} AND first_turn = :f{i})" for i in range(len(spans))
        )
        params: dict[str, Any] = {}
        for i, (chat_id, level, first) in enumerate(spans):
            params.update({f"c{i}": chat_id, f"l{i}": int(level), f"f{i}": int(first)})
        query = text(
            f"SELECT chat_id, level, first_turn, last_turn, text FROM agent_chunks WHERE {where}"
        )
        for chat_id, level, first, last, body in conn.execute(query, params):
            key = recall_index.chunk_key(chat_id, level, first)
            texts[("chunk", key)] = body
            extra[("chunk", key)] = {
                "level": int(level),
                "first_turn": int(first),
                "last_turn": int(last),
            }
    titles = _titles(conn, {row.chat_id for row in rows if row.chat_id is not None})
    hits = []
    for row in rows:
        body = texts.get((row.kind, row.ref_id))
        if body is None:  # pragma: no cover - the doc and its row are written together
            continue
        hits.append(
            RecallHit(
                kind=row.kind,  # type: ignore[arg-type]
                id=row.ref_id,
                chat_id=row.chat_id,
                text=clip_words(body, HIT_TEXT_CHARS),
                score=row.score,
                created=row.created,
                chat_title=titles.get(row.chat_id) if row.chat_id is not None else None,
                **extra.get((row.kind, row.ref_id), {}),
            )
        )
    return hits


def _titles(conn: Any, chat_ids: set[str]) -> Mapping[str, str]:
    if not chat_ids:
        return {}
    query = text("SELECT id, title FROM chats WHERE id IN :ids").bindparams(
        bindparam("ids", expanding=True)
    )
    return {str(i): str(t) for i, t in conn.execute(query, {"ids": sorted(chat_ids)})}
