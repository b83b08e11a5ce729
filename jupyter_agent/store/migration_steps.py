"""The steps of the agent database's schema, one function per version (``v1`` .. ``v9``).

:mod:`jupyter_agent.store.migrations` lists them in :data:`~.migrations.MIGRATIONS` and
applies each in the write transaction that records it. Steps are written in portable SQL
(TEXT, INTEGER, BIGINT, BOOLEAN, DOUBLE PRECISION), never derived from the current table
models, so an old step keeps building the old schema; a step's data part (a backfill, a
renumbering) uses today's code.

History:

1. the first schema: ``chats``, ``agent_turns``, ``agent_runs`` (with the newest-first
   indexes), ``schema_version``.
2. ``end_cause`` on ``agent_turns`` and ``agent_runs`` (why a run ended, beside its stop
   reason), backfilled from each turn's stored record; an index on ``agent_runs.status``
   for crash recovery's "runs left running" query.
3. ``agent_mail``: the durable mailbox (a user message is stored before it is
   acknowledged, and deleted in the transaction that stores the turn holding it).
4. ``agent_chunks``: the stored summaries of chunks of a chat's turns, one per
   (chat, level, first turn), deleted with their chat.
5. memory and recall: ``agent_memories`` (facts), ``agent_recall_docs`` (the
   recall index: one doc per memory, turn and chunk, full-text searchable: a contentless
   FTS5 table with a column per kind, kept by triggers, on SQLite; a generated
   ``tsvector`` with a GIN index on PostgreSQL), ``agent_recall_df`` (docs per term and per owner),
   ``agent_recall_suppressed`` (runs whose turn is not indexed: a fact they saved was
   forgotten), ``agent_memory_vectors``; every stored turn and chunk gets its doc (backfill).
6. programs and agents: ``agent_programs`` (deployed versions, immutable, unique
   per (name, version) and per (name, hash)), ``agent_program_activations`` (which version
   each layer runs, newest row wins), ``agent`` on ``chats`` (the agent a chat
   talks to), ``programs`` (JSON list of refs) and ``agent`` on ``agent_runs``.
7. notebook proposals: ``agent_proposals`` (edits the agent proposed to a
   notebook, their status, what was applied and how to undo it). Data step: deployed
   versions whose number is now built in (``toolcaller@v5``) move to the next free numbers
   of their family, their activations and the runs naming them (by hash) following
   (:func:`~jupyter_agent.store.program_renumber.renumber_shadowed`; idempotent).
8. MCP, a data step only: ``toolcaller@v6`` is built in now, so a deployed
   ``toolcaller@v6`` moves to the next free number (``renumber_shadowed`` again).
9. owners: ``owner`` (TEXT, default "" = the server's user) on ``chats`` and
   ``agent_runs`` with the indexes ``(owner, updated, id)`` / ``(owner, started, run_id)``
   its listings use; ``agent_settings`` (a user's tier overrides, one row per owner).
10. a data step only: ``toolcaller@v7`` is built in now (one config read at a turn's
   start), so a deployed ``toolcaller@v7`` moves to the next free number
   (``renumber_shadowed`` again).
11. a data step only: the recall documents of turns the demo model answered are removed.
12. a data step only: ``toolcaller@v8`` is built in now (the look at the person's kernel),
   so a deployed ``toolcaller@v8`` moves to the next free number (``renumber_shadowed``).
13. forks: ``forked_from`` (TEXT, NULL: ``{"chat_id", "turn"}`` as JSON) on ``chats``.
14. a chat's model: ``model`` (TEXT, NULL: the agent's codegen tier) on ``chats``.
15. reruns: ``rerun_of`` (TEXT, NULL: a run of its chat) on ``agent_runs``.
16. ``agent_recall_pending``: stored turns waiting for their recall doc, in the order they
   were stored (``seq``; written after the turn by the Store's indexer in that order, so
   doc ids keep following the turns: :mod:`jupyter_agent.store.memory.recall_queue`).
"""

from __future__ import annotations

