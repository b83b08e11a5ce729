"""Tables of the agent database (SQLAlchemy Core): the LATEST schema, for queries only.

The schema itself is created and evolved by :mod:`jupyter_agent.store.migrations`, never by
``METADATA.create_all``: these tables must describe exactly what the migrations build (a
test reflects a migrated database and compares column and index names). Core, not the
ORM: the store reads rows and writes statements, and SQLModel and the ORM cost the
server's start about 0.13 s of imports.

Tables:

``chats``
    one row per chat; ``updated`` is bumped by every turn and by ``touch_chat``.
``agent_turns``
    one row per turn. ``record`` holds ``TurnRecord.to_json()`` as JSON text and is what
    reads return (so every field, including fingerprint keys beyond ``system`` and
    ``identity``, round-trips exactly). The other columns are a projection of the same
    record, written in the same statement, for SQL queries (costs, stop reasons, ...).
    ``run_id`` is unique: one turn per run. Deleting a chat deletes its turns.
``agent_runs``
    one summary per run (:class:`jupyter_agent.core.turns.RunSummary`), flat columns. No
    foreign key to ``chats``: traces outlive chats, so a deleted chat's runs stay listed
    with their (now dangling) ``chat_id``.
``agent_mail``
    the durable mailbox: one row per user message acknowledged and not yet held by a
    stored turn (``item`` is the mailbox item as JSON text). No foreign key: deleting a
    chat deletes its mail explicitly.
``agent_chunks``
    one stored summary per (chat, level, first turn position) (since v4; see
    :mod:`jupyter_agent.core.history.chunks`): the first write wins, a chunk's content never
    changes. Deleting a chat deletes its chunks (explicitly, and by the foreign key).
``agent_memories``
    one stored fact per row (since v5; :class:`jupyter_agent.core.memory.records.Memory`), scoped
    by ``owner`` ("" = the server's user). ``chat_id``/``run_id`` say where it was saved;
    no foreign key: a fact outlives its chat.
``agent_recall_docs``
    the recall index (since v5): one doc per memory, turn and chunk summary (``kind``,
    ``ref_id`` = the memory id, the turn id, or the chunk key ``{chat}:{level}:{first}``),
    its ``terms`` (:func:`jupyter_agent.core.memory.terms.terms`, space-joined) and their
    count. Full-text search over ``terms``: on SQLite the FTS5 external-content table
    ``agent_recall_fts`` (kept in sync by triggers), on PostgreSQL the generated
    ``tsv`` column (not in this model: PostgreSQL computes it) and its GIN index.
``agent_recall_df``
    per owner, how many docs hold each term (``df``), and the owner's doc count in the row
    whose ``term`` is "" (no term is empty): the numbers recall's idf needs, exact and read
    by primary key, kept by the transactions that write docs.
``agent_recall_suppressed``
    the runs whose turn must not be recalled (since v5): deleting a memory deletes the
    doc of the turn its run stored, and records the run here so a turn stored later
    (the fact was forgotten mid-run) gets no doc.
``agent_recall_pending``
    the stored turns waiting for their recall doc (since v16), by ``seq`` (the order they
    were stored, the order their docs are written in): ``append_turn`` adds the row, the
    Store's indexer writes the doc and deletes the row in one transaction.
``agent_memory_vectors``
    one embedding per memory (since v5; JSON list of floats), deleted with its memory.
``agent_programs``
    one row per deployed program version (since v6): ``name`` (the family), ``version``
    (global per family, after the built-in ones), ``hash`` (the full sha256 of the files),
    ``files`` (JSON ``{path: text}``), ``entry`` (the entry module), ``uses`` (JSON list of
    ``name@vN``), ``description``, ``created``, ``created_by``. Immutable: never updated.
``agent_program_activations``
    one row per activation (since v6): ``agent`` ("" = the server-wide layer), ``name``,
    ``version`` (None: clear this layer's override), ``at``, ``by``. The newest row (by
    ``id``) of a layer and family wins; ``MAX(id)`` says whether anything changed.
``agent_proposals``
    one row per notebook proposal (since v7): ``id`` (``p`` + a ULID), ``owner``,
    ``chat_id``/``run_id``/``cell_id`` (the run and cell that proposed it), ``path`` (a
    contents path), ``edits`` (JSON list of edit JSON), ``status`` (``pending``,
    ``applied``, ``partly``, ``discarded``, ``conflict``, ``undone``), ``applied`` (JSON list
    of the cell ids applied), ``undo`` (JSON inverse edits), ``via`` (``contents`` or
    ``live``, once applied), ``created``, ``updated``.
``agent_settings``
    a user's tier overrides (since v9): ``owner`` (primary key; "" = the server's user),
    ``tiers`` (JSON ``{tier: {...}}``), ``updated``.
``schema_version``
    one row per applied migration; the schema's version is ``MAX(version)``.
"""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
    UniqueConstraint,
)

