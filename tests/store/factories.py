"""Builders of turn records and run summaries for the store tests, and what a test of an
older schema runs past the Store (:func:`sql`, :func:`queue_table`)."""

from __future__ import annotations

from sqlalchemy import create_engine, text

from jupyter_agent.core.loop.machine import PROGRAM
from jupyter_agent.core.turns import Reply, RunSummary, Steering, TurnLLM, TurnRecord
from jupyter_agent.messages import Usage
from jupyter_agent.store import migration_steps


def iso(n: int) -> str:
    """A distinct ISO-8601 UTC time per ``n`` (seconds after a fixed start), sortable."""
    day, rest = divmod(n, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    return (
        f"2024-{1 + day // 28:02d}-{1 + day % 28:02d}T{hours:02d}:{minutes:02d}:{seconds:02d}.000Z"
    )


def make_turn(
    n: int,
    *,
    chat_id: str = "chat_01A",
    created: str | None = None,
    turn_id: str | None = None,
    run_id: str | None = None,
    end_cause: str = "done",
) -> TurnRecord:
    """A fully populated turn (every field differs from its default)."""
    return TurnRecord(
        id=turn_id or f"turn_{n:06d}",
        chat_id=chat_id,
        run_id=run_id or f"run_{n:06d}",
        user_text=f"question {n}: plot é→π 🚀",
        created=created or iso(n),
        llm=TurnLLM(
            stop_reason="done" if end_cause == "done" else "wrapup",
            end_cause=end_cause,  # type: ignore[arg-type]
            model_calls=3 + n,
            cells=2,
            usage=Usage(
                input_tokens=1000 + n,
                output_tokens=200,
                cache_read_tokens=5000,
                cache_write_tokens=40,
                reasoning_tokens=7,
            ),
            cost=0.0125 if n % 2 else None,
            fingerprints={"system": f"sys{n}", "identity": "id1", "tools": "t9"},
        ),
        steering=(Steering(text="also label the axes", at=iso(n)),),
        replies=(Reply(text="working on it", done=False), Reply(text=f"answer {n}", done=True)),
        from_agent="analyst",
        interrupted=n % 3 == 0,
        duration_ms=1234 + n,
        model="claude-test",
    )


def make_run(
    n: int,
    *,
    program: str = PROGRAM,
    status: str = "done",
    started: str | None = None,
    run_id: str | None = None,
    chat_id: str = "chat_01A",
) -> RunSummary:
    """A fully populated run summary."""
    return RunSummary(
        run_id=run_id or f"run_{n:06d}",
        chat_id=chat_id,
        program=program,
        status=status,  # type: ignore[arg-type]
        started=started or iso(n),
        ended=None if status == "running" else iso(n + 5),
        model="claude-test",
        model_calls=4,
        cells=n,
        usage=Usage(input_tokens=n, output_tokens=2, cache_read_tokens=3, cache_write_tokens=4),
        cost=0.5 if n % 2 else None,
        stop_reason=None if status == "running" else "done",
        end_cause=None if status == "running" else "done",
    )


def sql(db_url: str, statement: str) -> None:
    """Run ``statement`` on the database past the Store (an older schema's test)."""
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.begin() as conn:
            conn.execute(text(statement))
    finally:
        engine.dispose()


def queue_table(db_url: str) -> None:
    """Add the recall queue (v16) to an older schema: today's Store queues its turns."""
    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.begin() as conn:
            migration_steps.v16(conn)
    finally:
        engine.dispose()