import json
from typing import Final

from sqlalchemy import text
from sqlalchemy.engine import Connection

__all__ = [
    "v1",
    "v2",
    "v3",
    "v4",
    "v5",
    "v6",
    "v7",
    "v8",
    "v9",
    "v10",
    "v11",
    "v12",
    "v13",
    "v14",
    "v15",
    "v16",
]


_V1_SQL: Final = (
    """CREATE TABLE chats (
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        created TEXT NOT NULL,
        updated TEXT NOT NULL,
        active_run_id TEXT
    )""",
    "CREATE INDEX ix_chats_updated ON chats (updated, id)",
    """CREATE TABLE agent_turns (
        id TEXT PRIMARY KEY,
        chat_id TEXT NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
        run_id TEXT NOT NULL UNIQUE,
        user_text TEXT NOT NULL,
        created TEXT NOT NULL,
        interrupted BOOLEAN NOT NULL,
        from_agent TEXT NOT NULL,
        duration_ms BIGINT NOT NULL,
        model TEXT,
        stop_reason TEXT NOT NULL,
        model_calls INTEGER NOT NULL,
        cells INTEGER NOT NULL,
        usage_in BIGINT NOT NULL,
        usage_out BIGINT NOT NULL,
        usage_cache_read BIGINT NOT NULL,
        usage_cache_write BIGINT NOT NULL,
        usage_reasoning BIGINT NOT NULL,
        cost DOUBLE PRECISION,
        fingerprint_system TEXT,
        fingerprint_identity TEXT,
        record TEXT NOT NULL
    )""",
    "CREATE INDEX ix_agent_turns_chat ON agent_turns (chat_id, created, id)",
    """CREATE TABLE agent_runs (
        run_id TEXT PRIMARY KEY,
        chat_id TEXT NOT NULL,
        program TEXT NOT NULL,
        status TEXT NOT NULL,
        started TEXT NOT NULL,
        ended TEXT,
        model TEXT,
        model_calls INTEGER NOT NULL,
        cells INTEGER NOT NULL,
        usage_in BIGINT NOT NULL,
        usage_out BIGINT NOT NULL,
        usage_cache_read BIGINT NOT NULL,
        usage_cache_write BIGINT NOT NULL,
        usage_reasoning BIGINT NOT NULL,
        cost DOUBLE PRECISION,
        stop_reason TEXT
    )""",
    "CREATE INDEX ix_agent_runs_program_started ON agent_runs (program, started, run_id)",
    "CREATE INDEX ix_agent_runs_started ON agent_runs (started, run_id)",
)


def v1(conn: Connection) -> None:
    for statement in _V1_SQL:
        conn.execute(text(statement))


def v2(conn: Connection) -> None:
    conn.execute(text("ALTER TABLE agent_turns ADD COLUMN end_cause TEXT"))
    conn.execute(text("ALTER TABLE agent_runs ADD COLUMN end_cause TEXT"))
    # Backfill in Python: JSON functions differ between SQLite and PostgreSQL.
    rows = conn.execute(text("SELECT id, record FROM agent_turns")).all()
    updates = []
    for turn_id, record in rows:
        try:
            cause = json.loads(record)["llm"].get("endCause")
        except (ValueError, KeyError, TypeError, AttributeError):
            cause = None
        if cause is not None:
            updates.append({"id": turn_id, "cause": cause})
    if updates:
        conn.execute(text("UPDATE agent_turns SET end_cause = :cause WHERE id = :id"), updates)
    conn.execute(
        text(
            "UPDATE agent_runs SET end_cause = (SELECT t.end_cause FROM agent_turns t"
            " WHERE t.run_id = agent_runs.run_id) WHERE end_cause IS NULL"
        )
    )
    conn.execute(text("CREATE INDEX ix_agent_runs_status ON agent_runs (status, started)"))


