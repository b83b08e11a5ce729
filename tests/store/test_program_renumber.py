"""Package upgrades that make a deployed number built in, on SQLite and PostgreSQL.

- Issue 17 made ``toolcaller@v5`` built in, issue 18 ``toolcaller@v6``. A v6 database that
  deployed its own v5 and v6 (the release before issue 17) upgraded today: migration v7's
  data step (today's built-ins) moves the deployed v5 to v7 and v6 to v8 (the next free
  numbers above the built-in 6); v8 finds nothing more.
- A v7 database that deployed its own v6 and v7 (the release before issue 18): migration v8
  moves the deployed v6 to v8 (above the built-in 6 and the stored 7; v7 stays).

In both the activations, the runs' ``programs`` and ``program`` and a failed run's turn
follow (matched by hash: a run of the built-in is untouched); the active program is the
same code; an old log's ref still loads as the deployed program; a second pass changes
nothing."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from jupyter_agent.core.turns import RunSummary
from jupyter_agent.effects import Effect
from jupyter_agent.programs import builtin as builtin_module
from jupyter_agent.programs.builtin import builtin_hash
from jupyter_agent.programs.files import content_hash
from jupyter_agent.programs.refs import ProgramRef
from jupyter_agent.programs.registry import ProgramRegistry
from jupyter_agent.store import Store, migrations
from jupyter_agent.store.program_renumber import Renumbered, renumber_shadowed
from jupyter_agent.store.program_store import ProgramRow
from tests.store.factories import iso, make_run, make_turn, queue_table, sql

SOURCE = """from .lib import MARK


def program(run_id, chat_id):
    yield MARK
"""

LLM = "llm@v1#" + "1" * 12


def _files(mark: str) -> dict[str, str]:
    return {
        "program.py": SOURCE,
        "lib.py": "from jupyter_agent.effects import Effect\n"
        f"MARK = Effect(name='clock.now', data={{'mark': {mark!r}}})\n",
    }


def _deploy(store: Store, mark: str, *, after: int | None = None) -> ProgramRow:
    """A deployed toolcaller; ``after``: the release's highest built-in (default: today's)."""
    files = _files(mark)
    row = ProgramRow(
        name="toolcaller", hash=content_hash("toolcaller", files), files=files, uses=("llm@v1",)
    )
    return store.add_program(row, after=after)


def _run(n: int, program: str, programs: tuple[str, ...]) -> RunSummary:
    return dataclasses.replace(make_run(n, program=program), programs=programs)


def _old_database(
    db_url: str, monkeypatch: pytest.MonkeyPatch, *, schema: int, first: int
) -> tuple[ProgramRow, ...]:
    """What an older release left: schema ``schema``, toolcaller ``first`` and ``first + 1``
    deployed (its built-ins were v1..v``first - 1``), layers running them, runs and a failed
    run's turn naming them."""
    with monkeypatch.context() as patch:
        patch.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:schema])
        store = Store(db_url)
        # Today's Store writes the owner columns (v9): there for these writes, dropped
        # after, so the upgrade meets the old schema.
        if schema < 9:
            _owner_columns(db_url, "ADD COLUMN owner TEXT NOT NULL DEFAULT ''")
        if schema < 13:  # today's Store writes the fork column (v13) too: there, then dropped
            _chat_column(db_url, "ADD COLUMN forked_from TEXT")
        if schema < 14:  # and the chat's model (v14)
            _chat_column(db_url, "ADD COLUMN model TEXT")
        if schema < 15:  # and a run's rerun_of (v15)
            _chat_column(db_url, "ADD COLUMN rerun_of TEXT", table="agent_runs")
        if schema < 16:  # and queues its turns for recall (v16)
            queue_table(db_url)
        try:
            low = _deploy(store, "low", after=first - 1)
            high = _deploy(store, "high", after=first - 1)
            assert (low.version, high.version) == (first, first + 1)
            store.activate("", "toolcaller", 4, "ann", now=iso(1))
            store.activate("", "toolcaller", first, "ann", now=iso(2))
            store.activate("planner", "toolcaller", first + 1, "ann", now=iso(3))
            store.create_chat(chat_id="chat_01A", title="old", now=iso(0))
            for n, row in ((1, low), (2, high)):
                ref = f"toolcaller@v{row.version}"
                store.upsert_run(_run(n, ref, (f"{ref}#{row.hash[:12]}", LLM)))
            store.upsert_run(_run(3, "toolcaller@v4", ("toolcaller@v4#" + "4" * 12, LLM)))
            failed = make_turn(1, run_id="run_000001")
            store.append_turn(
                dataclasses.replace(failed, programs=(f"toolcaller@v{first}#{low.hash[:12]}",))
            )
        finally:
            store.close()
            if schema < 9:
                _owner_columns(db_url, "DROP COLUMN owner")
            if schema < 13:
                _chat_column(db_url, "DROP COLUMN forked_from")
            if schema < 14:
                _chat_column(db_url, "DROP COLUMN model")
            if schema < 15:
                _chat_column(db_url, "DROP COLUMN rerun_of", table="agent_runs")
            if schema < 16:
                sql(db_url, "DROP TABLE agent_recall_pending")
    return low, high


