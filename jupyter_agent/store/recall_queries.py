"""Recall: the docs of the index that best cover a query, the same on SQLite and PostgreSQL.

A hit's score is :func:`~jupyter_agent.core.recall_terms.hit_score`: the idf-weighted share
of the query's terms the doc holds (N and df from ``agent_recall_df``, the owner's docs),
times its kind's weight. Hits are ordered by (-score, kind: memory < chunk < turn,
-created, ref id) and the first ``k`` returned.

How the ``k`` are found without scoring every doc that shares a word with the query
(max-score pruning). A doc's score depends only on WHICH query terms it holds. Query terms
are taken rarest first into a set P; one SQL statement asks the full-text index for the
docs holding any term of P (FTS5 ``MATCH`` of the quoted terms joined by OR; PostgreSQL
``tsv @@ 't1' | 't2'``, on its GIN index), computes for each which query terms it holds
(a substring test on its space-padded terms: exact, and the same on both backends) and
keeps the best ``candidates`` by that weighted sum. A doc holding none of P holds only the
other terms, so its score is at most their share of the weight; once the k-th best score
found beats that bound, no other doc can enter the top k and the search stops. Else the
next rarer term joins P. A query of common words stops at the first round; a query whose
rare words match nothing useful goes on, at worst to one statement over every term (what
a bare full-text query costs). The rank is the score itself, not the backend's bm25 or
ts_rank, so both backends return the same hits, in the same order, with the same scores
(the weighted sums are the same IEEE doubles; ties are broken by the columns, compared
by code point on PostgreSQL too).

Exact unless more than ``candidates - k`` docs have scores within a rounding step (1e-4)
of the k-th one: the statement's LIMIT orders by the unrounded sum.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import bindparam, text

from jupyter_agent.core.memory import HIT_KINDS, RecallHit
from jupyter_agent.core.recall_terms import (
    KIND_ORDER,
    KIND_WEIGHTS,
    hit_score,
    idf,
    query_terms,
    score,
)
from jupyter_agent.store import recall_index

__all__ = ["HIT_TEXT_CHARS", "recall"]

#: A hit's text is clipped to this many characters.
HIT_TEXT_CHARS: Final = 600


@dataclass(frozen=True)
class _Row:
    kind: str
    ref_id: str
    chat_id: str | None
    created: str
    score: float


def _clip(body: str) -> str:
    return body if len(body) <= HIT_TEXT_CHARS else body[: HIT_TEXT_CHARS - 1] + "…"


def _frequencies(conn: Any, owner: str, terms: Sequence[str]) -> tuple[dict[str, int], int]:
    query = text(
        "SELECT term, df FROM agent_recall_df WHERE owner = :owner AND term IN :terms"
    ).bindparams(bindparam("terms", expanding=True))
    found = {
        str(term): int(df)
        for term, df in conn.execute(query, {"owner": owner, "terms": ["", *terms]})
    }
    return found, found.pop("", 0)


def _statement(
    pg: bool,
    n_terms: int,
    kinds: Sequence[str],
    *,
    category: bool,
    exclude_turns: bool,
    n_chunks: int,
) -> Any:
    """One round's SQL: docs holding any term of P, which query terms each holds, best first."""
    padded = "(' ' || d.terms || ' ')"
    held = [
        f"(CASE WHEN {'strpos' if pg else 'instr'}({padded}, :p{i}) > 0 THEN 1 ELSE 0 END)"
        for i in range(n_terms)
    ]
    weight = (
        "(CASE d.kind WHEN 'memory' THEN :w_memory WHEN 'chunk' THEN :w_chunk ELSE :w_turn END)"
    )
    total = " + ".join(f"b{i} * :i{i}" for i in range(n_terms))
    order = "(CASE c.kind WHEN 'memory' THEN 0 WHEN 'chunk' THEN 1 ELSE 2 END)"
    collate = ' COLLATE "C"' if pg else ""
    where = ["d.owner = :owner", "d.kind IN (" + ", ".join(f"'{k}'" for k in kinds) + ")"]
    if category:
        where.append(
            "d.ref_id IN (SELECT m.id FROM agent_memories m"
            " WHERE m.owner = :owner AND m.category = :category)"
        )
    if exclude_turns:
        where.append("NOT (d.kind = 'turn' AND d.chat_id = :x_chat AND d.created >= :x_since)")
    if n_chunks:
        keys = ", ".join(f":x{i}" for i in range(n_chunks))
        where.append(f"NOT (d.kind = 'chunk' AND d.ref_id IN ({keys}))")
    if pg:
        source = "agent_recall_docs d WHERE d.tsv @@ CAST(:match AS tsquery)"
    else:
        source = (
            "agent_recall_fts f JOIN agent_recall_docs d ON d.doc_id = f.rowid"
            " WHERE agent_recall_fts MATCH :match"
        )
    bits = ", ".join(f"{h} AS b{i}" for i, h in enumerate(held))
    # The CTE computes each doc's bits once; the outer query weighs and orders them.
    sql = (
        "WITH c AS MATERIALIZED (SELECT d.kind AS kind, d.ref_id AS ref_id,"
        f" d.chat_id AS chat_id, d.created AS created, {weight} AS w, {bits}"
        f" FROM {source} AND {' AND '.join(where)})"
        f" SELECT kind, ref_id, chat_id, created, {', '.join(f'b{i}' for i in range(n_terms))}"
        f" FROM c ORDER BY w * ({total}) DESC, {order}, created{collate} DESC,"
        f" ref_id{collate} LIMIT :limit"
    )
    return text(sql)


