"""The recall index: one doc per memory, turn and chunk summary, written with what it indexes.

Functions on a SQLAlchemy Core connection inside the caller's transaction (the
:class:`~jupyter_agent.store.repo.Store` opens it): a turn's doc is written by the
transaction that stores the turn, a chunk's by the one that stores the chunk, a memory's
by the one that writes the memory; deleting a chat deletes its turns' and chunks' docs
(its memories stay, and so do theirs). Deleting a memory also deletes the doc of the turn
its run stored (:func:`forget_run_turn`): a forgotten fact is not recalled through the turn
that saved it, and that turn, stored later, is not indexed (:func:`run_suppressed`).

A doc holds its distinct terms (:func:`jupyter_agent.core.memory.terms.terms`, space-joined,
in first-seen order). The
full-text index over them is kept by the database (SQLite: triggers into the FTS5 table;
PostgreSQL: a generated ``tsvector``). The document frequencies recall's idf needs are
kept here, in ``agent_recall_df``: per owner, how many docs hold each term, and the doc
count in the row of term "". Exact and read by primary key in microseconds, where FTS5's
``fts5vocab`` walks a term's whole doclist (milliseconds for a common term at 100,000
docs) and cannot tell owners apart. Its rows are updated in sorted (owner, term) order, so
concurrent PostgreSQL transactions lock them in one order (no deadlock).

Doc texts: a memory's text; a turn's message and its final reply (:func:`turn_text`);
a chunk's summary. A chunk's ``ref_id`` is its key :func:`chunk_key`, the same on every
backend and computable from what a history window shows.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import text

from jupyter_agent.core.history.chunks import StoredChunk
from jupyter_agent.core.memory.terms import terms as text_terms
from jupyter_agent.core.turns import TurnRecord

__all__ = [
    "BACKFILL_LOG_EVERY",
    "MAX_DOC_TERMS",
    "Doc",
    "backfill",
    "chunk_doc",
    "chunk_key",
    "delete_chat_docs",
    "delete_doc",
    "final_reply",
    "forget_run_turn",
    "put_docs",
    "record_reply",
    "replace_doc",
    "run_suppressed",
    "turn_doc",
    "turn_text",
]

#: A doc keeps at most this many distinct terms (a huge reply is indexed by its start).
MAX_DOC_TERMS: Final = 10_000
_PAGE: Final = 1000
#: The backfill logs its progress every this many docs.
BACKFILL_LOG_EVERY: Final = 5000

log = logging.getLogger(__name__)

_INSERT_DOC: Final = text(
    "INSERT INTO agent_recall_docs (owner, kind, ref_id, chat_id, created, terms, n_terms)"
    " VALUES (:owner, :kind, :ref_id, :chat_id, :created, :terms, :n_terms)"
)
# Driver SQL with positional parameters (sqlite3: ?, psycopg: %s), run by executemany on
# tuples: a turn updates ~100 counts, and per-row parameter handling of a text() statement
# cost more than the database's own work.
_INSERT_ROWS: Final = (
    "INSERT INTO agent_recall_docs (owner, kind, ref_id, chat_id, created, terms, n_terms)"
    " VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p})"
)
_ADD_DF: Final = (
    "INSERT INTO agent_recall_df (owner, term, df) VALUES ({p}, {p}, {p})"
    " ON CONFLICT (owner, term) DO UPDATE SET df = agent_recall_df.df + excluded.df"
)
_DROP_DF: Final = "DELETE FROM agent_recall_df WHERE owner = {p} AND term = {p} AND df <= 0"


@dataclass(frozen=True, kw_only=True)
class Doc:
    """One doc of the index: what it is (``kind``, ``ref_id``), whose, where, when, its
    distinct terms and ``length`` (its terms with repeats: ``n_terms``)."""

    owner: str
    kind: str
    ref_id: str
    chat_id: str | None
    created: str
    terms: tuple[str, ...]

    length: int = 0

    @classmethod
    def of(
        cls, *, owner: str, kind: str, ref_id: str, chat_id: str | None, created: str, body: str
    ) -> Doc:
        """The doc of ``body``: its distinct terms in first-seen order (a score counts which
        terms a doc holds, not how often: repeats would only cost index space and time),
        at most :data:`MAX_DOC_TERMS`; ``length`` is its count of terms with repeats."""
        found = text_terms(body)
        distinct = tuple(dict.fromkeys(found))[:MAX_DOC_TERMS]
        return cls(
            owner=owner,
            kind=kind,
            ref_id=ref_id,
            chat_id=chat_id,
            created=created,
            terms=distinct,
            length=len(found),
        )

    def values(self) -> dict[str, Any]:
        return {
            "owner": self.owner,
            "kind": self.kind,
            "ref_id": self.ref_id,
            "chat_id": self.chat_id,
            "created": self.created,
            "terms": " ".join(self.terms),
            "n_terms": self.length,
        }


def chunk_key(chat_id: str, level: int, first_turn: int) -> str:
    """A chunk summary's ref id: ``{chat_id}:{level}:{first_turn}`` (unique per chunk)."""
    return f"{chat_id}:{level}:{first_turn}"