_V3_SQL: Final = (
    """CREATE TABLE agent_mail (
        id TEXT PRIMARY KEY,
        chat_id TEXT NOT NULL,
        created TEXT NOT NULL,
        item TEXT NOT NULL
    )""",
    "CREATE INDEX ix_agent_mail_chat ON agent_mail (chat_id, created, id)",
)


def v3(conn: Connection) -> None:
    for statement in _V3_SQL:
        conn.execute(text(statement))


_V4_SQL: Final = (
    """CREATE TABLE agent_chunks (
        id TEXT PRIMARY KEY,
        chat_id TEXT NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
        level INTEGER NOT NULL,
        first_turn INTEGER NOT NULL,
        last_turn INTEGER NOT NULL,
        text TEXT NOT NULL,
        run_id TEXT NOT NULL,
        model TEXT,
        created TEXT NOT NULL,
        CONSTRAINT uq_agent_chunks_span UNIQUE (chat_id, level, first_turn)
    )""",
    "CREATE INDEX ix_agent_chunks_chat ON agent_chunks (chat_id, level, last_turn)",
)


def v4(conn: Connection) -> None:
    for statement in _V4_SQL:
        conn.execute(text(statement))


_V5_SQL: Final = (
    """CREATE TABLE agent_memories (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        category TEXT NOT NULL,
        text TEXT NOT NULL,
        chat_id TEXT,
        run_id TEXT,
        author TEXT NOT NULL,
        created TEXT NOT NULL,
        updated TEXT NOT NULL
    )""",
    "CREATE INDEX ix_agent_memories_category ON agent_memories (owner, category, updated)",
    "CREATE INDEX ix_agent_memories_updated ON agent_memories (owner, updated)",
    """CREATE TABLE agent_recall_docs (
        doc_id {doc_id},
        owner TEXT NOT NULL,
        kind TEXT NOT NULL,
        ref_id TEXT NOT NULL,
        chat_id TEXT,
        created TEXT NOT NULL,
        terms TEXT NOT NULL,
        n_terms INTEGER NOT NULL,
        CONSTRAINT uq_agent_recall_docs_ref UNIQUE (kind, ref_id){tsv}
    )""",
    "CREATE INDEX ix_agent_recall_docs_chat ON agent_recall_docs (chat_id)",
    # WITHOUT ROWID on SQLite: one B-tree, not a table and its key index, so a turn's ~100
    # count updates dirty half the pages (each one journaled and written at commit).
    """CREATE TABLE agent_recall_df (
        owner TEXT NOT NULL,
        term TEXT NOT NULL,
        df BIGINT NOT NULL,
        PRIMARY KEY (owner, term)
    ){without_rowid}""",
    "CREATE TABLE agent_recall_suppressed (run_id TEXT PRIMARY KEY)",
    """CREATE TABLE agent_memory_vectors (
        memory_id TEXT PRIMARY KEY REFERENCES agent_memories (id) ON DELETE CASCADE,
        model TEXT NOT NULL,
        dim INTEGER NOT NULL,
        vector TEXT NOT NULL
    )""",
)
# The terms go into the full-text index verbatim on both backends (they are already
# normalised, stemmed tokens): the same terms, the same matches. SQLite: a contentless FTS5
# table (the terms are in agent_recall_docs) with one column per kind, so a kind's newest
# matches are read from the index alone (``memory : ("t1" OR "t2")``); the triggers give
# it exactly what they gave it at insert when a doc changes or goes.
_FTS_VALUES: Final = (
    "CASE {r}.kind WHEN 'memory' THEN {r}.terms ELSE '' END,"
    " CASE {r}.kind WHEN 'chunk' THEN {r}.terms ELSE '' END,"
    " CASE {r}.kind WHEN 'turn' THEN {r}.terms ELSE '' END"
)
_FTS_INSERT: Final = (
    "INSERT INTO agent_recall_fts (rowid, memory, chunk, turn) VALUES (new.doc_id, "
    + _FTS_VALUES.format(r="new")
    + ");"
)
_FTS_DELETE: Final = (
    "INSERT INTO agent_recall_fts (agent_recall_fts, rowid, memory, chunk, turn)"
    " VALUES ('delete', old.doc_id, " + _FTS_VALUES.format(r="old") + ");"
)
_V5_SQLITE: Final = (
    """CREATE VIRTUAL TABLE agent_recall_fts USING fts5(memory, chunk, turn, content='',
        tokenize="unicode61 remove_diacritics 0")""",
    f"CREATE TRIGGER agent_recall_docs_ai AFTER INSERT ON agent_recall_docs BEGIN"
    f" {_FTS_INSERT} END",
    f"CREATE TRIGGER agent_recall_docs_ad AFTER DELETE ON agent_recall_docs BEGIN"
    f" {_FTS_DELETE} END",
    f"CREATE TRIGGER agent_recall_docs_au AFTER UPDATE OF kind, terms ON agent_recall_docs"
    f" BEGIN {_FTS_DELETE} {_FTS_INSERT} END",
)
# PostgreSQL: one GIN index over every doc, and one each over the memories and the chunk
# summaries (a tenth of the docs or less), so a kind's matches are read without wading
# through the turns' (recall_queries.py).
_V5_PG: Final = (
    "CREATE INDEX gin_agent_recall_docs_tsv ON agent_recall_docs USING GIN (tsv)",
    "CREATE INDEX gin_agent_recall_docs_memory ON agent_recall_docs USING GIN (tsv)"
    " WHERE kind = 'memory'",
    "CREATE INDEX gin_agent_recall_docs_chunk ON agent_recall_docs USING GIN (tsv)"
    " WHERE kind = 'chunk'",
)


