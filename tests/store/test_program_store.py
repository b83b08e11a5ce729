"""Deployed programs and activations in the store (SQLite and PostgreSQL): versions after
the built-in ones, equal hashes answer the stored version, race-safe numbering, the
activation mark, a chat's agent, the refs runs name."""

from __future__ import annotations

import dataclasses
import threading

import pytest

from jupyter_agent.exceptions import NotFound
from jupyter_agent.store import Store
from jupyter_agent.store.program_store import ProgramRow
from tests.store.factories import iso, make_run


def _row(digest: str, name: str = "toolcaller", **kw: object) -> ProgramRow:
    files = {"program.py": f"# {digest}\n", "lib/util.py": "X = 1\n"}
    return ProgramRow(name=name, hash=digest * 8, files=files, **kw)  # type: ignore[arg-type]


def test_versions_follow_the_builtin_ones(store: Store) -> None:
    first = store.add_program(_row("a1b2c3d4", uses=("llm@v1",), created_by="ann"))
    assert first.version == 9  # toolcaller v1..v8 are built in
    assert first.created
    assert first.created_by == "ann"
    assert store.add_program(_row("00000000", name="history")).version == 2
    second = store.add_program(_row("ffffeeee", description="plans first"))
    assert second.version == 10
    again = store.add_program(_row("a1b2c3d4", description="ignored"))
    assert again == first  # an equal hash is that version, nothing new
    got = store.program("toolcaller", 9)
    assert got == first
    assert got is not None
    assert got.files == {"program.py": "# a1b2c3d4\n", "lib/util.py": "X = 1\n"}
    assert got.uses == ("llm@v1",)
    assert store.program("toolcaller", 12) is None
    listed = store.programs()
    assert [(p.name, p.version) for p in listed] == [
        ("history", 2),
        ("toolcaller", 9),
        ("toolcaller", 10),
    ]
    assert all(p.files == {} for p in listed)
    assert [p.version for p in store.programs("toolcaller", files=True)] == [9, 10]
    assert store.programs("toolcaller", files=True)[0].files == first.files
    assert store.delete_program("toolcaller", 10)
    assert not store.delete_program("toolcaller", 10)
    assert store.add_program(_row("12121212")).version == 10  # never activated: free again
    store.activate("", "toolcaller", 10, "ann")
    assert store.delete_program("toolcaller", 10)
    assert store.add_program(_row("34343434")).version == 11  # an activated number stays taken


def test_activations_and_mark(store: Store) -> None:
    assert store.activation_mark() == 0
    assert store.activations() == []
    store.activate("", "toolcaller", 5, "ann", now=iso(1))
    mark = store.activation_mark()
    assert mark > 0
    store.activate("planner", "toolcaller", 6, "bob", now=iso(2))
    store.activate("planner", "toolcaller", None, "bob", now=iso(3))
    assert store.activation_mark() > mark
    rows = store.activations()
    assert [(a.agent, a.name, a.version, a.by, a.at) for a in rows] == [
        ("", "toolcaller", 5, "ann", iso(1)),
        ("planner", "toolcaller", 6, "bob", iso(2)),
        ("planner", "toolcaller", None, "bob", iso(3)),
    ]
    assert [a.version for a in store.activations(agent="planner")] == [6, None]
    assert store.activations(name="history") == []
    assert rows[0].id < rows[1].id < rows[2].id == store.activation_mark()


def test_chat_agent_and_named_programs(store: Store) -> None:
    store.create_chat(chat_id="chat_01A", title="t", now=iso(0), agent="planner")
    assert store.chat_agent("chat_01A") == "planner"
    with pytest.raises(NotFound):
        store.chat_agent("chat_nope")
    run = make_run(1, chat_id="chat_01A")
    refs = ("toolcaller@v5#0123456789ab", "llm@v1#aaaaaaaaaaaa")
    stored = dataclasses.replace(run, programs=refs, agent="planner")
    store.upsert_run(stored)
    got = store.get_run(stored.run_id)
    assert got is not None
    assert got.programs == refs
    assert got.agent == "planner"
    assert got == stored
    store.upsert_run(make_run(2, chat_id="chat_01A"))
    assert store.named_programs() >= {*refs, run.program}


def test_two_deploys_at_once_get_distinct_versions(db_url: str) -> None:
    # Two Stores (two engines: two servers on one database) deploying at the same moment.
    stores = [Store(db_url), Store(db_url)]
    barrier = threading.Barrier(4)
    got: list[int] = []
    errors: list[BaseException] = []

    def deploy(store: Store, digest: str) -> None:
        try:
            barrier.wait()
            got.append(store.add_program(_row(digest)).version)
        except BaseException as exc:
            errors.append(exc)

    try:
        threads = [
            threading.Thread(target=deploy, args=(stores[i % 2], f"{i:08x}")) for i in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert errors == []
        assert sorted(got) == [9, 10, 11, 12]  # after the built-in v1..v8
        # The same files deployed at once from both: one version.
        barrier2 = threading.Barrier(2)
        same: list[int] = []

        def deploy_same(store: Store) -> None:
            barrier2.wait()
            same.append(store.add_program(_row("cafecafe")).version)

        pair = [threading.Thread(target=deploy_same, args=(s,)) for s in stores]
        for t in pair:
            t.start()
        for t in pair:
            t.join(60)
        assert same == [13, 13]
    finally:
        for s in stores:
            s.close()
