"""OwnerSettings (issue 19): each owner's overrides in a real store, the one-time import of
an old ``settings.json``, the refresh from the store, and a store that fails."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.exceptions import StoreUnavailable
from jupyter_agent.runtime.settings.overrides import OwnerSettings
from jupyter_agent.store.repo import Store

TIER = {"provider": "fake", "model": "m1", "base_url": "http://127.0.0.1:9"}
OTHER = {"provider": "fake", "model": "m2", "base_url": "http://127.0.0.1:9"}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store(f"sqlite:///{tmp_path / 'agent.sqlite'}")
    yield opened
    opened.close()


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def legacy(tmp_path: Path, tiers: Any) -> Path:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"tiers": tiers}), encoding="utf-8")
    return path


def test_owners_are_apart(store: Store) -> None:
    settings = OwnerSettings(store)
    assert settings.update("alice", {"codegen": TIER}) == {"codegen": TIER}
    assert settings.tiers("bob") == {}
    assert settings.update("bob", {"classify": OTHER}) == {"classify": OTHER}
    assert settings.tiers("alice") == {"codegen": TIER}
    assert settings.update("alice", {"codegen": None}) == {}
    assert store.owner_tiers("alice") == {}
    assert store.owner_tiers("bob") == {"classify": OTHER}
    # A second server on the same database reads what the first stored.
    assert OwnerSettings(store).tiers("bob") == {"classify": OTHER}


def test_the_old_file_is_imported_once_as_the_servers_user(store: Store, tmp_path: Path) -> None:
    path = legacy(tmp_path, {"codegen": TIER, "planner": OTHER})  # planner: not a tier
    settings = OwnerSettings(store, legacy_path=path, legacy_owner="alice")
    assert settings.tiers("bob") == {}  # another owner: no import
    assert store.owner_tiers("alice") is None
    assert settings.tiers("alice") == {"codegen": TIER}
    assert store.owner_tiers("alice") == {"codegen": TIER}
    settings.update("alice", {"codegen": None})
    # A restart (a new OwnerSettings) finds her row: the file is never imported again.
    again = OwnerSettings(store, legacy_path=path, legacy_owner="alice")
    assert again.tiers("alice") == {}
    assert path.exists()  # left as it was


def test_an_update_before_any_read_imports_the_file_first(store: Store, tmp_path: Path) -> None:
    path = legacy(tmp_path, {"codegen": TIER})
    settings = OwnerSettings(store, legacy_path=path)
    assert settings.update("", {"classify": OTHER}) == {"codegen": TIER, "classify": OTHER}


def test_an_unreadable_file_imports_nothing(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text("{not json", encoding="utf-8")
    settings = OwnerSettings(store, legacy_path=path)
    assert settings.tiers("") == {}
    assert store.owner_tiers("") is None


def _eventually(settings: OwnerSettings, owner: str, expected: Any) -> None:
    deadline = time.monotonic() + 10
    while settings.tiers(owner) != expected:
        assert time.monotonic() < deadline, settings.tiers(owner)
        time.sleep(0.01)


def test_changes_from_another_server_show_after_the_refresh(store: Store) -> None:
    clock = Clock()
    settings = OwnerSettings(store, refresh_s=10.0, clock=clock)
    assert settings.tiers("alice") == {}
    OwnerSettings(store).update("alice", {"codegen": TIER})  # the other server
    clock.t = 9.0
    assert settings.tiers("alice") == {}  # cached
    time.sleep(0.1)
    assert settings.tiers("alice") == {}  # no refresh started before refresh_s
    clock.t = 10.0
    # The stale value answers at once; the refresh in the background brings the new one.
    _eventually(settings, "alice", {"codegen": TIER})


def test_a_slow_refresh_never_delays_an_answer_nor_undoes_an_update(store: Store) -> None:
    clock = Clock()
    gate = threading.Event()

    class Slow(FailingStore):
        def owner_tiers(self, owner: str) -> Any:
            if self.down:
                gate.wait(10)
            return super().owner_tiers(owner)

    slow = Slow(store)
    settings = OwnerSettings(slow, refresh_s=1.0, clock=clock)
    settings.warm("alice")
    slow.down = True  # reads now hang until the gate opens (not failing: slow)
    clock.t = 5.0
    started = time.monotonic()
    assert settings.tiers("alice") == {}  # stale, answered at once; a refresh hangs
    assert time.monotonic() - started < 1.0
    slow.down = False
    settings.update("alice", {"codegen": TIER})  # while the old read is still hanging
    gate.set()  # the old read (no overrides) completes after the update ...
    time.sleep(0.2)
    assert settings.tiers("alice") == {"codegen": TIER}  # ... and never replaces it


class FailingStore:
    """A store whose reads fail once ``down`` is set."""

    def __init__(self, inner: Store) -> None:
        self.inner, self.down = inner, False

    def owner_tiers(self, owner: str) -> Any:
        if self.down:
            raise StoreUnavailable("the database is down")
        return self.inner.owner_tiers(owner)

    def change_owner_tiers(self, owner: str, change: Any, *, now: str) -> Any:
        if self.down:
            raise StoreUnavailable("the database is down")
        return self.inner.change_owner_tiers(owner, change, now=now)

    def add_owner_tiers(self, owner: str, tiers: Any, *, now: str) -> bool:
        return self.inner.add_owner_tiers(owner, tiers, now=now)


def test_a_failed_read_keeps_the_last_value(store: Store, caplog: Any) -> None:
    clock = Clock()
    failing = FailingStore(store)
    settings = OwnerSettings(failing, refresh_s=1.0, clock=clock)
    settings.update("alice", {"codegen": TIER})
    failing.down = True
    clock.t = 5.0
    assert settings.tiers("alice") == {"codegen": TIER}  # stale: a refresh starts, fails
    deadline = time.monotonic() + 10
    while caplog.text.count("cannot read the settings") < 1:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    for _ in range(20):  # retried after refresh_s, not at every call
        assert settings.tiers("alice") == {"codegen": TIER}
    time.sleep(0.2)
    assert caplog.text.count("cannot read the settings") == 1
    assert settings.tiers("bob") == {}  # never read: no overrides, this time
    assert "cannot read the settings" in caplog.text
    with pytest.raises(StoreUnavailable):
        settings.update("alice", {"codegen": None})  # a change is refused, not lost
    # bob's failed first read was not kept: the next one, the store back, reads his row.
    failing.down = False
    store.change_owner_tiers("bob", lambda _: {"codegen": OTHER}, now="t")
    assert settings.tiers("bob") == {"codegen": OTHER}


def test_a_racing_import_never_overwrites_a_stored_row(store: Store) -> None:
    assert store.add_owner_tiers("", {"codegen": TIER}, now="t1") is True
    assert store.add_owner_tiers("", {"codegen": OTHER}, now="t2") is False
    assert store.owner_tiers("") == {"codegen": TIER}
    store.change_owner_tiers("", lambda _: {"codegen": OTHER}, now="t3")
    assert store.owner_tiers("") == {"codegen": OTHER}
