"""Run stats: per model call tokens (cached normalised), tier, cost per profile, totals."""

from __future__ import annotations

import json

import pytest

from jupyter_agent.effects import Effect
from jupyter_agent.trace.log import read_log
from jupyter_agent.trace.stats import USAGE_KEYS, run_stats
from tests.trace.logs_support import (
    LogWriter,
    anthropic_request,
    fixture,
    openai_request,
    reply,
    write_stats_run,
)

SONNET_COST = (2095 * 3 + 503 * 15 + 8192 * 0.3 + 1024 * 3.75) / 1e6
O3_COST = (86 * 4.0 + 300 * 8 + 1920 * 0.5) / 1e6  # price_in overridden to 4.0
TOOL_USE_COST = (472 * 3 + 91 * 15) / 1e6


@pytest.fixture
def stats(tmp_path):
    path = tmp_path / "run.jsonl"
    seqs = write_stats_run(path)
    return run_stats(read_log(path)), seqs


def _by_seq(body):
    return {c["seq"]: c for c in body["calls"]}


def test_every_call_with_a_result_in_seq_order(stats):
    body, seqs = stats
    assert body["run_id"] == "run_01ST"
    order = [seqs[k] for k in ("first", "nested", "failed", "after", "cancelled")]
    assert [c["seq"] for c in body["calls"]] == order
    # The answer is plain JSON (the REST body).
    assert json.loads(json.dumps(body)) == body


def test_anthropic_call_usage_and_cost(stats):
    body, seqs = stats
    call = _by_seq(body)[seqs["first"]]
    assert call["tier"] == "codegen"
    assert call["model"] == "claude-sonnet-4-5-20250929"  # what the reply names
    assert (call["in"], call["out"], call["cacheRead"], call["cacheWrite"]) == (
        2095,
        503,
        8192,
        1024,
    )
    assert call["cost"] == pytest.approx(SONNET_COST)
    assert call["status"] == "ok"
    assert call["attempts"] == 1
    assert call["nested"] is False


def test_nested_openai_call_has_its_own_tier_cached_tokens_and_profile_override(stats):
    body, seqs = stats
    call = _by_seq(body)[seqs["nested"]]
    assert call["nested"] is True
    assert call["tier"] == "classify"
    assert call["model"] == "o3-2025-04-16"
    # OpenAI: prompt 2006 of which 1920 cached -> in 86; reasoning is part of out.
    assert (call["in"], call["out"], call["cacheRead"], call["reasoning"]) == (86, 300, 1920, 192)
    assert call["cost"] == pytest.approx(O3_COST)


def test_top_level_call_after_a_nested_one_keeps_the_codegen_tier(stats):
    body, seqs = stats
    call = _by_seq(body)[seqs["after"]]
    assert call["tier"] == "codegen"
    assert call["attempts"] == 2
    assert call["cost"] == pytest.approx(TOOL_USE_COST)


def test_failed_and_cancelled_calls(stats):
    body, seqs = stats
    failed = _by_seq(body)[seqs["failed"]]
    assert failed["status"] == "failed"
    assert failed["attempts"] == 3
    assert "529" in failed["error"]
    assert failed["cost"] is None
    assert all(failed[k] == 0 for k in USAGE_KEYS)
    cancelled = _by_seq(body)[seqs["cancelled"]]
    assert cancelled["status"] == "cancelled"
    assert cancelled["cost"] is None


def test_totals(stats):
    body, _ = stats
    totals = body["totals"]
    assert totals["calls"] == 5
    assert totals["failed"] == 1
    assert totals["cancelled"] == 1
    assert totals["in"] == 2095 + 86 + 472
    assert totals["out"] == 503 + 300 + 91
    assert totals["cacheRead"] == 8192 + 1920
    assert totals["cacheWrite"] == 1024
    assert totals["reasoning"] == 192
    # Failed and cancelled calls have no usage: they do not make the total unknown.
    assert totals["cost"] == pytest.approx(SONNET_COST + O3_COST + TOOL_USE_COST)


def test_unknown_price_makes_the_total_cost_unknown(tmp_path):
    path = tmp_path / "run.jsonl"
    w = LogWriter(path)
    w.opening()
    w.effect("http.post", anthropic_request(), reply(fixture("anthropic_tool_use.json")))
    w.effect(
        "config.get",
        {"key": "llm.tier.classify"},
        {"provider": "openai-compatible", "model": "llama3.2", "base_url": "http://127.0.0.1:9/v1"},
    )
    w.effect("config.get", {"key": "llm.profile.llama3.2"}, None)
    compat = {**openai_request("llama3.2"), "url": "http://127.0.0.1:9/v1/chat/completions"}
    w.effect("http.post", compat, reply(fixture("vllm_reasoning_content.json")))
    w.close()
    body = run_stats(read_log(path))
    priced, unpriced = body["calls"]
    assert priced["cost"] == pytest.approx(TOOL_USE_COST)
    assert unpriced["tier"] == "classify"
    assert unpriced["cost"] is None
    assert unpriced["out"] == 102
    assert body["totals"]["cost"] is None


def test_responses_wire_without_a_tier_and_unfinished_or_http_error_calls(tmp_path):
    path = tmp_path / "run.jsonl"
    w = LogWriter(path)
    responses = {**openai_request("o4-mini"), "wire": "openai-responses"}
    ok = w.effect("http.post", responses, reply(fixture("openai_responses_reasoning_call.json")))
    bad = w.effect("http.post", responses, {"status": 400, "json": {"error": {}}, "attempts": []})
    unreadable = w.effect("http.post", responses, reply({"output": "not a list"}))
    w.log.intent(Effect(name="http.post", data=responses))  # the run stopped mid-call
    w.close()
    body = run_stats(read_log(path))
    calls = _by_seq(body)
    assert sorted(calls) == [ok, bad, unreadable]
    call = calls[ok]
    assert call["tier"] is None
    assert (call["in"], call["out"], call["cacheRead"], call["reasoning"]) == (200, 150, 128, 128)
    # No tier: the profile of the model the request named prices it.
    assert call["cost"] == pytest.approx((200 * 1.10 + 150 * 4.40 + 128 * 0.275) / 1e6)
    assert calls[bad]["status"] == "failed"
    assert calls[bad]["http_status"] == 400
    assert calls[unreadable]["status"] == "failed"
    assert body["totals"]["calls"] == 3


def test_fake_provider_tier_reads_the_anthropic_wire(tmp_path):
    path = tmp_path / "run.jsonl"
    w = LogWriter(path)
    tier = {"provider": "fake", "model": "claude-sonnet-4-5", "base_url": "http://127.0.0.1:9"}
    w.opening(codegen=tier)
    w.effect(
        "http.post",
        {"url": "u", "headers": {}, "json": {}},
        reply(fixture("anthropic_tool_use.json")),
    )
    w.close()
    (call,) = run_stats(read_log(path))["calls"]
    assert (call["tier"], call["in"], call["out"]) == ("codegen", 472, 91)
    assert call["cost"] == pytest.approx(TOOL_USE_COST)