def _chat_column(db_url: str, change: str, table: str = "chats") -> None:
    sql(db_url, f"ALTER TABLE {table} {change}")


def _owner_columns(db_url: str, change: str) -> None:
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.begin() as conn:
            for table in ("chats", "agent_runs"):
                conn.execute(text(f"ALTER TABLE {table} {change}"))
    finally:
        engine.dispose()


def _raw_runs(db_url: str) -> dict[str, tuple[str, list[str]]]:
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT run_id, program, programs FROM agent_runs")).all()
    finally:
        engine.dispose()
    return {r: (p, json.loads(ps)) for r, p, ps in rows}


@dataclasses.dataclass(frozen=True)
class Upgrade:
    """One case: the old database's ``schema``, its ``first`` deployed number, and the
    numbers its two deployed rows (``first``, ``first + 1``) have after the upgrade."""

    schema: int
    first: int
    low: int
    high: int


UPGRADES = [
    # v6 -> today: v7's data step renumbers both (today's built-ins are v1..v8).
    pytest.param(Upgrade(schema=6, first=5, low=9, high=10), id="v6-db"),
    # v7 -> today: v8's data step renumbers the deployed v6 and v7 (both built in today).
    pytest.param(Upgrade(schema=7, first=6, low=9, high=10), id="v7-db"),
    # v9 -> today: v10's data step renumbers the deployed v7 and v8 (built in today).
    pytest.param(Upgrade(schema=9, first=7, low=9, high=10), id="v9-db"),
    # v11 -> today: v12's data step renumbers the deployed v8 (issue 28 made it built in).
    pytest.param(Upgrade(schema=11, first=8, low=10, high=9), id="v11-db"),
]


def test_the_built_ins_are_v1_to_v8() -> None:
    assert builtin_module.latest_builtin("toolcaller") == 8
    assert migrations.LATEST_VERSION == 16


@pytest.mark.parametrize("case", UPGRADES)
def test_migration_renumbers_the_shadowed_deployed_versions(
    db_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, case: Upgrade
) -> None:
    low, high = _old_database(db_url, monkeypatch, schema=case.schema, first=case.first)
    store = Store(db_url)  # migrates to the latest: the data steps renumber
    try:
        assert sorted((p.version, p.hash) for p in store.programs("toolcaller")) == sorted(
            [(case.low, low.hash), (case.high, high.hash)]
        )
        layers = [(a.agent, a.version) for a in store.activations(name="toolcaller")]
        assert layers == [("", 4), ("", case.low), ("planner", case.high)]
        runs = _raw_runs(db_url)
        new_low, new_high = f"toolcaller@v{case.low}", f"toolcaller@v{case.high}"
        assert runs["run_000001"] == (new_low, [f"{new_low}#{low.hash[:12]}", LLM])
        assert runs["run_000002"] == (new_high, [f"{new_high}#{high.hash[:12]}", LLM])
        assert runs["run_000003"] == ("toolcaller@v4", ["toolcaller@v4#" + "4" * 12, LLM])
        got = store.get_run("run_000001")
        assert got is not None
        assert got.programs == (f"{new_low}#{low.hash[:12]}", LLM)
        turn = store.get_turn_by_run("run_000001")
        assert turn is not None
        assert turn.programs == (f"{new_low}#{low.hash[:12]}",)
        named = store.named_programs()
        assert "toolcaller@v5" not in named
        assert "toolcaller@v6" not in named
        assert "toolcaller@v7" not in named
        assert "toolcaller@v8" not in named

        # The layers run the same code as before the upgrade; v6 itself is the built-in.
        registry = ProgramRegistry(store, tmp_path / "programs")
        server = registry.resolve("agent", "toolcaller")
        assert server.ref == ProgramRef("toolcaller", case.low, low.hash)
        assert next(server.factory("r", "c")) == Effect(name="clock.now", data={"mark": "low"})
        planner = registry.resolve("planner", "toolcaller")
        assert planner.ref == ProgramRef("toolcaller", case.high, high.hash)
        assert registry.load(f"toolcaller@v6#{builtin_hash('toolcaller@v6')[:12]}").builtin

        # The next deploy takes the next free number.
        assert _deploy(store, "next").version == max(case.low, case.high) + 1
    finally:
        store.close()


