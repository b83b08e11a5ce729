"""``history@v1`` driven by hand (no I/O): the effects it asks, its prompt, its store write."""

from __future__ import annotations

from typing import Any

from jupyter_agent.core.history.program import BUDGET_TOKENS, HISTORY_PROGRAM, HistoryOutcome
from jupyter_agent.core.loop.programs import PROGRAMS, make
from jupyter_agent.core.loop.prompt import RuntimeContext, build_system
from tests.core.test_loop_step import Stepper, reply, text

CLASSIFY = {"provider": "fake", "model": "claude-haiku-4-5", "base_url": "http://127.0.0.1:9"}
CODEGEN = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": "http://127.0.0.1:9"}
SKILL = "# History\n\nKEEP THE GOALS, FACTS, NAMES AND OPEN QUESTIONS."


def job(level: int = 1, first: int = 1, last: int = 3, items: list[str] | None = None) -> Any:
    return {
        "chat_id": "chat_1",
        "level": level,
        "first_turn": first,
        "last_turn": last,
        "items": items
        or [
            "User: the sales file is data/sales.csv\n\nAgent: read it: 1,204 rows",
            "User: total revenue?\n\nAgent: revenue = 48,210.50 EUR",
            "User: plot it by month\n\nAgent: wrote plot.png",
        ],
    }


def system_text(body: dict[str, Any]) -> str:
    return "".join(b["text"] for b in body["system"])


def prompt_text(body: dict[str, Any]) -> str:
    (message,) = body["messages"]
    content = message["content"]
    return content if isinstance(content, str) else "".join(b["text"] for b in content)


def start(job_value: Any = None, spaces: Any = None) -> Stepper:
    s = Stepper(make(HISTORY_PROGRAM, "run_h", "chat_1"))
    assert s.answer("config.get", job_value or job()).data == {"key": "history_job"}
    assert s.answer("config.get", spaces or {"files": {"_history": SKILL}}).data == {
        "key": "spaces"
    }
    return s


def test_registered_with_every_toolcaller() -> None:
    assert set(PROGRAMS) == {f"toolcaller@v{n}" for n in range(1, 9)} | {
        "history@v1",
        "title@v1",
    }


def test_one_classify_call_then_chunk_store() -> None:
    s = start()
    assert s.answer("config.get", CLASSIFY).data == {"key": "llm.tier.classify"}
    assert s.answer("config.get", None).data == {"key": "llm.profile.claude-haiku-4-5"}
    post = s.answer("http.post", reply(text("  - sales in data/sales.csv: 48,210.50 EUR  ")))
    body = post.data["json"]
    assert body["model"] == "claude-haiku-4-5"  # the classify tier's model
    assert body["max_tokens"] >= BUDGET_TOKENS[1]
    assert "tools" not in body
    assert system_text(body) == SKILL
    prompt = prompt_text(body)
    for item in job()["items"]:
        assert item in prompt
    assert '<turn n="1">' in prompt
    assert '<turn n="3">' in prompt
    assert f"at most {BUDGET_TOKENS[1]} tokens" in prompt
    store = s.answer("chunk.store", {"stored": True})
    assert store.data == {
        "level": 1,
        "first_turn": 1,
        "last_turn": 3,
        "text": "- sales in data/sales.csv: 48,210.50 EUR",
        "model": "claude-haiku-4-5",
    }
    assert s.returned
    outcome = s.value
    assert isinstance(outcome, HistoryOutcome)
    assert outcome.ok
    assert outcome.stored
    assert outcome.model_calls == 1
    assert outcome.usage.input_tokens == 10
    assert outcome.usage.output_tokens == 2


def test_falls_back_to_codegen_when_classify_cannot_be_used() -> None:
    s = start()
    s.answer("config.get", None)  # llm.tier.classify: not configured (and no fallback given)
    assert s.answer("config.get", CODEGEN).data == {"key": "llm.tier.codegen"}
    s.answer("config.get", None)
    post = s.answer("http.post", reply(text("summary")))
    assert post.data["json"]["model"] == "claude-sonnet-4-5"
    assert s.answer("chunk.store", {"stored": False}).data["model"] == "claude-sonnet-4-5"
    assert s.value.ok
    assert not s.value.stored


def test_no_tier_is_an_error_and_stores_nothing() -> None:
    s = start()
    s.answer("config.get", None)
    s.answer("config.get", None)  # codegen neither
    assert s.returned
    assert not s.value.ok
    assert "no tier" in (s.value.error or "")


def test_a_failed_call_is_an_error_and_stores_nothing() -> None:
    s = start()
    s.answer("config.get", CLASSIFY)
    s.answer("config.get", None)
    s.answer(
        "http.post",
        None,
        error={"type": "ProviderStatusError", "message": "provider answered 503", "status": 503},
    )
    assert s.returned  # no chunk.store asked
    assert not s.value.ok
    assert s.value.model_calls == 1
    assert "503" in (s.value.error or "")


def test_an_empty_reply_is_an_error() -> None:
    s = start()
    s.answer("config.get", CLASSIFY)
    s.answer("config.get", None)
    s.answer("http.post", reply(text("   ")))
    assert s.returned
    assert not s.value.ok


def test_level_2_merges_level_1_summaries() -> None:
    items = [f"summary {n}: fact{n}=value{n}" for n in range(5)]
    s = start(job(level=2, first=1, last=50, items=items))
    s.answer("config.get", CLASSIFY)
    s.answer("config.get", None)
    post = s.answer("http.post", reply(text("merged")))
    prompt = prompt_text(post.data["json"])
    assert '<summary turns="1-10">' in prompt
    assert '<summary turns="41-50">' in prompt
    assert all(item in prompt for item in items)
    assert f"at most {BUDGET_TOKENS[2]} tokens" in prompt
    assert s.answer("chunk.store", {"stored": True}).data["level"] == 2


def test_without_a_history_skill_the_default_prompt_is_used() -> None:
    s = start(spaces={"files": {}})
    s.answer("config.get", CLASSIFY)
    s.answer("config.get", None)
    post = s.answer("http.post", reply(text("x")))
    assert system_text(post.data["json"]).startswith("# History summaries")


def test_a_bad_job_asks_nothing_more() -> None:
    s = Stepper(make(HISTORY_PROGRAM, "run_h", "chat_1"))
    s.answer("config.get", {"level": 3})
    assert s.returned
    assert not s.value.ok


def test_the_history_skill_is_not_in_the_chat_system_prompt() -> None:
    spaces = {"files": {"_core": "CORE", "_history": SKILL, "_other": "OTHER"}}
    system = build_system(
        spaces,
        tools=(),
        apps=(),
        context=RuntimeContext(
            agent_space="/s", chat_id="chat_1", agent_name="agent", installed_apps=()
        ),
    ).text
    assert "OTHER" in system
    assert "CORE" in system
    assert "KEEP THE GOALS" not in system
