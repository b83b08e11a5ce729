"""A package upgrade that makes ``toolcaller@v5`` built in (issue 17) on a v6 database that
deployed its own v5 and v6 (SQLite and PostgreSQL): migration v7 moves the deployed v5 to
v7 (the next free number above the built-in 5 and the stored 6; v6 stays); the
activations, the runs' ``programs`` and ``program`` and a failed run's turn follow (matched
by hash: a run of the built-in is untouched); the active program is the same code; an old
log's ref still loads as the deployed program; a second pass changes nothing"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from jupyter_agent.core.turns import RunSummary
from jupyter_agent.effects import Effect
from jupyter_agent.programs import builtin as builtin_module
from jupyter_agent.programs.builtin import BUILTIN, BuiltinProgram, builtin_hash
from jupyter_agent.programs.files import content_hash
from jupyter_agent.programs.refs import ProgramRef
from jupyter_agent.programs.registry import ProgramRegistry
from jupyter_agent.store import Store, migrations
from jupyter_agent.store.program_renumber import Renumbered, renumber_shadowed
from jupyter_agent.store.program_store import ProgramRow
from tests.store.factories import iso, make_run, make_turn

SOURCE = """from .lib import MARK


def program(run_id, chat_id):
    yield MARK
"""


@pytest.fixture
def builtin_v5(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``toolcaller@v5`` built in (the package's own once issue 17's loop is merged; else
    the v4 entry under the v5 key): its full hash."""
    if "toolcaller@v5" not in BUILTIN:
        v4 = BUILTIN["toolcaller@v4"]
        fake = BuiltinProgram(key="toolcaller@v5", kind="run", modules=v4.modules, uses=v4.uses)
        monkeypatch.setitem(BUILTIN, "toolcaller@v5", fake)
    builtin_hash.cache_clear()
    yield builtin_hash("toolcaller@v5")
    builtin_hash.cache_clear()


def _files(mark: str) -> dict[str, str]:
    return {
        "program.py": SOURCE,
        "lib.py": "from jupyter_agent.effects import Effect\n"
        f"MARK = Effect(name='clock.now', data={{'mark': {mark!r}}})\n",
    }


def _deploy(store: Store, mark: str) -> ProgramRow:
    files = _files(mark)
    row = ProgramRow(
        name="toolcaller", hash=content_hash("toolcaller", files), files=files, uses=("llm@v1",)
    )
    return store.add_program(row, after=4)  # the previous release: v1..v4 built in


def _run(n: int, program: str, programs: tuple[str, ...]) -> RunSummary:
    return dataclasses.replace(make_run(n, program=program), programs=programs)


def _v6_database(db_url: str, monkeypatch: pytest.MonkeyPatch) -> tuple[ProgramRow, ...]:
    """What the previous release left: schema v6, toolcaller v5 and v6 deployed, layers
    running them, runs and a failed run's turn naming them."""
    with monkeypatch.context() as patch:
        patch.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:6])
        store = Store(db_url)
        try:
            five, six = _deploy(store, "five"), _deploy(store, "six")
            assert (five.version, six.version) == (5, 6)
            store.activate("", "toolcaller", 4, "ann", now=iso(1))
            store.activate("", "toolcaller", 5, "ann", now=iso(2))
            store.activate("planner", "toolcaller", 6, "ann", now=iso(3))
            store.create_chat(chat_id="chat_01A", title="old", now=iso(0))
            llm = "llm@v1#" + "1" * 12
            store.upsert_run(_run(1, "toolcaller@v5", (f"toolcaller@v5#{five.hash[:12]}", llm)))
            store.upsert_run(_run(2, "toolcaller@v6", (f"toolcaller@v6#{six.hash[:12]}", llm)))
            store.upsert_run(_run(3, "toolcaller@v4", ("toolcaller@v4#" + "4" * 12, llm)))
            failed = make_turn(1, run_id="run_000001")
            store.append_turn(
                dataclasses.replace(failed, programs=(f"toolcaller@v5#{five.hash[:12]}",))
            )
        finally:
            store.close()
    return five, six


def _raw_runs(db_url: str) -> dict[str, tuple[str, list[str]]]:
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT run_id, program, programs FROM agent_runs")).all()
    finally:
        engine.dispose()
    return {r: (p, json.loads(ps)) for r, p, ps in rows}