def final_reply(replies: Iterable[tuple[str, bool]]) -> str:
    """The reply that ended a turn: its last ``done`` one, else its last one, else ""."""
    last = done = None
    for reply_text, is_done in replies:
        last = reply_text
        if is_done:
            done = reply_text
    return done if done is not None else (last or "")


def turn_text(user_text: str, reply: str) -> str:
    """What a turn's doc indexes: the message and the final reply."""
    return f"{user_text}\n{reply}" if reply else user_text


def _apply_df(conn: Any, deltas: Mapping[tuple[str, str], int]) -> None:
    """Add ``deltas`` to the (owner, term) counts, in sorted order; drop counts at zero."""
    changes = [(owner, term, d) for (owner, term), d in sorted(deltas.items()) if d]
    if not changes:
        return
    mark = "?" if conn.dialect.name == "sqlite" else "%s"
    conn.exec_driver_sql(_ADD_DF.format(p=mark), changes)
    dropped = [(o, t) for o, t, d in changes if d < 0]
    if dropped:
        conn.exec_driver_sql(_DROP_DF.format(p=mark), dropped)


def _count(deltas: Counter[tuple[str, str]], owner: str, terms: Iterable[str], sign: int) -> None:
    deltas[(owner, "")] += sign
    for term in set(terms):
        deltas[(owner, term)] += sign


def turn_doc(turn: TurnRecord, owner: str = "") -> Doc:
    """A stored turn's doc: its message and final reply."""
    reply = final_reply((r.text, r.done) for r in turn.replies)
    return Doc.of(
        owner=owner,
        kind="turn",
        ref_id=turn.id,
        chat_id=turn.chat_id,
        created=turn.created,
        body=turn_text(turn.user_text, reply),
    )


def chunk_doc(chunk: StoredChunk, owner: str = "") -> Doc:
    """A stored chunk summary's doc."""
    return Doc.of(
        owner=owner,
        kind="chunk",
        ref_id=chunk_key(chunk.chat_id, chunk.level, chunk.first_turn),
        chat_id=chunk.chat_id,
        created=chunk.created,
        body=chunk.text,
    )


def put_docs(conn: Any, docs: Sequence[Doc]) -> None:
    """Insert new docs (their ``(kind, ref_id)`` must not be indexed yet) and count them."""
    if not docs:
        return
    deltas: Counter[tuple[str, str]] = Counter()
    for doc in docs:
        _count(deltas, doc.owner, doc.terms, 1)
    conn.execute(_INSERT_DOC, [doc.values() for doc in docs])
    _apply_df(conn, deltas)


def replace_doc(conn: Any, doc: Doc) -> None:
    """Replace the indexed doc of ``(doc.kind, doc.ref_id)`` (insert it if there is none)."""
    old = conn.execute(
        text("SELECT owner, terms FROM agent_recall_docs WHERE kind = :kind AND ref_id = :ref"),
        {"kind": doc.kind, "ref": doc.ref_id},
    ).first()
    if old is None:
        put_docs(conn, [doc])
        return
    deltas: Counter[tuple[str, str]] = Counter()
    _count(deltas, old[0], old[1].split(), -1)
    _count(deltas, doc.owner, doc.terms, 1)
    values = doc.values()
    conn.execute(
        text(
            "UPDATE agent_recall_docs SET owner = :owner, chat_id = :chat_id,"
            " created = :created, terms = :terms, n_terms = :n_terms"
            " WHERE kind = :kind AND ref_id = :ref_id"
        ),
        values,
    )
    _apply_df(conn, deltas)


def _delete_where(conn: Any, where: str, params: Mapping[str, Any]) -> int:
    rows = conn.execute(
        text(f"SELECT owner, terms FROM agent_recall_docs WHERE {where}"), params
    ).all()
    if not rows:
        return 0
    deltas: Counter[tuple[str, str]] = Counter()
    for owner, doc_terms in rows:
        _count(deltas, owner, doc_terms.split(), -1)
    conn.execute(text(f"DELETE FROM agent_recall_docs WHERE {where}"), params)
    _apply_df(conn, deltas)
    return len(rows)


def delete_doc(conn: Any, kind: str, ref_id: str) -> bool:
    """Delete one doc; False when it was not indexed."""
    where = "kind = :kind AND ref_id = :ref"
    return bool(_delete_where(conn, where, {"kind": kind, "ref": ref_id}))


