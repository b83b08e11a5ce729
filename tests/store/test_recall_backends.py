"""SQLite and PostgreSQL give the same hits for the same data: ids, order and scores."""

from __future__ import annotations

from pathlib import Path

import pytest

from jupyter_agent.store import Store
from tests.store import recall_corpus


@pytest.mark.postgres
def test_sqlite_and_postgresql_recall_the_same_hits(tmp_path: Path, pg_db_url: str) -> None:
    corpus = recall_corpus.build(seed=1515)
    lite, pg = Store(f"sqlite:///{tmp_path}/agent.sqlite"), Store(pg_db_url)
    try:
        for store in (lite, pg):
            recall_corpus.load(store, corpus)
        assert len(corpus.queries) >= 30
        compared = 0
        for query in corpus.queries:
            for options in ({}, {"k": 12}, {"kinds": ("turn", "chunk"), "k": 3}):
                a = [h.to_json() for h in lite.recall(query, **options)]  # type: ignore[arg-type]
                b = [h.to_json() for h in pg.recall(query, **options)]  # type: ignore[arg-type]
                assert a == b, (query, options)
                compared += bool(a)
        assert compared > 60  # most queries find something
        assert lite.memory_categories() == pg.memory_categories()
        assert lite.list_memories() == pg.list_memories()
    finally:
        lite.close()
        pg.close()
