"""The app catalogue: the memory app's methods, and which apps each program version lists."""

from __future__ import annotations

from jupyter_agent.core.loop.apps import ALL_APPS, APPS, apps_for, find_method
from jupyter_agent.kernel.apps import _signature


def test_the_memory_app_is_in_the_catalogue_with_its_mutations() -> None:
    assert [a.name for a in ALL_APPS] == ["chat", "llm", "memory", "notebook"]
    methods = {m.name: m for m in next(a for a in ALL_APPS if a.name == "memory").methods}
    assert set(methods) == {"save", "search", "forget", "list"}
    assert {name for name, m in methods.items() if m.mutation} == {"save", "forget"}
    save = find_method("memory", "save")
    assert save is not None
    assert save.mutation
    assert find_method("memory", "drop") is None
    # The kernel binds arguments by these signatures: defaults as the issue gives them.
    sig = {name: str(_signature(m)) for name, m in methods.items()}
    assert sig == {
        "save": "(text, category='general')",
        "search": "(query, k=5, history=False)",
        "forget": "(id)",
        "list": "(category=None)",
    }


def test_older_program_versions_list_the_apps_they_were_recorded_with() -> None:
    # toolcaller@v1..v3 replays ask for byte-identical prompts: no memory app in them.
    assert [a.name for a in APPS] == ["chat", "llm"]
    for version in (1, 2, 3):
        assert apps_for(version) == APPS
    assert [a.name for a in apps_for(4)] == ["chat", "llm", "memory"]
    assert [a.name for a in apps_for(5)] == ["chat", "llm", "memory", "notebook"]


def test_the_notebook_app_reads_and_proposes_and_only_propose_is_a_mutation() -> None:
    methods = {m.name: m for m in next(a for a in ALL_APPS if a.name == "notebook").methods}
    assert {name: m.mutation for name, m in methods.items()} == {"read": False, "propose": True}
    sig = {name: str(_signature(m)) for name, m in methods.items()}
    assert sig == {"read": "(path=None)", "propose": "(path, edits)"}
