"""The deploy checks and the smoke test: every refusal names the file and line; a good
program (built from the package's loop, with sibling modules) passes, its own scenarios
replay identically."""

from __future__ import annotations

import json
import sys
import time
from importlib import resources

import pytest

from jupyter_agent.exceptions import ProgramRefused
from jupyter_agent.programs.deploy_checks import check_deploy
from jupyter_agent.programs.files import content_hash
from jupyter_agent.programs.loader import PARENT
from jupyter_agent.programs.smoke import SmokeWorld, scenario, smoke

GOOD = """from jupyter_agent.core import loop

from .lib.keys import KEY


def program(run_id, chat_id):
    return (yield from loop.program(KEY, run_id, chat_id))
"""
EFFECT = "from jupyter_agent.effects import Effect\n\n"
FILES = {"program.py": GOOD, "lib/keys.py": 'KEY = "toolcaller@v6"\n'}


def _refused(name: str, files: dict[str, str]) -> str:
    with pytest.raises(ProgramRefused) as info:
        check_deploy(name, files)
    assert info.value.reason == "program_refused"
    return str(info.value)


def test_a_good_program_passes_and_leaves_no_module() -> None:
    checked = check_deploy("toolcaller", FILES)
    assert checked.hash == content_hash("toolcaller", FILES)
    assert checked.entry == "program"
    assert checked.uses == ("llm@v1", "history@v1", "autorecall@v1")
    assert not [m for m in sys.modules if m.startswith(PARENT + ".check_")]


def test_program_json_entry_uses_description() -> None:
    files = {
        "loops/main.py": GOOD.replace("from .lib", "from ..lib"),
        "lib/keys.py": FILES["lib/keys.py"],
        "program.json": json.dumps({"entry": "loops.main", "uses": ["llm@v1"], "description": "d"}),
    }
    checked = check_deploy("toolcaller", files)
    assert (checked.entry, checked.uses, checked.description) == ("loops.main", ("llm@v1",), "d")
    bad_uses = {
        **files,
        "program.json": json.dumps({"entry": "loops.main", "uses": ["toolcaller@v1"]}),
    }
    assert "`uses` names 'toolcaller@v1'" in _refused("toolcaller", bad_uses)
    assert "program.json line 1" in _refused("toolcaller", {**files, "program.json": "{"})
    assert "missing" in _refused("toolcaller", {**files, "program.json": '{"entry": "nope"}'})


@pytest.mark.parametrize(
    ("files", "words"),
    [
        ({"program.py": "x = 1\n\ndef program(:\n"}, "program.py line 3: invalid syntax"),
        ({**FILES, "lib/keys.py": "KEY = (\n"}, "lib/keys.py line 1"),
        ({"lib/keys.py": "KEY = 1\n"}, "no entry point `program`: program.py is missing"),
        ({"program.py": "x = 1\n"}, "no entry point `program` in program.py"),
        ({"program.py": "def program(r, c):\n    return 1\n"}, "not a generator function"),
        (
            {"program.py": "import no_such_module_x\n"},
            "program.py line 1: import failed: ModuleNotFoundError",
        ),
        (
            {"program.py": "x = 1\nraise ValueError('at import')\n"},
            "program.py line 2: import failed",
        ),
        (
            {
                "program.py": EFFECT + "def program(r, c):\n"
                "    yield Effect(name='foo.bar', data={})\n"
            },
            "program.py line 4: the smoke test failed: ValueError: unknown effect: 'foo.bar'",
        ),
        ({"program.py": "def program(r, c):\n    yield 42\n"}, "yielded int, not an Effect"),
        (
            {
                "program.py": "def program(r, c):\n    x = 1\n"
                "    raise RuntimeError('boom')\n    yield\n"
            },
            "program.py line 3: the smoke test failed: RuntimeError: boom",
        ),
        (
            {
                "program.py": EFFECT + "def program(r, c):\n"
                "    while True:\n        yield Effect(name='clock.now', data={})\n"
            },
            "more than 500 effects",
        ),
        (
            {
                "program.py": EFFECT + "def program(r, c):\n"
                "    yield Effect(name='clock.now', data={})\n    return 'done'\n"
            },
            "returned str, not a TurnRecord",
        ),
    ],
)
def test_refusals_name_the_file_and_line(files: dict[str, str], words: str) -> None:
    assert words in _refused("toolcaller", files)


