"""Table models of the agent database (sqlmodel): the LATEST schema, for queries only.

The schema itself is created and evolved by :mod:`jupyter_agent.store.migrations`, never by
``SQLModel.metadata.create_all``: these classes must describe exactly what the migrations
build (a test reflects a migrated database and compares column and index names).

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

from sqlalchemy import BigInteger, Column, Float, ForeignKey, Index, Integer, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

__all__ = [
    "AgentChunkRow",
    "AgentMailRow",
    "AgentMemoryRow",
    "AgentMemoryVectorRow",
    "AgentProgramActivationRow",
    "AgentProgramRow",
    "AgentProposalRow",
    "AgentRecallDfRow",
    "AgentRecallDocRow",
    "AgentRecallPendingRow",
    "AgentRecallSuppressedRow",
    "AgentRunRow",
    "AgentSettingsRow",
    "AgentTurnRow",
    "ChatRow",
    "SchemaVersionRow",
]


def _text(*, nullable: bool = False, index: bool = False) -> Column[str]:
    return Column(Text, nullable=nullable, index=index)


class ChatRow(SQLModel, table=True):
    """``chats``: id, title, created, updated (ISO-8601 UTC ``Z`` strings), active run,
    agent, owner, the chat and turn it was forked from, and its model override."""

    __tablename__ = "chats"
    __table_args__ = (
        Index("ix_chats_updated", "updated", "id"),
        Index("ix_chats_owner_updated", "owner", "updated", "id"),  # since v9
    )

    id: str = Field(sa_column=Column(Text, primary_key=True))
    title: str = Field(sa_column=_text())
    created: str = Field(sa_column=_text())
    updated: str = Field(sa_column=_text())
    active_run_id: str | None = Field(default=None, sa_column=_text(nullable=True))
    agent: str = Field(default="agent", sa_column=_text())  # since v6
    owner: str = Field(default="", sa_column=_text())  # since v9
    #: ``{"chat_id", "turn"}`` (JSON) of a chat forked from another (since v13).
    forked_from: str | None = Field(default=None, sa_column=_text(nullable=True))
    #: The model this chat's runs answer with, over its agent's codegen tier (since v14):
    #: a tier name or a model name (see ``runtime/runs/run_configs.chat_model``).
    model: str | None = Field(default=None, sa_column=_text(nullable=True))


class AgentTurnRow(SQLModel, table=True):
    """``agent_turns``: ``record`` (JSON) is authoritative; the rest is a query projection."""

    __tablename__ = "agent_turns"
    __table_args__ = (Index("ix_agent_turns_chat", "chat_id", "created", "id"),)

    id: str = Field(sa_column=Column(Text, primary_key=True))
    chat_id: str = Field(
        sa_column=Column(Text, ForeignKey("chats.id", ondelete="CASCADE"), nullable=False)
    )
    run_id: str = Field(sa_column=Column(Text, nullable=False, unique=True))
    user_text: str = Field(sa_column=_text())
    created: str = Field(sa_column=_text())
    interrupted: bool
    from_agent: str = Field(sa_column=_text())
    duration_ms: int = Field(sa_type=BigInteger)
    model: str | None = Field(default=None, sa_column=_text(nullable=True))
    stop_reason: str = Field(sa_column=_text())
    end_cause: str | None = Field(default=None, sa_column=_text(nullable=True))  # since v2
    model_calls: int
    cells: int
    usage_in: int = Field(sa_type=BigInteger)
    usage_out: int = Field(sa_type=BigInteger)
    usage_cache_read: int = Field(sa_type=BigInteger)
    usage_cache_write: int = Field(sa_type=BigInteger)
    usage_reasoning: int = Field(sa_type=BigInteger)
    cost: float | None = Field(default=None, sa_column=Column(Float, nullable=True))
    fingerprint_system: str | None = Field(default=None, sa_column=_text(nullable=True))
    fingerprint_identity: str | None = Field(default=None, sa_column=_text(nullable=True))
    record: str = Field(sa_column=_text())


class AgentRunRow(SQLModel, table=True):
    """``agent_runs``: one :class:`RunSummary` per run, newest-first listing by index."""

    __tablename__ = "agent_runs"
    __table_args__ = (
        Index("ix_agent_runs_program_started", "program", "started", "run_id"),
        Index("ix_agent_runs_started", "started", "run_id"),
        Index("ix_agent_runs_status", "status", "started"),  # since v2
        Index("ix_agent_runs_owner_started", "owner", "started", "run_id"),  # since v9
    )

    run_id: str = Field(sa_column=Column(Text, primary_key=True))
    chat_id: str = Field(sa_column=_text())
    program: str = Field(sa_column=_text())
    status: str = Field(sa_column=_text())
    started: str = Field(sa_column=_text())
    ended: str | None = Field(default=None, sa_column=_text(nullable=True))
    model: str | None = Field(default=None, sa_column=_text(nullable=True))
    model_calls: int
    cells: int
    usage_in: int = Field(sa_type=BigInteger)
    usage_out: int = Field(sa_type=BigInteger)
    usage_cache_read: int = Field(sa_type=BigInteger)
    usage_cache_write: int = Field(sa_type=BigInteger)
    usage_reasoning: int = Field(sa_type=BigInteger)
    cost: float | None = Field(default=None, sa_column=Column(Float, nullable=True))
    stop_reason: str | None = Field(default=None, sa_column=_text(nullable=True))
    end_cause: str | None = Field(default=None, sa_column=_text(nullable=True))  # since v2
    programs: str = Field(default="[]", sa_column=_text())  # since v6: JSON list of refs
    agent: str = Field(default="agent", sa_column=_text())  # since v6
    owner: str = Field(default="", sa_column=_text())  # since v9
    #: The run a rerun re-ran (since v15; NULL: a run of its chat).
    rerun_of: str | None = Field(default=None, sa_column=_text(nullable=True))


class AgentMailRow(SQLModel, table=True):
    """``agent_mail``: a queued user message (since v3)."""

    __tablename__ = "agent_mail"
    __table_args__ = (Index("ix_agent_mail_chat", "chat_id", "created", "id"),)

    id: str = Field(sa_column=Column(Text, primary_key=True))
    chat_id: str = Field(sa_column=_text())
    created: str = Field(sa_column=_text())
    item: str = Field(sa_column=_text())


class AgentChunkRow(SQLModel, table=True):
    """``agent_chunks``: a summary of turns ``first_turn``..``last_turn`` at ``level``."""

    __tablename__ = "agent_chunks"
    __table_args__ = (
        UniqueConstraint("chat_id", "level", "first_turn", name="uq_agent_chunks_span"),
        Index("ix_agent_chunks_chat", "chat_id", "level", "last_turn"),
    )

    id: str = Field(sa_column=Column(Text, primary_key=True))
    chat_id: str = Field(
        sa_column=Column(Text, ForeignKey("chats.id", ondelete="CASCADE"), nullable=False)
    )
    level: int = Field(sa_column=Column(Integer, nullable=False))
    first_turn: int = Field(sa_column=Column(Integer, nullable=False))
    last_turn: int = Field(sa_column=Column(Integer, nullable=False))
    text: str = Field(sa_column=_text())
    run_id: str = Field(sa_column=_text())
    model: str | None = Field(default=None, sa_column=_text(nullable=True))
    created: str = Field(sa_column=_text())


class AgentMemoryRow(SQLModel, table=True):
    """``agent_memories``: one fact (since v5)."""

    __tablename__ = "agent_memories"
    __table_args__ = (
        Index("ix_agent_memories_category", "owner", "category", "updated"),
        Index("ix_agent_memories_updated", "owner", "updated"),
    )

    id: str = Field(sa_column=Column(Text, primary_key=True))
    owner: str = Field(sa_column=_text())
    category: str = Field(sa_column=_text())
    text: str = Field(sa_column=_text())
    chat_id: str | None = Field(default=None, sa_column=_text(nullable=True))
    run_id: str | None = Field(default=None, sa_column=_text(nullable=True))
    author: str = Field(sa_column=_text())
    created: str = Field(sa_column=_text())
    updated: str = Field(sa_column=_text())


class AgentRecallDocRow(SQLModel, table=True):
    """``agent_recall_docs``: one doc of the recall index (since v5)."""

    __tablename__ = "agent_recall_docs"
    __table_args__ = (
        UniqueConstraint("kind", "ref_id", name="uq_agent_recall_docs_ref"),
        Index("ix_agent_recall_docs_chat", "chat_id"),
    )

    # INTEGER on SQLite: only "INTEGER PRIMARY KEY" is the rowid the FTS5 table indexes.
    doc_id: int = Field(
        sa_column=Column(
            BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
        )
    )
    owner: str = Field(sa_column=_text())
    kind: str = Field(sa_column=_text())
    ref_id: str = Field(sa_column=_text())
    chat_id: str | None = Field(default=None, sa_column=_text(nullable=True))
    created: str = Field(sa_column=_text())
    terms: str = Field(sa_column=_text())
    n_terms: int = Field(sa_column=Column(Integer, nullable=False))


class AgentRecallDfRow(SQLModel, table=True):
    """``agent_recall_df``: docs per (owner, term); term "" holds the owner's doc count."""

    __tablename__ = "agent_recall_df"

    owner: str = Field(sa_column=Column(Text, primary_key=True))
    term: str = Field(sa_column=Column(Text, primary_key=True))
    df: int = Field(sa_column=Column(BigInteger, nullable=False))