__all__ = [
    "CHATS",
    "CHUNKS",
    "MAIL",
    "MEMORIES",
    "MEMORY_VECTORS",
    "METADATA",
    "PROGRAMS",
    "PROGRAM_ACTIVATIONS",
    "PROPOSALS",
    "RECALL_DF",
    "RECALL_DOCS",
    "RECALL_PENDING",
    "RECALL_SUPPRESSED",
    "RUNS",
    "SCHEMA_VERSION",
    "SETTINGS",
    "TURNS",
]

#: Every table below.
METADATA: Final = MetaData()


def _text(name: str, *, nullable: bool = False) -> Column[Any]:
    return Column(name, Text, nullable=nullable)


def _int(name: str, kind: Any = Integer) -> Column[Any]:
    return Column(name, kind, nullable=False)


def _usage() -> list[Column[Any]]:
    """A Usage flattened (:mod:`jupyter_agent.store.rows`), in turns and runs alike."""
    names = ("usage_in", "usage_out", "usage_cache_read", "usage_cache_write", "usage_reasoning")
    return [_int(name, BigInteger) for name in names]


def _serial(name: str, **kwargs: Any) -> Column[Any]:
    """An integer primary key the database numbers. INTEGER on SQLite: only "INTEGER
    PRIMARY KEY" is the rowid (the one the FTS5 table indexes)."""
    return Column(name, BigInteger().with_variant(Integer, "sqlite"), primary_key=True, **kwargs)


#: id, title, created, updated (ISO-8601 UTC ``Z`` strings), active run, agent (since v6),
#: owner (since v9), ``forked_from`` (``{"chat_id", "turn"}`` JSON of a chat forked from
#: another, since v13) and ``model`` (the model this chat's runs answer with, over its
#: agent's codegen tier: a tier name or a model name, since v14; see
#: ``runtime/runs/run_configs.chat_model``).
CHATS: Final = Table(
    "chats",
    METADATA,
    Column("id", Text, primary_key=True),
    _text("title"),
    _text("created"),
    _text("updated"),
    _text("active_run_id", nullable=True),
    _text("agent"),
    _text("owner"),
    _text("forked_from", nullable=True),
    _text("model", nullable=True),
    Index("ix_chats_updated", "updated", "id"),
    Index("ix_chats_owner_updated", "owner", "updated", "id"),
)

#: ``record`` (JSON) is authoritative; the rest is a query projection (``end_cause`` since v2).
TURNS: Final = Table(
    "agent_turns",
    METADATA,
    Column("id", Text, primary_key=True),
    Column("chat_id", Text, ForeignKey("chats.id", ondelete="CASCADE"), nullable=False),
    Column("run_id", Text, nullable=False, unique=True),
    _text("user_text"),
    _text("created"),
    Column("interrupted", Boolean, nullable=False),
    _text("from_agent"),
    _int("duration_ms", BigInteger),
    _text("model", nullable=True),
    _text("stop_reason"),
    _text("end_cause", nullable=True),
    _int("model_calls"),
    _int("cells"),
    *_usage(),
    Column("cost", Float, nullable=True),
    _text("fingerprint_system", nullable=True),
    _text("fingerprint_identity", nullable=True),
    _text("record"),
    Index("ix_agent_turns_chat", "chat_id", "created", "id"),
)

#: One :class:`RunSummary` per run, newest-first listing by index (``end_cause`` and the
#: status index since v2, ``programs`` (JSON list of refs) and ``agent`` since v6,
#: ``owner`` since v9, ``rerun_of`` (the run a rerun re-ran; NULL: a run of its chat)
#: since v15).
RUNS: Final = Table(
    "agent_runs",
    METADATA,
    Column("run_id", Text, primary_key=True),
    _text("chat_id"),
    _text("program"),
    _text("status"),
    _text("started"),
    _text("ended", nullable=True),
    _text("model", nullable=True),
    _int("model_calls"),
    _int("cells"),
    *_usage(),
    Column("cost", Float, nullable=True),
    _text("stop_reason", nullable=True),
    _text("end_cause", nullable=True),
    _text("programs"),
    _text("agent"),
    _text("owner"),
    _text("rerun_of", nullable=True),
    Index("ix_agent_runs_program_started", "program", "started", "run_id"),
    Index("ix_agent_runs_started", "started", "run_id"),
    Index("ix_agent_runs_status", "status", "started"),
    Index("ix_agent_runs_owner_started", "owner", "started", "run_id"),
)

#: A queued user message (since v3).
MAIL: Final = Table(
    "agent_mail",
    METADATA,
    Column("id", Text, primary_key=True),
    _text("chat_id"),
    _text("created"),
    _text("item"),
    Index("ix_agent_mail_chat", "chat_id", "created", "id"),
)