def test_families() -> None:
    assert "autorecall runs inside toolcaller: deploy a toolcaller version" in _refused(
        "autorecall", FILES
    )
    assert "llm runs inside toolcaller" in _refused("llm", FILES)
    assert "unknown program family 'other'" in _refused("other", FILES)
    assert "not a program name" in _refused("Tool Caller", FILES)
    # A toolcaller is no history program: the history scenario's world refuses it.
    assert "the smoke test failed" in _refused("history", FILES)


def test_a_history_program_passes() -> None:
    files = {
        "program.py": "from jupyter_agent.core.history.program import history\n\n"
        "def program(run_id, chat_id):\n    return (yield from history(run_id, chat_id))\n"
    }
    assert check_deploy("history", files).uses == ("llm@v1",)


@pytest.mark.parametrize(
    "body",
    [
        "    while True:\n        pass\n",
        "    while True:\n        try:\n            sum(range(10))\n"
        "        except Exception:\n            pass\n",
    ],
)
def test_an_endless_step_is_stopped(body: str) -> None:
    started = time.monotonic()
    message = _refused("toolcaller", {"program.py": f"def program(r, c):\n{body}    yield\n"})
    assert message == "program.py: no effect for 5 s (an endless loop?)"
    assert time.monotonic() - started < 9


def test_the_whole_smoke_has_a_total_deadline() -> None:
    source = (
        "import time\nfrom jupyter_agent.effects import Effect\n\n"
        "def program(r, c):\n    while True:\n        time.sleep(0.05)\n"
        "        yield Effect(name='clock.now', data={})\n"
    )
    namespace: dict[str, object] = {}
    exec(compile(source, "program.py", "exec"), namespace)
    with pytest.raises(ProgramRefused, match=r"ran past 0\.5 s"):
        smoke(namespace["program"], "toolcaller", step_s=0.3, total_s=0.5)  # type: ignore[arg-type]


def test_the_folders_own_scenarios_must_replay() -> None:
    recorded = (
        resources.files("jupyter_agent") / "programs" / "scenarios" / "toolcaller.jsonl"
    ).read_text()
    assert check_deploy("toolcaller", {**FILES, "scenarios/one.jsonl": recorded}).hash
    # A loop that differs from the recording (another version's behaviour) is refused.
    chatty = GOOD.replace(
        "    return (yield",
        "    yield Effect(name='chat.post', data={'text': 'hi', 'done': False})\n    return (yield",
    )
    chatty = "from jupyter_agent.effects import Effect\n" + chatty
    other = {**FILES, "program.py": chatty, "scenarios/one.jsonl": recorded}
    assert "scenarios/one.jsonl: the replay differs at seq" in _refused("toolcaller", other)
    history = (
        resources.files("jupyter_agent") / "programs" / "scenarios" / "history.jsonl"
    ).read_text()
    assert "not of a toolcaller program" in _refused(
        "toolcaller", {**FILES, "scenarios/h.jsonl": history}
    )
    assert "not an effect log" in _refused("toolcaller", {**FILES, "scenarios/x.jsonl": "nope\n"})


def test_the_smoke_world_answers_by_name() -> None:
    from jupyter_agent.effects import Effect

    world = SmokeWorld(scenario("toolcaller"))
    first = world.answer(Effect(name="clock.now", data={}))
    assert first.ok
    assert isinstance(first.data, str)
    assert (
        world.answer(Effect(name="config.get", data={"key": "spaces"})).data["agent_name"]
        == "agent"
    )
    assert world.answer(Effect(name="config.get", data={"key": "nope"})).data is None
    missing = world.answer(Effect(name="chunk.store", data={}))
    assert missing.error is not None
    assert missing.error["type"] == "SmokeWorld"
    posts = [world.answer(Effect(name="chat.post", data={})).data for _ in range(5)]
    assert posts[-1] == posts[-2]  # the last one repeats


@pytest.mark.parametrize("exit_code", ["raise SystemExit(3)", "raise KeyboardInterrupt"])
def test_a_program_raising_systemexit_is_refused_not_obeyed(exit_code: str) -> None:
    at_import = {**FILES, "program.py": f"{exit_code}\n" + GOOD}
    assert "import failed" in _refused("toolcaller", at_import)
    in_a_step = {
        **FILES,
        "program.py": GOOD.replace(
            "def program(run_id, chat_id):\n",
            f"def program(run_id, chat_id):\n    {exit_code}\n",
            1,
        ),
    }
    assert "smoke test failed" in _refused("toolcaller", in_a_step)


def test_meta_json_is_refused() -> None:
    assert "meta.json" in _refused("toolcaller", {**FILES, "meta.json": "{}"})