class AgentRecallSuppressedRow(SQLModel, table=True):
    """``agent_recall_suppressed``: a run whose turn is not indexed (a memory it saved was
    deleted; since v5)."""

    __tablename__ = "agent_recall_suppressed"

    run_id: str = Field(sa_column=Column(Text, primary_key=True))


class AgentRecallPendingRow(SQLModel, table=True):
    """``agent_recall_pending``: a stored turn waiting for its recall doc (since v16; the
    indexer deletes the row when it writes the doc)."""

    __tablename__ = "agent_recall_pending"

    seq: int = Field(
        sa_column=Column(
            BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
        )
    )
    turn_id: str = Field(sa_column=Column(Text, nullable=False, unique=True))


class AgentMemoryVectorRow(SQLModel, table=True):
    """``agent_memory_vectors``: a memory's embedding by ``model`` (since v5)."""

    __tablename__ = "agent_memory_vectors"

    memory_id: str = Field(
        sa_column=Column(
            Text, ForeignKey("agent_memories.id", ondelete="CASCADE"), primary_key=True
        )
    )
    model: str = Field(sa_column=_text())
    dim: int = Field(sa_column=Column(Integer, nullable=False))
    vector: str = Field(sa_column=_text())


class AgentProgramRow(SQLModel, table=True):
    """``agent_programs``: one deployed version of a program (since v6)."""

    __tablename__ = "agent_programs"
    __table_args__ = (UniqueConstraint("name", "hash", name="uq_agent_programs_hash"),)

    name: str = Field(sa_column=Column(Text, primary_key=True))
    version: int = Field(sa_column=Column(Integer, primary_key=True, autoincrement=False))
    hash: str = Field(sa_column=_text())
    files: str = Field(sa_column=_text())
    entry: str = Field(sa_column=_text())
    uses: str = Field(sa_column=_text())
    description: str = Field(sa_column=_text())
    created: str = Field(sa_column=_text())
    created_by: str = Field(sa_column=_text())


