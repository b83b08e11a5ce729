"""The registry: the active version per agent and layer, the hot path's cache (one cheap
query per resolve, nothing re-read or re-imported while nothing changed), load for replay
(built-in notes, deployed from the store or the cache dir, mismatch, missing)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from jupyter_agent.effects import Effect
from jupyter_agent.exceptions import ProgramFault, ProgramMismatch, ProgramMissing
from jupyter_agent.programs.builtin import builtin_hash, run_refs
from jupyter_agent.programs.files import content_hash
from jupyter_agent.programs.refs import ProgramRef
from jupyter_agent.programs.registry import ProgramRegistry
from jupyter_agent.store import Store
from jupyter_agent.store.program_store import ProgramRow

SOURCE = """from .lib import MARK


def program(run_id, chat_id):
    yield MARK
"""


def deployed(store: Store, mark: str, *, name: str = "toolcaller") -> ProgramRow:
    files = {
        "program.py": SOURCE,
        "lib.py": "from jupyter_agent.effects import Effect\n"
        f"MARK = Effect(name='clock.now', data={{'mark': {mark!r}}})\n",
    }
    row = ProgramRow(name=name, hash=content_hash(name, files), files=files, uses=("llm@v1",))
    return store.add_program(row)


class Counting:
    """A Store proxy counting the calls of each method."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.calls: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.store, name)

        def counted(*args: Any, **kw: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            return method(*args, **kw)

        return counted


def first_mark(registry: ProgramRegistry, agent: str = "agent") -> Any:
    effect = next(registry.resolve(agent, "toolcaller").factory("run_1", "chat_1"))
    assert isinstance(effect, Effect)
    return effect.data.get("mark")


def test_layers_and_defaults(store: Store, tmp_path: Path) -> None:
    registry = ProgramRegistry(store, tmp_path / "programs")
    builtin = registry.resolve("agent", "toolcaller")
    assert builtin.builtin
    assert builtin.programs == tuple(r.text for r in run_refs("toolcaller@v8"))
    assert registry.resolve("agent", "history").ref.key == "history@v1"
    v5, v6 = deployed(store, "five"), deployed(store, "six")
    assert registry.resolve("agent", "toolcaller").builtin  # deployed is not active
    store.activate("", "toolcaller", 9, "ann")
    assert first_mark(registry) == "five"
    assert first_mark(registry, "planner") == "five"
    store.activate("planner", "toolcaller", 10, "ann")
    assert first_mark(registry) == "five"
    assert first_mark(registry, "planner") == "six"
    resolved = registry.resolve("planner", "toolcaller")
    assert resolved.ref == ProgramRef("toolcaller", 10, v6.hash)
    assert resolved.programs == (
        f"toolcaller@v10#{v6.hash[:12]}",
        run_refs("toolcaller@v8")[1].text,
    )
    store.activate("planner", "toolcaller", None, "ann")  # cleared: the server-wide one
    assert first_mark(registry, "planner") == "five"
    store.activate("", "toolcaller", 8, "ann")
    assert registry.resolve("planner", "toolcaller").builtin
    assert (tmp_path / "programs" / v5.hash / "meta.json").is_file()
    with pytest.raises(KeyError):
        registry.resolve("agent", "llm")


def test_the_hot_path_reads_one_mark_and_imports_once(store: Store, tmp_path: Path) -> None:
    counting = Counting(store)
    registry = ProgramRegistry(counting, tmp_path / "programs")
    deployed(store, "five")
    store.activate("", "toolcaller", 9, "ann")
    first = registry.resolve("agent", "toolcaller")
    counting.calls.clear()
    for _ in range(50):
        assert registry.resolve("agent", "toolcaller").factory is first.factory
    assert counting.calls == {"activation_mark": 50}
    # A change of activation re-reads the map once; the module (by hash) is not re-imported.
    store.activate("", "toolcaller", 8, "ann")
    store.activate("", "toolcaller", 9, "ann")
    assert registry.resolve("agent", "toolcaller").factory is first.factory
    # Cost per run once loaded: a built-in and a deployed one side by side.
    timings = {}
    for version in (8, 9):
        store.activate("", "toolcaller", version, "ann")
        registry.resolve("agent", "toolcaller")
        started = time.perf_counter()
        for _ in range(200):
            registry.resolve("agent", "toolcaller")
        timings[version] = (time.perf_counter() - started) / 200
    assert timings[9] - timings[8] < 0.001, timings


def test_cached_answers_only_at_the_mark_its_layers_were_read_at(
    store: Store, tmp_path: Path
) -> None:
    counting = Counting(store)
    registry = ProgramRegistry(counting, tmp_path / "programs")
    deployed(store, "five")
    store.activate("", "toolcaller", 9, "ann")
    mark = store.activation_mark()
    assert registry.cached("agent", "toolcaller", mark) is None  # nothing read yet
    resolved = registry.resolve("agent", "toolcaller")
    counting.calls.clear()
    # What a message's send read with its chat: the same mark, no store call.
    assert registry.cached("agent", "toolcaller", mark) is resolved
    assert registry.cached("agent", "no_such_family", mark) is None
    assert counting.calls == {}
    # Another server activates another version: the send's fresh mark misses, and the
    # resolve it falls back to answers the new version.
    store.activate("", "toolcaller", 8, "ann")
    fresh = store.activation_mark()
    assert registry.cached("agent", "toolcaller", fresh) is None
    assert registry.resolve("agent", "toolcaller").ref.text.startswith("toolcaller@v8")
    assert registry.cached("agent", "toolcaller", fresh) is not None
    assert registry.cached("agent", "toolcaller", mark) is None  # an older mark: no


def test_load_for_replay(store: Store, tmp_path: Path) -> None:
    registry = ProgramRegistry(store, tmp_path / "programs")
    v5 = deployed(store, "five")
    ref = ProgramRef("toolcaller", 9, v5.hash[:12])
    loaded = registry.load(ref.text)
    assert loaded.ref.hash == v5.hash
    assert loaded.programs[0] == ref.text
    assert next(loaded.factory("r", "c")).data == {"mark": "five"}
    assert registry.load("toolcaller@v9").ref.hash == v5.hash  # an unhashed record
    # A built-in: another build's hash is a note, not an error.
    here = builtin_hash("toolcaller@v2")
    assert registry.load(f"toolcaller@v2#{here[:12]}").note == ""
    other = registry.load("toolcaller@v2#0123456789ab")
    assert other.builtin
    assert (
        other.note
        == f"recorded with another build of toolcaller@v2 (#0123456789ab vs #{here[:12]})"
    )
    with pytest.raises(
        ProgramMismatch,
        match=r"toolcaller@v9: the run recorded #abcdefabcdef, the stored files hash to #"
        + v5.hash[:12],
    ):
        registry.load("toolcaller@v9#abcdefabcdef")
    with pytest.raises(
        ProgramMissing,
        match=r"this store has no toolcaller@v11 \(#abcdefabcdef\): it was deployed on"
        r" another server\? replay with --addr",
    ):
        registry.load("toolcaller@v11#abcdefabcdef")
    # Without the store (a local replay): the cache dir has what was loaded.
    local = ProgramRegistry(None, tmp_path / "programs")
    assert next(local.load(ref.text).factory("r", "c")).data == {"mark": "five"}
    with pytest.raises(ProgramMissing):
        local.load("toolcaller@v10")
    # A cached copy whose files were changed hashes differently: refused.
    (tmp_path / "programs" / v5.hash / "lib.py").write_text("MARK = None\n")
    with pytest.raises(ProgramMismatch):
        ProgramRegistry(None, tmp_path / "programs").load(ref.text)


def test_an_unloadable_version_is_a_program_fault(store: Store, tmp_path: Path) -> None:
    files = {"program.py": "import no_such_module_at_all\n\ndef program(r, c):\n    yield\n"}
    store.add_program(
        ProgramRow(name="toolcaller", hash=content_hash("toolcaller", files), files=files)
    )
    store.activate("", "toolcaller", 9, "ann")
    registry = ProgramRegistry(store, tmp_path / "programs")
    with pytest.raises(
        ProgramFault, match=r"toolcaller@v9#.* cannot be loaded: ModuleNotFoundError"
    ) as info:
        registry.resolve("agent", "toolcaller")
    assert info.value.program.startswith("toolcaller@v9#")