def _match(pg: bool, terms: Sequence[str]) -> str:
    if pg:
        return " | ".join(f"'{t}'" for t in terms)
    return " OR ".join(f'"{t}"' for t in terms)


def _ordered(rows: list[_Row]) -> list[_Row]:
    rows = sorted(rows, key=lambda r: r.ref_id)
    rows.sort(key=lambda r: r.created, reverse=True)  # stable: ties keep ref id order
    rows.sort(key=lambda r: (-r.score, KIND_ORDER[r.kind]))
    return rows


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
    left out; ``exclude_chunks``: (level, first_turn) of that chat's chunks left out."""
    unknown = [kind for kind in kinds if kind not in HIT_KINDS]
    if unknown:
        raise ValueError(f"unknown recall kinds: {unknown}")
    wanted = [k_ for k_ in HIT_KINDS if k_ in kinds and (category is None or k_ == "memory")]
    q = query_terms(query)
    if not q or not wanted or k < 1:
        return []
    df, n_docs = _frequencies(conn, owner, q)
    weights = [idf(df.get(t, 0), n_docs) for t in q]
    total = sum(weights)
    pg = conn.dialect.name == "postgresql"
    excluded = [
        recall_index.chunk_key(exclude_chat, level, first)
        for level, first in exclude_chunks
        if exclude_chat is not None
    ]
    statement = _statement(
        pg,
        len(q),
        wanted,
        category=category is not None,
        exclude_turns=exclude_chat is not None and exclude_since is not None,
        n_chunks=len(excluded),
    )
    params: dict[str, Any] = {"owner": owner, "limit": max(k, candidates)}
    params.update({f"w_{kind}": KIND_WEIGHTS[kind] for kind in HIT_KINDS})
    params.update({f"p{i}": f" {t} " for i, t in enumerate(q)})
    params.update({f"i{i}": w for i, w in enumerate(weights)})
    params.update({f"x{i}": key for i, key in enumerate(excluded)})
    if category is not None:
        params["category"] = category
    if exclude_chat is not None and exclude_since is not None:
        params.update(x_chat=exclude_chat, x_since=exclude_since)
    top_weight = max(KIND_WEIGHTS[kind] for kind in wanted)
    # Rarest first (ties: query order); a term no doc holds matches nothing.
    rarest = sorted((i for i, t in enumerate(q) if df.get(t, 0) > 0), key=lambda i: -weights[i])
    best: list[_Row] = []
    for j in range(1, len(rarest) + 1):
        chosen = rarest[:j]
        params["match"] = _match(pg, [q[i] for i in chosen])
        found = []
        for row in conn.execute(statement, params):
            kind, ref_id, chat_id, created = row[0], row[1], row[2], row[3]
            held = [t for i, t in enumerate(q) if row[4 + i]]
            found.append(
                _Row(kind, ref_id, chat_id, created, hit_score(kind, score(q, held, df, n_docs)))
            )
        best = _ordered([r for r in found if r.score > 0])[:k]
        rest = sum(weights[i] for i in rarest[j:])
        bound = round(top_weight * round(rest / total, 4), 4)
        if len(best) == k and best[-1].score > bound:
            break
    return _hits(conn, best)


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
    for key in by_kind.get("chunk", ()):
        chat_id, level, first = key.rsplit(":", 2)
        found = conn.execute(
            text(
                "SELECT text, last_turn FROM agent_chunks"
                " WHERE chat_id = :chat AND level = :level AND first_turn = :first"
            ),
            {"chat": chat_id, "level": int(level), "first": int(first)},
        ).first()
        if found is not None:
            texts[("chunk", key)] = found[0]
            extra[("chunk", key)] = {
                "level": int(level),
                "first_turn": int(first),
                "last_turn": int(found[1]),
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
                text=_clip(body),
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