class AgentProgramActivationRow(SQLModel, table=True):
    """``agent_program_activations``: one activation of a version for a layer (since v6)."""

    __tablename__ = "agent_program_activations"
    __table_args__ = (Index("ix_agent_program_activations_layer", "agent", "name", "id"),)

    id: int | None = Field(
        default=None,
        sa_column=Column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True),
    )
    agent: str = Field(sa_column=_text())
    name: str = Field(sa_column=_text())
    version: int | None = Field(default=None, sa_column=Column(Integer, nullable=True))
    at: str = Field(sa_column=_text())
    by: str = Field(sa_column=_text())


class AgentProposalRow(SQLModel, table=True):
    """``agent_proposals``: edits the agent proposed to a notebook (since v7)."""

    __tablename__ = "agent_proposals"
    __table_args__ = (
        Index("ix_agent_proposals_chat", "chat_id", "created"),
        Index("ix_agent_proposals_run", "run_id"),
    )

    id: str = Field(sa_column=Column(Text, primary_key=True))
    owner: str = Field(sa_column=_text())
    chat_id: str = Field(sa_column=_text())
    run_id: str = Field(sa_column=_text())
    cell_id: str = Field(sa_column=_text())
    path: str = Field(sa_column=_text())
    edits: str = Field(sa_column=_text())
    status: str = Field(sa_column=_text())
    applied: str = Field(sa_column=_text())
    undo: str = Field(sa_column=_text())
    via: str = Field(sa_column=_text())
    created: str = Field(sa_column=_text())
    updated: str = Field(sa_column=_text())


class SchemaVersionRow(SQLModel, table=True):
    """``schema_version``: one row per applied migration (version, ISO time applied)."""

    __tablename__ = "schema_version"

    version: int = Field(primary_key=True, sa_column_kwargs={"autoincrement": False})
    applied: str = Field(sa_column=_text())


class AgentSettingsRow(SQLModel, table=True):
    """``agent_settings``: one owner's tier overrides (since v9)."""

    __tablename__ = "agent_settings"

    owner: str = Field(sa_column=Column(Text, primary_key=True))
    tiers: str = Field(sa_column=_text())
    updated: str = Field(sa_column=_text())
