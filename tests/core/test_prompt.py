"""Prompt assembly: order, verbatim identity, fingerprints, the user message header."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest

from jupyter_agent.core.loop.apps import APPS
from jupyter_agent.core.loop.prompt import (
    RuntimeContext,
    build_system,
    skill_summary,
    user_message,
)
from jupyter_agent.messages import File, Text
from jupyter_agent.tools import BASH, RUN_CELL, tools_for

SOUL = "You are a test agent.\n\nBe   exact  —  keep *this* spacing.\n"


def make_spaces() -> dict[str, Any]:
    return {
        "agent_name": "agent",
        "agent_space": "/home/tester/.local/share/jupyter/jupyter_agent/spaces",
        "files": {
            "skills/plotting": "# Plotting\n\nUse matplotlib.\n",
            "_zeta": "ZETA SYSTEM SKILL",
            "_memory": "MEMORY SKILL",
            "_any": "ANY SKILL",
            "_core": "CORE SKILL",
            "_soul": SOUL,
            "_alpha": "ALPHA SYSTEM SKILL",
            "skills/etl": "---\ndescription: Load and clean CSV exports\n---\n# ETL\nlong body\n",
        },
        "paths": {"skills/etl": "/home/tester/proj/.jupyter-agent/skills/etl.md"},
        "repos": [
            {"name": "zz-lib", "url": "https://example.org/zz.git"},
            {"name": "analysis", "path": "/home/tester/proj", "description": "the main repo"},
        ],
        "memory_categories": ["people", "datasets"],
        "env_prefix": "/opt/env",
        "home": "/home/tester",
    }


CONTEXT = RuntimeContext(
    agent_space="/home/tester/.local/share/jupyter/jupyter_agent/spaces",
    chat_id="chat_01ABC",
    agent_name="agent",
    installed_apps=("llm", "chat"),
    cwd="/home/tester/proj/notebooks",
)


def build(spaces: dict[str, Any], **kw: Any):
    kw.setdefault("tools", tools_for(bash_enabled=True))
    kw.setdefault("apps", APPS)
    kw.setdefault("context", CONTEXT)
    return build_system(spaces, **kw)


def test_identity_first_and_verbatim():
    prompt = build(make_spaces())
    assert prompt.text.startswith(SOUL)
    assert prompt.text.count(SOUL) == 1


def test_section_order():
    text = build(make_spaces(), tool_prompt="TOOL FORMAT INSTRUCTIONS").text
    markers = [
        SOUL,
        "CORE SKILL",
        "ANY SKILL",
        "MEMORY SKILL",
        "ALPHA SYSTEM SKILL",
        "ZETA SYSTEM SKILL",
        "# Your skills",
        "# Your tools",
        "## run_cell",
        "## bash",
        "### chat:",
        "### llm:",
        "TOOL FORMAT INSTRUCTIONS",
        "# Repositories",
        "**analysis**",
        "**zz-lib**",
        "# Memory categories in use",
        "- datasets",
        "- people",
        "# Runtime context",
    ]
    positions = [text.index(m) for m in markers]
    assert positions == sorted(positions)


def test_tools_and_apps_rendered():
    text = build(make_spaces()).text
    assert RUN_CELL.description in text
    assert BASH.description in text
    for app in APPS:
        for method in app.methods:
            assert f"- `{method.signature}`: {method.doc}" in text
    no_bash = build(make_spaces(), tools=tools_for(bash_enabled=False)).text
    assert "## bash" not in no_bash


def test_user_skills_listed_not_inlined():
    text = build(make_spaces()).text
    assert "- **etl**: Load and clean CSV exports (`~/proj/.jupyter-agent/skills/etl.md`)" in text
    assert "- **plotting**: Plotting" in text
    assert "long body" not in text
    assert "Use matplotlib." not in text


def test_runtime_context_and_home_shown_as_tilde():
    text = build(make_spaces()).text
    assert "- Chat id: chat_01ABC" in text
    assert "- Agent name: agent" in text
    assert "- Installed apps: chat, llm" in text
    assert "`~/proj/notebooks`" in text
    assert "/home/tester" not in text


def test_memory_none_yet_and_no_repos():
    spaces = make_spaces()
    spaces["memory_categories"] = []
    spaces["repos"] = []
    text = build(spaces).text
    assert "# Memory categories in use\n\nnone yet" in text
    assert "# Repositories" not in text


def test_fingerprints_stable_and_sensitive():
    a = build(make_spaces())
    b = build(copy.deepcopy(make_spaces()))
    assert a == b
    assert len(a.fingerprint_system) == 64

    changed_soul = make_spaces()
    changed_soul["files"]["_soul"] = SOUL + "One more rule.\n"
    c = build(changed_soul)
    assert c.fingerprint_identity != a.fingerprint_identity
    assert c.fingerprint_system != a.fingerprint_system

    changed_skill = make_spaces()
    changed_skill["files"]["_core"] = "CORE SKILL v2"
    d = build(changed_skill)
    assert d.fingerprint_identity == a.fingerprint_identity
    assert d.fingerprint_system != a.fingerprint_system

    non_prompt = make_spaces()
    non_prompt["env_prefix"] = "/somewhere/else"
    non_prompt["unknown_field"] = {"x": 1}
    assert build(non_prompt) == a


def test_input_order_does_not_matter():
    spaces = make_spaces()
    shuffled = make_spaces()
    shuffled["files"] = dict(reversed(list(spaces["files"].items())))
    shuffled["repos"] = list(reversed(spaces["repos"]))
    shuffled["memory_categories"] = ["datasets", "people", "datasets"]
    ctx = RuntimeContext(**{**CONTEXT.__dict__, "installed_apps": ("chat", "llm")})
    assert build(shuffled, context=ctx) == build(spaces)


def test_no_soul():
    spaces = make_spaces()
    del spaces["files"]["_soul"]
    prompt = build(spaces)
    assert prompt.text.startswith("CORE SKILL")


@pytest.mark.parametrize(
    ("text", "summary"),
    [
        ("# Title\n\nbody", "Title"),
        ("\n\n  plain first line\nsecond", "plain first line"),
        ("---\nname: x\ndescription: 'From front matter'\n---\n# T", "From front matter"),
        ("---\nname: x\n---\n\n## After front matter", "After front matter"),
        ("", "(empty)"),
        ("x" * 500, "x" * 159 + "…"),
    ],
)
def test_skill_summary(text, summary):
    assert skill_summary(text) == summary


def test_user_message_header_view_and_attachments():
    png = File(media_type="image/png", data=b"\x89PNG", name="plot.png")
    msg = user_message(
        "why is this slow?",
        at="2025-01-02T03:04:05.678Z",
        view={"path": "work/a.ipynb", "cell": 3, "selection": "df.groupby('k')\n.sum()"},
        attachments=(png,),
    )
    assert msg.role == "user"
    assert isinstance(msg.parts[0], Text)
    assert msg.parts[1] == png
    text = msg.parts[0].text
    first = text.splitlines()[0]
    assert first == (
        "[sent 2025-01-02T03:04:05.678Z; the person has `work/a.ipynb` open, at cell 3;"
        " attached: plot.png]"
    )
    assert "> df.groupby('k')\n> .sum()" in text
    assert text.endswith("\n\nwhy is this slow?")


def test_user_message_minimal():
    msg = user_message("hi", at="2025-01-02T03:04:05.678Z")
    assert msg.parts == (Text(text="[sent 2025-01-02T03:04:05.678Z]\n\nhi"),)


def test_the_runtime_context_names_the_kernels_data_packages() -> None:
    from jupyter_agent.core.loop.prompt import RuntimeContext, build_system, kernel_packages_of

    spaces = {"files": {}, "kernel_packages": [["numpy", "2.4.6"], ["pandas", "3.1.1"], "bad"]}
    packages = kernel_packages_of(spaces)
    assert packages == (("numpy", "2.4.6"), ("pandas", "3.1.1"))
    base = RuntimeContext(agent_space="", chat_id="c", agent_name="agent", installed_apps=())
    with_them = build_system(spaces, tools=(), apps=(), context=replace(base, packages=packages))
    without = build_system(spaces, tools=(), apps=(), context=base)
    assert "- Data packages the kernel can import: numpy 2.4.6, pandas 3.1.1" in with_them.text
    assert "Data packages" not in without.text  # a log recorded before: the prompt as it was
    assert kernel_packages_of({"files": {}}) == ()


def test_kernel_packages_skip_what_metadata_cannot_tell(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib import metadata

    from jupyter_agent.runtime.settings import packages

    answers = {"numpy": "2.4.6", "pandas": None, "scipy": ValueError("broken metadata")}

    def version(name: str) -> Any:
        answer = answers.get(name, metadata.PackageNotFoundError(name))
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(packages.metadata, "version", version)
    assert packages.kernel_packages.__wrapped__() == (("numpy", "2.4.6"),)


def test_user_message_lists_the_mentions_after_the_selection() -> None:
    view = {
        "path": "work/a.ipynb",
        "cell": 3,
        "selection": "df.head()",
        "mentions": [
            {"kind": "cell", "cell": 5, "cell_id": "9f1c"},
            {
                "kind": "variable",
                "name": "df",
                "summary": "DataFrame 1,000 x 2 (a: int64, b: object)",
            },
            {"kind": "variable", "name": "n"},
            "not a mention",
        ],
    }
    text = user_message("compare these", at="2025-01-02T03:04:05.678Z", view=view).parts[0]
    assert isinstance(text, Text)
    assert text.text.splitlines()[1:] == [
        "Selected:",
        "> df.head()",
        "Mentioned:",
        "- cell 5 (id `9f1c`) of `work/a.ipynb`",
        "- `df`, a variable of the person's kernel: DataFrame 1,000 x 2 (a: int64, b: object)",
        "- `n`, a variable of the person's kernel",
        "",
        "compare these",
    ]
    # A view without mentions (every recorded one) renders as before.
    plain = user_message("x", at="t", view={"path": "a.ipynb", "mentions": []}).parts[0]
    assert isinstance(plain, Text)
    assert "Mentioned" not in plain.text