def forget_run_turn(conn: Any, run_id: str, *, memory_id: str | None = None) -> int:
    """Delete the doc of the turn ``run_id`` stored (the turn itself stays) and record the
    run in ``agent_recall_suppressed``, so its turn, if it is stored later, gets no doc.
    ``memory_id``: that memory's doc goes too, in the same count update (one sorted pass
    over the df rows: two would lock them out of order). The number of docs deleted."""
    where = "kind = 'turn' AND ref_id IN (SELECT id FROM agent_turns WHERE run_id = :run)"
    params: dict[str, Any] = {"run": run_id}
    if memory_id is not None:
        where = f"({where}) OR (kind = 'memory' AND ref_id = :memory)"
        params["memory"] = memory_id
    deleted = _delete_where(conn, where, params)
    conn.execute(
        text(
            "INSERT INTO agent_recall_suppressed (run_id) VALUES (:run)"
            " ON CONFLICT (run_id) DO NOTHING"
        ),
        {"run": run_id},
    )
    return deleted


def run_suppressed(conn: Any, run_id: str) -> bool:
    """Whether the run's turn must not be indexed (a memory it saved was deleted)."""
    found = conn.execute(
        text("SELECT 1 FROM agent_recall_suppressed WHERE run_id = :run"), {"run": run_id}
    ).first()
    return found is not None


def delete_turn_docs_of_model(conn: Any, model: str) -> int:
    """Delete the docs of every turn ``model`` answered (migration v11: the demo's)."""
    where = "kind = 'turn' AND ref_id IN (SELECT id FROM agent_turns WHERE model = :model)"
    return _delete_where(conn, where, {"model": model})


def delete_chat_docs(conn: Any, chat_id: str) -> int:
    """Delete the docs of the chat's turns and chunks (not of memories saved in it)."""
    return _delete_where(conn, "chat_id = :chat AND kind IN ('turn', 'chunk')", {"chat": chat_id})


def _insert_rows(conn: Any, docs: Sequence[Doc]) -> None:
    """Insert docs by driver executemany on tuples (the backfill's bulk path)."""
    mark = "?" if conn.dialect.name == "sqlite" else "%s"
    rows = [
        (d.owner, d.kind, d.ref_id, d.chat_id, d.created, " ".join(d.terms), d.length) for d in docs
    ]
    conn.exec_driver_sql(_INSERT_ROWS.format(p=mark), rows)


def backfill(conn: Any, *, log_every: int = BACKFILL_LOG_EVERY) -> int:
    """Index every stored turn and chunk summary (migration v5), page by page; the docs
    written. Logs its progress every ``log_every`` docs and its total at the end (a big
    database takes a while, and the server waits for it)."""
    started = time.perf_counter()
    # Every backfilled doc is the server user's (owner ""): one term counter, C-fast.
    counts: Counter[str] = Counter()
    n_docs = 0
    logged = 0
    total = int(conn.execute(text("SELECT COUNT(*) FROM agent_turns")).scalar() or 0)
    if total:
        log.info("indexing %d stored turns for recall (migration v5)", total)
    after = ""
    while True:
        rows = conn.execute(
            text(
                "SELECT id, chat_id, created, user_text, record FROM agent_turns"
                " WHERE id > :after ORDER BY id LIMIT :n"
            ),
            {"after": after, "n": _PAGE},
        ).all()
        if not rows:
            break
        docs = [
            Doc.of(
                owner="",
                kind="turn",
                ref_id=turn_id,
                chat_id=chat_id,
                created=created,
                body=turn_text(user_text, record_reply(record)),
            )
            for turn_id, chat_id, created, user_text, record in rows
        ]
        for doc in docs:
            counts.update(doc.terms)  # distinct already
        _insert_rows(conn, docs)
        n_docs += len(docs)
        after = rows[-1][0]
        if n_docs - logged >= log_every:
            logged = n_docs
            log.info(
                "recall index: %d of %d turns indexed (%.1f s)",
                n_docs,
                total,
                time.perf_counter() - started,
            )
    chunks = conn.execute(
        text("SELECT chat_id, level, first_turn, created, text FROM agent_chunks")
    ).all()
    docs = [
        Doc.of(
            owner="",
            kind="chunk",
            ref_id=chunk_key(chat_id, level, first),
            chat_id=chat_id,
            created=created,
            body=body,
        )
        for chat_id, level, first, created, body in chunks
    ]
    for doc in docs:
        counts.update(doc.terms)
    if docs:
        _insert_rows(conn, docs)
    n_docs += len(docs)
    deltas = {("", term): count for term, count in counts.items()}
    if n_docs:
        deltas[("", "")] = n_docs
    _apply_df(conn, deltas)
    if n_docs:
        log.info(
            "recall index built: %d turns and %d chunk summaries, %d terms, in %.1f s",
            n_docs - len(docs),
            len(docs),
            len(counts),
            time.perf_counter() - started,
        )
    return n_docs


def record_reply(record: str) -> str:
    """The final reply of a turn's stored record (JSON text); "" when it has none."""
    try:
        replies = json.loads(record).get("replies") or []
        return final_reply((str(r.get("text", "")), bool(r.get("done"))) for r in replies)
    except (ValueError, TypeError, AttributeError):
        return ""
