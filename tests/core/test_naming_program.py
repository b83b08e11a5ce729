"""``title@v1`` driven by hand (no I/O): the job it reads, its one call, its guarded rename."""

from __future__ import annotations

from typing import Any

import pytest

from jupyter_agent.core.history.naming import MAX_NAME, SYSTEM, TITLE_PROGRAM, clean_name
from jupyter_agent.core.loop.programs import make
from tests.core.test_loop_step import Stepper, reply, text

CLASSIFY = {"provider": "fake", "model": "claude-haiku-4-5", "base_url": "http://127.0.0.1:9"}
FIRST = "Plot a sine wave and tell me its maximum"
JOB = {
    "chat_id": "chat_1",
    "title": FIRST,
    "user": FIRST,
    "reply": "Plotted y = sin(x) on [0, 2pi]; its maximum is 1.0 at x = pi/2.",
}


def start(job: Any = None) -> Stepper:
    s = Stepper(make(TITLE_PROGRAM, "run_t", "chat_1"))
    assert s.answer("config.get", JOB if job is None else job).data == {"key": "title_job"}
    return s


def test_one_classify_call_then_a_guarded_retitle() -> None:
    s = start()
    assert s.answer("config.get", CLASSIFY).data == {"key": "llm.tier.classify"}
    assert s.answer("config.get", None).data == {"key": "llm.profile.claude-haiku-4-5"}
    post = s.answer("http.post", reply(text('Title: "Sine wave maximum."')))
    body = post.data["json"]
    assert body["model"] == "claude-haiku-4-5"
    assert "tools" not in body
    assert "".join(b["text"] for b in body["system"]) == SYSTEM
    (message,) = body["messages"]
    content = message["content"]
    prompt = content if isinstance(content, str) else "".join(b["text"] for b in content)
    assert FIRST in prompt
    assert "maximum is 1.0" in prompt
    retitle = s.answer("chat.retitle", {"retitled": True})
    assert retitle.data == {"title": "Sine wave maximum", "expected": FIRST}
    assert s.returned
    outcome = s.value
    assert outcome.ok
    assert outcome.stored
    assert outcome.text == "Sine wave maximum"
    assert outcome.model_calls == 1


def test_a_rename_that_landed_first_wins() -> None:
    s = start()
    s.answer("config.get", CLASSIFY)
    s.answer("config.get", None)
    s.answer("http.post", reply(text("Sine wave")))
    s.answer("chat.retitle", {"retitled": False})
    assert s.value.ok
    assert not s.value.stored


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ("   \n ", "no name"),
        ('""', "no name"),
    ],
)
def test_an_empty_name_changes_nothing(answer: str, error: str) -> None:
    s = start()
    s.answer("config.get", CLASSIFY)
    s.answer("config.get", None)
    s.answer("http.post", reply(text(answer)))
    assert s.returned  # no chat.retitle asked
    assert error in (s.value.error or "")


def test_no_classify_tier_and_bad_jobs_are_errors() -> None:
    s = start()
    s.answer("config.get", None)  # llm.tier.classify: none
    assert s.returned
    assert "no classify tier" in (s.value.error or "")
    for bad in ({"chat_id": "c"}, ["x"], {**JOB, "user": "  "}):
        s = start(bad)
        assert s.returned
        assert "title job" in (s.value.error or "")


def test_a_failed_call_and_a_failed_store_are_errors() -> None:
    s = start()
    s.answer("config.get", CLASSIFY)
    s.answer("config.get", None)
    s.answer("http.post", None, error={"type": "ProviderStatusError", "message": "503"})
    assert s.returned
    assert not s.value.ok
    s = start()
    s.answer("config.get", CLASSIFY)
    s.answer("config.get", None)
    s.answer("http.post", reply(text("Sine")))
    s.answer("chat.retitle", None, error={"type": "StoreError", "message": "database locked"})
    assert "database locked" in (s.value.error or "")


def test_clean_name() -> None:
    assert clean_name("**Plotting a sine wave**\nand more") == "Plotting a sine wave"
    assert clean_name("# Name: “Sales by month”") == "Sales by month"
    assert clean_name("  \n\n  Churn model!  ") == "Churn model"
    long = "word " * 40
    cut = clean_name(long)
    assert len(cut) <= MAX_NAME
    assert not cut.endswith(" ")
    assert cut.split() == ["word"] * len(cut.split())