#: A summary of turns ``first_turn``..``last_turn`` at ``level``.
CHUNKS: Final = Table(
    "agent_chunks",
    METADATA,
    Column("id", Text, primary_key=True),
    Column("chat_id", Text, ForeignKey("chats.id", ondelete="CASCADE"), nullable=False),
    _int("level"),
    _int("first_turn"),
    _int("last_turn"),
    _text("text"),
    _text("run_id"),
    _text("model", nullable=True),
    _text("created"),
    UniqueConstraint("chat_id", "level", "first_turn", name="uq_agent_chunks_span"),
    Index("ix_agent_chunks_chat", "chat_id", "level", "last_turn"),
)

#: One fact (since v5).
MEMORIES: Final = Table(
    "agent_memories",
    METADATA,
    Column("id", Text, primary_key=True),
    _text("owner"),
    _text("category"),
    _text("text"),
    _text("chat_id", nullable=True),
    _text("run_id", nullable=True),
    _text("author"),
    _text("created"),
    _text("updated"),
    Index("ix_agent_memories_category", "owner", "category", "updated"),
    Index("ix_agent_memories_updated", "owner", "updated"),
)

#: One doc of the recall index (since v5).
RECALL_DOCS: Final = Table(
    "agent_recall_docs",
    METADATA,
    _serial("doc_id", autoincrement=True),
    _text("owner"),
    _text("kind"),
    _text("ref_id"),
    _text("chat_id", nullable=True),
    _text("created"),
    _text("terms"),
    _int("n_terms"),
    UniqueConstraint("kind", "ref_id", name="uq_agent_recall_docs_ref"),
    Index("ix_agent_recall_docs_chat", "chat_id"),
)

#: Docs per (owner, term); term "" holds the owner's doc count.
RECALL_DF: Final = Table(
    "agent_recall_df",
    METADATA,
    Column("owner", Text, primary_key=True),
    Column("term", Text, primary_key=True),
    _int("df", BigInteger),
)

#: A run whose turn is not indexed (a memory it saved was deleted; since v5).
RECALL_SUPPRESSED: Final = Table(
    "agent_recall_suppressed",
    METADATA,
    Column("run_id", Text, primary_key=True),
)

#: A stored turn waiting for its recall doc (since v16; the indexer deletes the row when
#: it writes the doc).
RECALL_PENDING: Final = Table(
    "agent_recall_pending",
    METADATA,
    _serial("seq", autoincrement=True),
    Column("turn_id", Text, nullable=False, unique=True),
)

#: A memory's embedding by ``model`` (since v5).
MEMORY_VECTORS: Final = Table(
    "agent_memory_vectors",
    METADATA,
    Column(
        "memory_id", Text, ForeignKey("agent_memories.id", ondelete="CASCADE"), primary_key=True
    ),
    _text("model"),
    _int("dim"),
    _text("vector"),
)

#: One deployed version of a program (since v6).
PROGRAMS: Final = Table(
    "agent_programs",
    METADATA,
    Column("name", Text, primary_key=True),
    Column("version", Integer, primary_key=True, autoincrement=False),
    _text("hash"),
    _text("files"),
    _text("entry"),
    _text("uses"),
    _text("description"),
    _text("created"),
    _text("created_by"),
    UniqueConstraint("name", "hash", name="uq_agent_programs_hash"),
)

#: One activation of a version for a layer (since v6).
PROGRAM_ACTIVATIONS: Final = Table(
    "agent_program_activations",
    METADATA,
    _serial("id"),
    _text("agent"),
    _text("name"),
    Column("version", Integer, nullable=True),
    _text("at"),
    _text("by"),
    Index("ix_agent_program_activations_layer", "agent", "name", "id"),
)

#: Edits the agent proposed to a notebook (since v7).
PROPOSALS: Final = Table(
    "agent_proposals",
    METADATA,
    Column("id", Text, primary_key=True),
    *(_text(name) for name in ("owner", "chat_id", "run_id", "cell_id", "path", "edits")),
    *(_text(name) for name in ("status", "applied", "undo", "via", "created", "updated")),
    Index("ix_agent_proposals_chat", "chat_id", "created"),
    Index("ix_agent_proposals_run", "run_id"),
)

#: One row per applied migration (version, ISO time applied).
SCHEMA_VERSION: Final = Table(
    "schema_version",
    METADATA,
    Column("version", Integer, primary_key=True, autoincrement=False),
    _text("applied"),
)

#: One owner's tier overrides (since v9).
SETTINGS: Final = Table(
    "agent_settings",
    METADATA,
    Column("owner", Text, primary_key=True),
    _text("tiers"),
    _text("updated"),
)