@pytest.mark.parametrize("case", UPGRADES)
def test_an_old_log_of_a_renumbered_version_replays_as_it(
    db_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, case: Upgrade
) -> None:
    low, high = _old_database(db_url, monkeypatch, schema=case.schema, first=case.first)
    cache = tmp_path / "programs"
    store = Store(db_url)
    try:
        registry = ProgramRegistry(store, cache)
        old = f"toolcaller@v{case.first}#{low.hash[:12]}"  # what the log on disk names
        loaded = registry.load(old)
        assert not loaded.builtin
        assert loaded.ref == ProgramRef("toolcaller", case.low, low.hash)
        assert loaded.note == (
            f"{old} is the deployed toolcaller@v{case.low} now "
            f"(toolcaller@v{case.first} became built in)"
        )
        assert next(loaded.factory("r", "c")).data == {"mark": "low"}
        assert registry.load(f"toolcaller@v{case.first + 1}#{high.hash[:12]}").ref == ProgramRef(
            "toolcaller", case.high, high.hash
        )
        # The renumbered ref the run row names now loads too.
        assert registry.load(f"toolcaller@v{case.low}#{low.hash[:12]}").ref.hash == low.hash
        # Another hash under a built-in key: a run of another build of the built-in.
        other = registry.load(f"toolcaller@v{case.first}#0123456789ab")
        assert other.builtin
        assert other.note.startswith(f"recorded with another build of toolcaller@v{case.first}")
    finally:
        store.close()
    # Without the database (a local replay), from the cache dir the load filled.
    local = ProgramRegistry(None, cache)
    again = local.load(old)
    assert (again.builtin, again.ref.hash) == (False, low.hash)
    assert next(again.factory("r", "c")).data == {"mark": "low"}


@pytest.mark.parametrize("case", UPGRADES)
def test_renumbering_is_idempotent_and_spares_runs_of_the_builtin(
    db_url: str, monkeypatch: pytest.MonkeyPatch, case: Upgrade
) -> None:
    low, high = _old_database(db_url, monkeypatch, schema=case.schema, first=case.first)
    store = Store(db_url)
    try:
        # A run of the built-in after the upgrade (its own hash): never renumbered.
        builtin_key = f"toolcaller@v{case.first}"
        mine = f"{builtin_key}#{builtin_hash(builtin_key)[:12]}"
        store.upsert_run(_run(4, builtin_key, (mine,)))
        before = _raw_runs(db_url)
    finally:
        store.close()
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.begin() as conn:
            assert renumber_shadowed(conn, builtin_module.BUILTIN) == []
            # Both rows back at their old numbers, both shadowed (the higher one built in
            # too): they move in order; the runs follow by hash.
            for n, row in ((1, low), (2, high)):
                version = case.first + n - 1
                conn.execute(
                    text("UPDATE agent_programs SET version = :v WHERE hash = :h"),
                    {"v": version, "h": row.hash},
                )
                conn.execute(
                    text("UPDATE agent_runs SET program = :p, programs = :ps WHERE run_id = :r"),
                    {
                        "p": f"toolcaller@v{version}",
                        "ps": json.dumps([f"toolcaller@v{version}#{row.hash[:12]}"]),
                        "r": f"run_00000{n}",
                    },
                )
            shadowing = [*builtin_module.BUILTIN, f"toolcaller@v{case.first + 1}"]
            moved = renumber_shadowed(conn, shadowing)
            assert renumber_shadowed(conn, shadowing) == []
    finally:
        engine.dispose()
    top = max(case.low, case.high)  # an activation still names it: taken
    assert moved == [
        Renumbered(name="toolcaller", old=case.first, new=top + 1, hash=low.hash, runs=1),
        Renumbered(name="toolcaller", old=case.first + 1, new=top + 2, hash=high.hash, runs=1),
    ]
    after = _raw_runs(db_url)
    assert after["run_000004"] == before["run_000004"] == (builtin_key, [mine])
    one, two = f"toolcaller@v{top + 1}", f"toolcaller@v{top + 2}"
    assert after["run_000001"] == (one, [f"{one}#{low.hash[:12]}"])
    assert after["run_000002"] == (two, [f"{two}#{high.hash[:12]}"])
    assert after["run_000003"] == before["run_000003"]
