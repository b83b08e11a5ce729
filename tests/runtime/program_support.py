"""Deployed-program stand-ins for the driver's tests: small programs of the loop's shape,
and a registry answering a chosen version (what ``programs.registry`` answers)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jupyter_agent.core.turns import Reply, TurnLLM, TurnRecord
from jupyter_agent.effects import (
    CHAT_POST,
    CLOCK_NOW,
    HTTP_POST,
    ID_NEW,
    MAILBOX_DRAIN,
    TURN_APPEND,
    Effect,
    EffectGen,
)
from jupyter_agent.exceptions import ProgramMissing
from jupyter_agent.programs.builtin import DEFAULTS, run_refs
from jupyter_agent.programs.refs import ProgramRef

Factory = Callable[[str, str], EffectGen[Any]]


def echo(run_id: str, chat_id: str, *, prefix: str = "echo") -> EffectGen[TurnRecord]:
    """Answers the opening message with ``{prefix}: {text}`` (no model, no kernel)."""
    started = (yield Effect(name=CLOCK_NOW, data={})).data
    items = (yield Effect(name=MAILBOX_DRAIN, data={})).data or []
    text = next((str(i.get("text")) for i in items if i.get("kind") == "message"), "")
    reply = f"{prefix}: {text}"
    yield Effect(name=CHAT_POST, data={"text": reply, "done": True})
    turn_id = (yield Effect(name=ID_NEW, data={"kind": "turn"})).data
    turn = TurnRecord(
        id=str(turn_id),
        chat_id=chat_id,
        run_id=run_id,
        user_text=text,
        replies=(Reply(text=reply, done=True),),
        created=str(started),
        llm=TurnLLM(stop_reason="done", end_cause="done"),
    )
    yield Effect(name=TURN_APPEND, data=turn.to_json())
    return turn


def echo6(run_id: str, chat_id: str) -> EffectGen[TurnRecord]:
    """Another version: another prefix."""
    return (yield from echo(run_id, chat_id, prefix="echo6"))


def boom(run_id: str, chat_id: str) -> EffectGen[TurnRecord]:
    """Takes the message, then raises."""
    yield Effect(name=CLOCK_NOW, data={})
    yield Effect(name=MAILBOX_DRAIN, data={})
    raise ValueError("boom")


def unknown_effect(run_id: str, chat_id: str) -> EffectGen[Any]:
    """Yields an Effect whose name is not in the catalogue (built past its check)."""
    yield Effect(name=MAILBOX_DRAIN, data={})
    bad = object.__new__(Effect)
    for key, value in (("name", "foo.bar"), ("data", {}), ("parent", None)):
        object.__setattr__(bad, key, value)
    yield bad


def not_an_effect(run_id: str, chat_id: str) -> EffectGen[Any]:
    yield Effect(name=MAILBOX_DRAIN, data={})
    yield 42  # type: ignore[misc]


def model_calls(run_id: str, chat_id: str) -> EffectGen[Any]:
    """Calls the model for ever (an unreachable URL: each call fails at once)."""
    yield Effect(name=MAILBOX_DRAIN, data={})
    while True:
        yield Effect(
            name=HTTP_POST,
            data={
                "url": "http://127.0.0.1:9/v1/messages",
                "headers": {},
                "json": {},
                "credential_ref": None,
                "deadline_s": 1,
            },
        )


def spin(run_id: str, chat_id: str) -> EffectGen[Any]:
    """Takes the message, then computes for ever without yielding."""
    yield Effect(name=MAILBOX_DRAIN, data={})
    n = 0
    while True:
        n += 1


def slow_then_echo(run_id: str, chat_id: str, *, hold_s: float = 0.0) -> EffectGen[TurnRecord]:
    yield Effect(name=CLOCK_NOW, data={})
    time.sleep(hold_s)  # in its own thread (deployed): the event loop does not wait
    return (yield from echo(run_id, chat_id))


def fake_hash(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


@dataclass
class Deployed:
    """One "deployed" version: what the registry's Resolved carries."""

    ref: ProgramRef
    factory: Factory
    builtin: bool = False
    note: str | None = None

    @property
    def programs(self) -> tuple[str, ...]:
        uses = run_refs(DEFAULTS["toolcaller"])[1:]
        return (self.ref.text, *(u.text for u in uses))


def deployed(version: int, factory: Factory, name: str = "toolcaller") -> Deployed:
    digest = fake_hash(f"{name}@v{version}:{factory.__name__}")
    return Deployed(ProgramRef(name, version, digest[:12]), factory)


@dataclass
class FakeRegistry:
    """``resolve`` answers :attr:`active` (or raises :attr:`fault`); ``load`` a version
    it was given."""

    active: Deployed | None = None
    versions: dict[str, Deployed] = field(default_factory=dict)
    fault: BaseException | None = None
    resolved: list[str] = field(default_factory=list)

    def activate(self, version: Deployed | None) -> None:
        self.active = version
        if version is not None:
            self.versions[version.ref.key] = version

    def resolve(self, agent: str, family: str) -> Any:
        if self.fault is not None:
            raise self.fault
        if self.active is None:
            from jupyter_agent.runtime.programs.resolve import RunProgram

            program = RunProgram.of_builtin(DEFAULTS[family])
            self.resolved.append(program.ref.text)
            return program
        self.resolved.append(self.active.ref.text)
        return self.active

    def load(self, ref: ProgramRef) -> Any:
        found = self.versions.get(ref.key)
        if found is None:
            raise ProgramMissing(f"no {ref.text}", ref=ref.text)
        return found
