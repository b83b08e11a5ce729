"""What each ``toolcaller`` version does, declared once (``core/loop/features.py``).

A version's record never changes once logs of it exist (they replay with it): the table
below is the contract, written out by hand, so a change to an old version's features fails
here before it fails a replay.
"""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_agent.core.loop import programs as registry
from jupyter_agent.core.loop.features import FEATURES, PROGRAM, PROGRAMS, Features
from jupyter_agent.core.loop.machine import (
    V4_PROGRAMS,
    V5_PROGRAMS,
    V6_PROGRAMS,
    V7_PROGRAMS,
    setup,
)
from tests.core.test_loop_step import HELLO, Stepper, configured

FLAGS = ("failed_calls_count", "window", "recall", "writes", "approvals", "notices", "cell_ids")
EXPECTED: dict[int, dict[str, Any]] = {
    1: {"apps": ["chat", "llm"], "programs": None, "on": set()},
    2: {"apps": ["chat", "llm"], "programs": None, "on": {"failed_calls_count"}},
    3: {"apps": ["chat", "llm"], "programs": None, "on": {"failed_calls_count", "window"}},
    4: {
        "apps": ["chat", "llm", "memory"],
        "programs": ("toolcaller@v4", "autorecall@v1"),
        "on": {"failed_calls_count", "window", "recall"},
    },
    5: {
        "apps": ["chat", "llm", "memory", "notebook"],
        "programs": ("toolcaller@v5", "autorecall@v1"),
        "on": {*FLAGS},
    },
    6: {
        "apps": ["chat", "llm", "memory", "notebook"],
        "programs": ("toolcaller@v6", "autorecall@v1"),
        "on": {*FLAGS, "mcp"},
    },
    7: {
        "apps": ["chat", "llm", "memory", "notebook"],
        "programs": ("toolcaller@v7", "autorecall@v1"),
        "on": {*FLAGS, "mcp", "start"},
    },
    8: {
        "apps": ["chat", "llm", "memory", "notebook"],
        "programs": ("toolcaller@v8", "autorecall@v1"),
        "on": {*FLAGS, "mcp", "start", "person_kernel"},
    },
}


@pytest.mark.parametrize("version", sorted(EXPECTED))
def test_each_versions_record_is_as_declared(version: int) -> None:
    features = Features.of(f"toolcaller@v{version}")
    want = EXPECTED[version]
    assert features.name == f"toolcaller@v{version}"
    assert features.version == version
    assert [app.name for app in features.apps] == want["apps"]
    assert features.programs == want["programs"]
    on = {flag for flag in (*FLAGS, "mcp", "start", "person_kernel") if getattr(features, flag)}
    assert on == want["on"]
    assert Features.of_version(version) is features


def test_every_version_is_registered_and_the_newest_is_the_default() -> None:
    assert list(FEATURES) == [f"toolcaller@v{n}" for n in sorted(EXPECTED)]
    assert {f"toolcaller@v{n}": n for n in sorted(EXPECTED)} == PROGRAMS
    assert PROGRAM == "toolcaller@v8"
    assert set(PROGRAMS) <= set(registry.PROGRAMS)
    assert tuple(FEATURES[f"toolcaller@v{n}"].programs for n in (4, 5, 6, 7)) == (
        V4_PROGRAMS,
        V5_PROGRAMS,
        V6_PROGRAMS,
        V7_PROGRAMS,
    )


def test_a_version_this_code_does_not_have_is_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown program 'toolcaller@v10': this code has"):
        Features.of("toolcaller@v10")
    with pytest.raises(ValueError, match="toolcaller@v0"):
        Features.of_version(0)
    with pytest.raises(ValueError, match="toolcaller@v9"):
        Stepper(setup("run_1", "chat_1", version=9))


@pytest.mark.parametrize("version", [3, 5])
def test_the_turn_carries_its_versions_record(version: int) -> None:
    s = Stepper(setup("run_1", "chat_1", version=version))
    configured(s)
    s.answer("config.get", {"turns": [], "layout": {"chunk_turns": 10, "l2_chunks": 5}})
    drained = s.answer("mailbox.drain", [HELLO])
    assert drained.data == ({"notices": True} if version >= 5 else {})
    if version >= 4:
        off = {"enabled": False, "k": 5, "budget_tokens": 0, "threshold": 1}
        s.answer("config.get", {"categories": [], "recall": off})
    assert s.returned
    turn = s.value
    assert turn.features is Features.of_version(version)
    assert (turn.version, turn.notices) == (version, version >= 5)
    assert (turn.approvals is not None) is (version >= 5)
    assert [t.name for t in turn.tools] == ["run_cell", "bash"]
    assert ("writes" in turn.tools[0].input_schema["properties"]) is (version >= 5)
