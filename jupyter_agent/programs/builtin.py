"""The base layer: the programs the package ships, with their content hashes.

:data:`BUILTIN` maps ``name@vN`` to a :class:`BuiltinProgram`: the chat loop's versions
(``toolcaller@v1..v8``, run programs), the history program ``history@v1`` (a run
program), the naming program ``title@v1`` (a run program of no deployable family), and
the sub-programs the loop is made of, ``llm@v1`` (the adapters: request building and reply
parsing) and ``autorecall@v1`` (the recall step of ``toolcaller@v4`` and later).
A run program's ``uses`` are the sub-programs its runs record after it.

A built-in's hash covers its name and the text of the package modules that make it
(:attr:`BuiltinProgram.modules`, read once, lazily): it changes when those files change.
Built-in versions keep their behaviour across builds (their recorded logs replay byte for
byte: the package's replay tests), so a replay of a run recorded with another build of a
built-in says so and goes on; a *deployed* version's hash must match exactly.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final, Literal

from jupyter_agent.core.loop import programs as core_programs
from jupyter_agent.effects import EffectGen
from jupyter_agent.programs.refs import ProgramRef, family_of

__all__ = [
    "BUILTIN",
    "DEFAULTS",
    "RUN_FAMILIES",
    "SUB_FAMILIES",
    "BuiltinProgram",
    "Factory",
    "builtin_hash",
    "builtin_ref",
    "latest_builtin",
    "run_refs",
]

Factory = Callable[[str, str], EffectGen[Any]]
"""``(run_id, chat_id) -> the program's generator``: every run program's entry point."""

#: Families whose programs run as runs of their own (deployable).
RUN_FAMILIES: Final = ("toolcaller", "history")
#: Families that run inside a run program (shipped by the package only).
SUB_FAMILIES: Final = ("llm", "autorecall")
#: The version a new run of each run family uses when nothing is deployed.
DEFAULTS: Final = {"toolcaller": "toolcaller@v8", "history": "history@v1"}

_LOOP: Final = (
    "core/loop/machine.py",
    "core/loop/steps.py",
    "core/loop/approval.py",
    "core/events/steps.py",
    "core/loop/prompt.py",
    "core/digest/render.py",
    "core/digest/parts.py",
    "core/digest/record.py",
    "core/digest/cells.py",
    "core/digest/cell_status.py",
    "core/digest/tracebacks.py",
    "core/loop/inbox.py",
    "core/loop/runstate.py",
    "core/turns.py",
    "core/loop/apps.py",
    "core/mcp/catalogue.py",
    "tools.py",
    "effects.py",
)
#: v7's modules: its set-up's too (the start read, the opening steps).
_LOOP_V7: Final = (*_LOOP, "core/loop/opening.py", "core/loop/start.py")
_LLM: Final = (
    "llm/chat.py",
    "llm/anthropic.py",
    "llm/openai.py",
    "llm/openai_compatible.py",
    "llm/openai_responses.py",
    "llm/fenced.py",
    "llm/spec.py",
    "llm/tiers.py",
    "llm/profiles.py",
    "messages.py",
)
_HISTORY: Final = (
    "core/history/program.py",
    "core/history/window.py",
    "core/history/pick.py",
    "core/history/chunks.py",
    "core/tokens.py",
)
_RECALL: Final = (
    "core/memory/program.py",
    "core/memory/recall.py",
    "core/memory/terms.py",
    "core/memory/hybrid.py",
    "core/memory/records.py",
    "core/memory/credentials.py",
)


@dataclass(frozen=True, kw_only=True)
class BuiltinProgram:
    """One built-in version: ``kind`` run (an entry point, :attr:`factory`) or sub."""

    key: str
    kind: Literal["run", "sub"]
    modules: tuple[str, ...]
    uses: tuple[str, ...] = ()
    description: str = ""

    @property
    def factory(self) -> Factory | None:
        """The entry point of a run program (None for a sub-program)."""
        if self.kind != "run":
            return None
        key = self.key

        def factory(run_id: str, chat_id: str) -> EffectGen[Any]:
            return core_programs.make(key, run_id, chat_id)

        return factory


def _toolcaller(version: int, uses: tuple[str, ...], description: str) -> BuiltinProgram:
    return BuiltinProgram(
        key=f"toolcaller@v{version}",
        kind="run",
        modules=_LOOP_V7 if version >= 7 else _LOOP,
        uses=uses,
        description=description,
    )


BUILTIN: Final[dict[str, BuiltinProgram]] = {
    p.key: p
    for p in (
        _toolcaller(1, ("llm@v1",), "the chat loop: the first version"),
        _toolcaller(2, ("llm@v1",), "a failed model call counts in modelCalls"),
        _toolcaller(3, ("llm@v1", "history@v1"), "reads the chat's window, not its whole history"),
        _toolcaller(
            4, ("llm@v1", "history@v1", "autorecall@v1"), "memory and recall (autorecall@v1)"
        ),
        _toolcaller(
            5,
            ("llm@v1", "history@v1", "autorecall@v1"),
            "the person's notebook, approvals and notices",
        ),
        _toolcaller(
            6,
            ("llm@v1", "history@v1", "autorecall@v1"),
            "tools of the configured MCP servers (the mcp app)",
        ),
        _toolcaller(
            7,
            ("llm@v1", "history@v1", "autorecall@v1"),
            "one config read at the start; recall only when something is findable",
        ),
        _toolcaller(
            8,
            ("llm@v1", "history@v1", "autorecall@v1"),
            "a read-only look at the person's live kernel; a copy of a value; code run there "
            "only with their approval",
        ),
        BuiltinProgram(
            key="history@v1",
            kind="run",
            modules=_HISTORY,
            uses=("llm@v1",),
            description="turns, chunk summaries and the boot window",
        ),
        BuiltinProgram(
            key="title@v1",
            kind="run",
            modules=("core/history/naming.py",),
            uses=("llm@v1",),
            description="a chat's name after its first turn (built in only, not deployable)",
        ),
        BuiltinProgram(key="llm@v1", kind="sub", modules=_LLM, description="the adapters"),
        BuiltinProgram(
            key="autorecall@v1",
            kind="sub",
            modules=_RECALL,
            description="recall injected before the first model call",
        ),
    )
}


@functools.cache
def builtin_hash(key: str) -> str:
    """The full sha256 hex of the built-in ``key`` (its name and its modules' bytes);
    KeyError for a key that is not built in."""
    program = BUILTIN[key]
    digest = hashlib.sha256(b"jupyter-agent builtin\0" + key.encode() + b"\0")
    package = resources.files("jupyter_agent")
    for module in program.modules:
        digest.update(module.encode() + b"\0")
        try:
            digest.update((package / module).read_bytes())
        except OSError:  # a packaging without sources: the name alone identifies it
            digest.update(b"<missing>")
        digest.update(b"\0")
    return digest.hexdigest()


def builtin_ref(key: str) -> ProgramRef:
    """The reference (with its hash) of the built-in ``key``."""
    name, _, version = key.partition("@v")
    return ProgramRef(name, int(version), builtin_hash(key))


def latest_builtin(family: str) -> int:
    """The highest built-in version of ``family`` (0 when none is built in)."""
    return max(
        (int(key.partition("@v")[2]) for key in BUILTIN if family_of(key) == family), default=0
    )


def run_refs(key: str) -> tuple[ProgramRef, ...]:
    """The built-in run program ``key`` and the sub-programs it uses, with their hashes:
    what its runs record as ``programs``."""
    return (builtin_ref(key), *(builtin_ref(sub) for sub in BUILTIN[key].uses))
