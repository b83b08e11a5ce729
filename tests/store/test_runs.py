"""Run summaries: upsert, get, newest-first pages with a cursor, status queries, prune."""

from __future__ import annotations

import dataclasses

import pytest

from jupyter_agent.core.loop.machine import PROGRAM
from jupyter_agent.store import MAX_PAGE, Store
from tests.store.factories import iso, make_run


def test_upsert_get_and_replace(store: Store) -> None:
    running = make_run(1, status="running")
    store.upsert_run(running)
    assert store.get_run("run_000001") == running
    finished = dataclasses.replace(make_run(1), cost=1.75, ended=iso(99))
    store.upsert_run(finished)
    assert store.get_run("run_000001") == finished
    assert store.get_run("run_missing") is None
    assert store.list_runs() == ([finished], None)


def test_program_filter(store: Store) -> None:
    for n in range(6):
        store.upsert_run(make_run(n, program=PROGRAM if n % 2 else "classifier@v1"))
    runs, cursor = store.list_runs(program="toolcaller")
    assert [r.run_id for r in runs] == ["run_000005", "run_000003", "run_000001"]
    assert cursor is None
    assert [r.run_id for r in store.list_runs(program="classifier")[0]] == [
        "run_000004",
        "run_000002",
        "run_000000",
    ]
    assert store.list_runs(program="nothing") == ([], None)


# Program values in the stored shape (``name@vN``, as core.loop.PROGRAM); the names with
# LIKE's wildcards in them are the ones a careless LIKE would confuse.
_PROGRAMS = {
    "run_a": PROGRAM,  # toolcaller@v5
    "run_b": "toolcaller@v1",
    "run_c": "toolcaller2@v1",
    "run_d": "toolcallerX@v1",
    "run_e": "tool_caller@v1",
    "run_f": "tool%caller@v1",
    "run_g": "Toolcaller@v1",
}


@pytest.mark.parametrize(
    ("program", "expected"),
    [
        ("toolcaller", {"run_a", "run_b"}),  # every version, no other name
        (PROGRAM, {"run_a"}),  # one version
        ("toolcaller@v1", {"run_b"}),
        ("toolcaller@v", set()),  # a version is matched whole
        ("toolcall", set()),  # a name is matched whole
        ("Toolcaller", {"run_g"}),  # case-sensitive on SQLite too
        ("tool_caller", {"run_e"}),  # "_" is literal, not any character
        ("tool%caller", {"run_f"}),  # "%" is literal, not anything
        ("tool%", set()),
        ("%", set()),
        ("_oolcaller", set()),
        ("toolcaller@%", set()),
        ("", set()),
    ],
)
def test_program_filter_by_name_or_version_with_wildcards_escaped(
    store: Store, program: str, expected: set[str]
) -> None:
    for n, (run_id, value) in enumerate(sorted(_PROGRAMS.items())):
        store.upsert_run(make_run(n, run_id=run_id, program=value))
    runs, _ = store.list_runs(program=program)
    assert {r.run_id for r in runs} == expected


@pytest.mark.parametrize("program", [None, "toolcaller"])
def test_pages_have_no_gaps_or_duplicates(store: Store, program: str | None) -> None:
    # 120 runs of the program over 40 distinct start times (3 per time: ties broken by
    # id), with other programs' runs interleaved to be filtered out.
    expected = []
    for n in range(120):
        run = make_run(n, run_id=f"run_{(n * 37) % 120:04d}", started=iso(n // 3))
        store.upsert_run(run)
        store.upsert_run(make_run(n, program="other", run_id=f"run_x{n:04d}", started=iso(n)))
        expected.append(run)
    if program is not None:
        expected.sort(key=lambda r: (r.started, r.run_id), reverse=True)
    else:
        everything = [*expected]
        everything += [
            make_run(n, program="other", run_id=f"run_x{n:04d}", started=iso(n)) for n in range(120)
        ]
        expected = sorted(everything, key=lambda r: (r.started, r.run_id), reverse=True)

    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        runs, cursor = store.list_runs(program=program, limit=50, before=cursor)
        pages.append([r.run_id for r in runs])
        if cursor is None:
            break
        assert len(pages) < 10
    total = len(expected)
    assert [len(p) for p in pages] == [50] * (total // 50) + ([total % 50] if total % 50 else [])
    assert [i for p in pages for i in p] == [r.run_id for r in expected]


def test_exact_multiple_of_the_page_ends_with_an_empty_last_page_or_none(store: Store) -> None:
    for n in range(4):
        store.upsert_run(make_run(n))
    first, cursor = store.list_runs(limit=2)
    second, cursor2 = store.list_runs(limit=2, before=cursor)
    assert [r.run_id for r in first + second] == [f"run_{n:06d}" for n in (3, 2, 1, 0)]
    assert cursor2 is None


def test_bad_limit_and_cursor(store: Store) -> None:
    with pytest.raises(ValueError, match="limit"):
        store.list_runs(limit=0)
    with pytest.raises(ValueError, match="limit"):
        store.list_runs(limit=MAX_PAGE + 1)
    for cursor in ("not-a-cursor!", "W10", "eyJhIjoxfQ"):  # garbage, [], {"a":1}
        with pytest.raises(ValueError, match="cursor"):
            store.list_runs(before=cursor)


def test_runs_with_status(store: Store) -> None:
    store.upsert_run(make_run(3, status="running"))
    store.upsert_run(make_run(1, status="running"))
    store.upsert_run(make_run(2, status="done"))
    assert [r.run_id for r in store.runs_with_status("running")] == ["run_000001", "run_000003"]
    store.upsert_run(make_run(1, status="interrupted"))
    assert [r.run_id for r in store.runs_with_status("running")] == ["run_000003"]
    assert [r.run_id for r in store.runs_with_status("interrupted")] == ["run_000001"]
    assert store.runs_with_status("error") == []


def test_prune(store: Store) -> None:
    for n in range(10):
        store.upsert_run(make_run(n))
    store.upsert_run(make_run(2, status="running"))  # an old run still going is kept
    pruned = store.prune_runs(older_than=iso(5))
    assert sorted(pruned) == ["run_000000", "run_000001", "run_000003", "run_000004"]
    left = [r.run_id for r in store.list_runs()[0]]
    assert left == [f"run_{n:06d}" for n in (9, 8, 7, 6, 5, 2)]
    assert store.prune_runs(older_than=iso(5)) == []