def test_migration_v7_renumbers_a_deployed_v5(
    db_url: str, monkeypatch: pytest.MonkeyPatch, builtin_v5: str, tmp_path: Path
) -> None:
    five, six = _v6_database(db_url, monkeypatch)
    store = Store(db_url)  # migrates v6 -> latest: v7's data step renumbers
    try:
        # v6 is not built in: it stays; v5 takes the next free number above both.
        assert [(p.version, p.hash) for p in store.programs("toolcaller")] == [
            (6, six.hash),
            (7, five.hash),
        ]
        layers = [(a.agent, a.version) for a in store.activations(name="toolcaller")]
        assert layers == [("", 4), ("", 7), ("planner", 6)]
        runs = _raw_runs(db_url)
        llm = "llm@v1#" + "1" * 12
        assert runs["run_000001"] == ("toolcaller@v7", [f"toolcaller@v7#{five.hash[:12]}", llm])
        assert runs["run_000002"] == ("toolcaller@v6", [f"toolcaller@v6#{six.hash[:12]}", llm])
        assert runs["run_000003"] == ("toolcaller@v4", ["toolcaller@v4#" + "4" * 12, llm])
        got = store.get_run("run_000001")
        assert got is not None
        assert got.programs == (f"toolcaller@v7#{five.hash[:12]}", llm)
        turn = store.get_turn_by_run("run_000001")
        assert turn is not None
        assert turn.programs == (f"toolcaller@v7#{five.hash[:12]}",)
        assert "toolcaller@v5" not in store.named_programs()

        # The layers run the same code as before the upgrade; v5 itself is the built-in.
        registry = ProgramRegistry(store, tmp_path / "programs")
        server = registry.resolve("agent", "toolcaller")
        assert server.ref == ProgramRef("toolcaller", 7, five.hash)
        assert next(server.factory("r", "c")) == Effect(name="clock.now", data={"mark": "five"})
        planner = registry.resolve("planner", "toolcaller")
        assert planner.ref == ProgramRef("toolcaller", 6, six.hash)
        assert registry.load(f"toolcaller@v5#{builtin_v5[:12]}").builtin

        # The next deploy takes the next free number.
        assert _deploy(store, "eight").version == 8
    finally:
        store.close()


def test_an_old_log_of_the_deployed_v5_replays_as_it(
    db_url: str, monkeypatch: pytest.MonkeyPatch, builtin_v5: str, tmp_path: Path
) -> None:
    five, six = _v6_database(db_url, monkeypatch)
    cache = tmp_path / "programs"
    store = Store(db_url)
    try:
        registry = ProgramRegistry(store, cache)
        old = f"toolcaller@v5#{five.hash[:12]}"  # what the log on disk names
        loaded = registry.load(old)
        assert not loaded.builtin
        assert loaded.ref == ProgramRef("toolcaller", 7, five.hash)
        assert (
            loaded.note
            == f"{old} is the deployed toolcaller@v7 now (toolcaller@v5 became built in)"
        )
        assert next(loaded.factory("r", "c")).data == {"mark": "five"}
        assert registry.load(f"toolcaller@v6#{six.hash[:12]}").ref.version == 6
        # The renumbered ref the run row names now loads too.
        assert registry.load(f"toolcaller@v7#{five.hash[:12]}").ref.hash == five.hash
        # Another hash under a built-in key: a run of another build of the built-in.
        other = registry.load("toolcaller@v5#0123456789ab")
        assert other.builtin
        assert other.note.startswith("recorded with another build of toolcaller@v5")
    finally:
        store.close()
    # Without the database (a local replay), from the cache dir the load filled.
    local = ProgramRegistry(None, cache)
    again = local.load(f"toolcaller@v5#{five.hash[:12]}")
    assert (again.builtin, again.ref.hash) == (False, five.hash)
    assert next(again.factory("r", "c")).data == {"mark": "five"}


def test_renumbering_is_idempotent_and_spares_runs_of_the_builtin(
    db_url: str, monkeypatch: pytest.MonkeyPatch, builtin_v5: str
) -> None:
    five, six = _v6_database(db_url, monkeypatch)
    store = Store(db_url)
    try:
        # A run of the built-in v5 after the upgrade (its own hash): never renumbered.
        mine = f"toolcaller@v5#{builtin_v5[:12]}"
        store.upsert_run(_run(4, "toolcaller@v5", (mine,)))
        before = _raw_runs(db_url)
    finally:
        store.close()
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.begin() as conn:
            assert renumber_shadowed(conn, builtin_module.BUILTIN) == []
            # Two shadowed rows (v6 built in too) move in order; runs follow by hash.
            for version, row in ((5, five), (6, six)):
                conn.execute(
                    text("UPDATE agent_programs SET version = :v WHERE hash = :h"),
                    {"v": version, "h": row.hash},
                )
            conn.execute(
                text(
                    "UPDATE agent_runs SET program = 'toolcaller@v5', programs = :p"
                    " WHERE run_id = 'run_000001'"
                ),
                {"p": json.dumps([f"toolcaller@v5#{five.hash[:12]}"])},
            )
            moved = renumber_shadowed(conn, [*builtin_module.BUILTIN, "toolcaller@v6"])
            assert renumber_shadowed(conn, [*builtin_module.BUILTIN, "toolcaller@v6"]) == []
    finally:
        engine.dispose()
    top = 7  # an activation still names v7: taken
    assert moved == [
        Renumbered(name="toolcaller", old=5, new=top + 1, hash=five.hash, runs=1),
        Renumbered(name="toolcaller", old=6, new=top + 2, hash=six.hash, runs=1),
    ]
    after = _raw_runs(db_url)
    assert after["run_000004"] == before["run_000004"] == ("toolcaller@v5", [mine])
    assert after["run_000001"] == ("toolcaller@v8", [f"toolcaller@v8#{five.hash[:12]}"])
    assert after["run_000002"][0] == "toolcaller@v9"
    assert after["run_000003"] == before["run_000003"]