def v5(conn: Connection) -> None:
    pg = conn.dialect.name == "postgresql"
    doc_id = (
        "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"
        if pg
        else "INTEGER PRIMARY KEY AUTOINCREMENT"
    )
    tsv = (
        ",\n        tsv tsvector GENERATED ALWAYS AS"
        " (array_to_tsvector(string_to_array(terms, ' '))) STORED"
        if pg
        else ""
    )
    for statement in _V5_SQL:
        statement = statement.replace("{doc_id}", doc_id).replace("{tsv}", tsv)
        statement = statement.replace("{without_rowid}", "" if pg else " WITHOUT ROWID")
        conn.execute(text(statement))
    for statement in _V5_PG if pg else _V5_SQLITE:
        conn.execute(text(statement))
    # Imported here: the backfill uses today's terms (a later change of them is a later
    # step that rebuilds the docs), the DDL above never changes.
    from jupyter_agent.store.memory.recall_index import backfill

    backfill(conn)


_V6_SQL: Final = (
    """CREATE TABLE agent_programs (
        name TEXT NOT NULL,
        version INTEGER NOT NULL,
        hash TEXT NOT NULL,
        files TEXT NOT NULL,
        entry TEXT NOT NULL,
        uses TEXT NOT NULL,
        description TEXT NOT NULL,
        created TEXT NOT NULL,
        created_by TEXT NOT NULL,
        PRIMARY KEY (name, version),
        CONSTRAINT uq_agent_programs_hash UNIQUE (name, hash)
    )""",
    """CREATE TABLE agent_program_activations (
        id {id},
        agent TEXT NOT NULL,
        name TEXT NOT NULL,
        version INTEGER,
        at TEXT NOT NULL,
        by TEXT NOT NULL
    )""",
    "CREATE INDEX ix_agent_program_activations_layer ON agent_program_activations"
    " (agent, name, id)",
    "ALTER TABLE chats ADD COLUMN agent TEXT NOT NULL DEFAULT 'agent'",
    "ALTER TABLE agent_runs ADD COLUMN programs TEXT NOT NULL DEFAULT '[]'",
    "ALTER TABLE agent_runs ADD COLUMN agent TEXT NOT NULL DEFAULT 'agent'",
)


def v6(conn: Connection) -> None:
    pg = conn.dialect.name == "postgresql"
    ident = "BIGSERIAL PRIMARY KEY" if pg else "INTEGER PRIMARY KEY AUTOINCREMENT"
    for statement in _V6_SQL:
        conn.execute(text(statement.replace("{id}", ident)))


