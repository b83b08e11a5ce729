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
    assert {name: m.mutation for name, m in methods.items()} == {
        "read": False,
        "propose": True,
        "variables": False,
        "inspect": False,
        "kernel_state": False,
        "fetch": False,
        "run": True,  # it changes the person's kernel
    }
    sig = {name: str(_signature(m)) for name, m in methods.items()}
    assert sig == {
        "read": "(path=None)",
        "propose": "(path, edits)",
        "variables": "(path=None)",
        "inspect": "(name, path=None)",
        "kernel_state": "(path=None)",
        "fetch": "(name, path=None)",
        "run": "(code, path=None)",
    }


def test_the_look_at_the_persons_kernel_is_listed_from_v8_only() -> None:
    def listed(version: int) -> list[str]:
        [notebook] = [a for a in apps_for(version) if a.name == "notebook"]
        return [m.name for m in notebook.methods]

    for version in (5, 6, 7):  # their recorded prompts stay as they were
        assert listed(version) == ["read", "propose"]
    assert listed(8) == ["read", "propose", "variables", "inspect", "kernel_state", "fetch", "run"]
