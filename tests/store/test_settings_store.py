"""agent_settings (issue 19): each owner's overrides, changed in one transaction holding the
row, on SQLite and PostgreSQL; two changes at once lose neither."""

from __future__ import annotations

import threading
import time
from typing import Any

from jupyter_agent.store import Store

CODEGEN = {"provider": "fake", "model": "m1"}
CLASSIFY = {"provider": "fake", "model": "m2"}


def test_owners_rows_are_apart(store: Store) -> None:
    assert store.owner_tiers("alice") is None
    stored = store.change_owner_tiers("alice", lambda t: {**t, "codegen": CODEGEN}, now="t1")
    assert stored == {"codegen": CODEGEN}
    assert store.owner_tiers("alice") == {"codegen": CODEGEN}
    assert store.owner_tiers("bob") is None
    assert store.change_owner_tiers("alice", lambda t: {}, now="t2") == {}
    assert store.owner_tiers("alice") == {}


def test_two_changes_at_once_lose_neither(db_url: str) -> None:
    """Two stores (two servers) on one database change one owner's row at once: the first
    holds the row while it "thinks"; the second waits and then sees the first's change."""
    first, second = Store(db_url), Store(db_url)
    inside = threading.Event()

    def slow(tiers: dict[str, Any]) -> dict[str, Any]:
        inside.set()
        time.sleep(0.5)  # the other change arrives meanwhile
        return {**tiers, "codegen": CODEGEN}

    try:
        thread = threading.Thread(target=lambda: first.change_owner_tiers("alice", slow, now="t1"))
        thread.start()
        assert inside.wait(10)
        second.change_owner_tiers("alice", lambda t: {**t, "classify": CLASSIFY}, now="t2")
        thread.join(10)
        assert first.owner_tiers("alice") == {"codegen": CODEGEN, "classify": CLASSIFY}
    finally:
        first.close()
        second.close()


def test_a_malformed_row_reads_as_no_overrides(store: Store) -> None:
    store.change_owner_tiers("alice", lambda t: {"codegen": CODEGEN}, now="t1")
    with store._write("test") as conn:  # a row another version wrote badly
        conn.exec_driver_sql("UPDATE agent_settings SET tiers = '[1, 2]' WHERE owner = 'alice'")
    assert store.owner_tiers("alice") == {}