_V7_SQL: Final = (
    """CREATE TABLE agent_proposals (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        chat_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        cell_id TEXT NOT NULL,
        path TEXT NOT NULL,
        edits TEXT NOT NULL,
        status TEXT NOT NULL,
        applied TEXT NOT NULL,
        undo TEXT NOT NULL,
        via TEXT NOT NULL,
        created TEXT NOT NULL,
        updated TEXT NOT NULL
    )""",
    "CREATE INDEX ix_agent_proposals_chat ON agent_proposals (chat_id, created)",
    "CREATE INDEX ix_agent_proposals_run ON agent_proposals (run_id)",
)


def v7(conn: Connection) -> None:
    for statement in _V7_SQL:
        conn.execute(text(statement))
    # The data step: today's built-in versions (like v5's backfill uses today's terms).
    from jupyter_agent.programs.builtin import BUILTIN
    from jupyter_agent.store.program_renumber import renumber_shadowed

    renumber_shadowed(conn, BUILTIN)


def v8(conn: Connection) -> None:
    # Only the data step: the built-in toolcaller@v6 shadows a deployed v6 (see v7).
    from jupyter_agent.programs.builtin import BUILTIN
    from jupyter_agent.store.program_renumber import renumber_shadowed

    renumber_shadowed(conn, BUILTIN)


_V9_SQL: Final = (
    "ALTER TABLE chats ADD COLUMN owner TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE agent_runs ADD COLUMN owner TEXT NOT NULL DEFAULT ''",
    "CREATE INDEX ix_chats_owner_updated ON chats (owner, updated, id)",
    "CREATE INDEX ix_agent_runs_owner_started ON agent_runs (owner, started, run_id)",
    """CREATE TABLE agent_settings (
        owner TEXT PRIMARY KEY,
        tiers TEXT NOT NULL,
        updated TEXT NOT NULL
    )""",
)


def v9(conn: Connection) -> None:
    for statement in _V9_SQL:
        conn.execute(text(statement))


def v10(conn: Connection) -> None:
    # Only the data step: the built-in toolcaller@v7 shadows a deployed v7 (see v7).
    from jupyter_agent.programs.builtin import BUILTIN
    from jupyter_agent.store.program_renumber import renumber_shadowed

    renumber_shadowed(conn, BUILTIN)


def v11(conn: Connection) -> None:
    # Only data: turns the demo model answered leave the recall index (its scripted text
    # was recalled into other chats as if a model had said it); new ones are never added.
    from jupyter_agent.core.demo import DEMO_MODEL
    from jupyter_agent.store.memory.recall_index import delete_turn_docs_of_model

    delete_turn_docs_of_model(conn, DEMO_MODEL)


def v12(conn: Connection) -> None:
    # Only the data step: the built-in toolcaller@v8 shadows a deployed v8 (see v7).
    from jupyter_agent.programs.builtin import BUILTIN
    from jupyter_agent.store.program_renumber import renumber_shadowed

    renumber_shadowed(conn, BUILTIN)


def v13(conn: Connection) -> None:
    conn.execute(text("ALTER TABLE chats ADD COLUMN forked_from TEXT"))


def v14(conn: Connection) -> None:
    conn.execute(text("ALTER TABLE chats ADD COLUMN model TEXT"))


def v15(conn: Connection) -> None:
    conn.execute(text("ALTER TABLE agent_runs ADD COLUMN rerun_of TEXT"))


def v16(conn: Connection) -> None:
    pg = conn.dialect.name == "postgresql"
    seq = "BIGINT GENERATED BY DEFAULT AS IDENTITY" if pg else "INTEGER"
    pending = f"seq {seq} PRIMARY KEY{'' if pg else ' AUTOINCREMENT'}, turn_id TEXT NOT NULL UNIQUE"
    conn.execute(text(f"CREATE TABLE agent_recall_pending ({pending})"))
