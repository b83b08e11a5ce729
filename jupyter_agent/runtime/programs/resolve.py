"""Which program a new run runs: resolved through the program registry.

:func:`resolve_run_program` asks the registry (``RunServices.programs``, a
:class:`~jupyter_agent.programs.registry.ProgramRegistry`) for the version of a run family
(``toolcaller``, ``history``) active for the run's agent, in a worker thread (the registry
reads the store). No registry: the family's built-in default
(:data:`~jupyter_agent.programs.builtin.DEFAULTS`). A version that fails to load (its
module raises at import: the registry's ProgramFault) still gives a run: its program
fails at its first step with that error, so the run ends ``error`` with a reply naming it
and its log records the failure (``program_error`` after seq 0), like any program fault.

:class:`RunProgram` is what the driver and the run's records need of it: ``ref`` (with its
hash), ``programs`` (the ref texts the run records, its own first), the ``factory``, and
``builtin`` (built-ins step inline; deployed ones in threads under the step deadline).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from jupyter_agent.effects import EffectGen
from jupyter_agent.exceptions import ProgramFault
from jupyter_agent.programs.builtin import BUILTIN, DEFAULTS, Factory, run_refs
from jupyter_agent.programs.refs import ProgramRef, parse_ref
from jupyter_agent.runtime.programs.guard import unloadable

__all__ = ["RunProgram", "resolve_run_program"]

log = logging.getLogger("jupyter_agent.runtime.runs.manager")


@dataclass(frozen=True, kw_only=True)
class RunProgram:
    """The program one run runs (see the module docstring)."""

    ref: ProgramRef
    programs: tuple[str, ...]
    factory: Factory
    builtin: bool

    @property
    def text(self) -> str:
        """``name@vN#hash``: how faults and replies name it."""
        return self.ref.text

    @classmethod
    def of_builtin(cls, key: str) -> RunProgram:
        """The built-in run program ``key`` (``toolcaller@v4``)."""
        factory = BUILTIN[key].factory
        assert factory is not None, f"{key} is not a run program"
        refs = run_refs(key)
        return cls(ref=refs[0], programs=tuple(r.text for r in refs), factory=factory, builtin=True)

    @classmethod
    def of(cls, resolved: Any) -> RunProgram:
        """From the registry's ``Resolved`` (``ref``, ``programs``, ``factory``,
        ``builtin``)."""
        return cls(
            ref=resolved.ref,
            programs=tuple(resolved.programs),
            factory=resolved.factory,
            builtin=bool(resolved.builtin),
        )

    @classmethod
    def failing(cls, fault: ProgramFault) -> RunProgram:
        """A version that could not be loaded: its run fails at once with the cause."""
        try:
            ref = parse_ref(fault.program)
        except ValueError:
            ref = ProgramRef("toolcaller", 1)
        failed = unloadable(ref.text, fault)

        def factory(run_id: str, chat_id: str) -> EffectGen[Any]:
            raise failed
            yield  # pragma: no cover - a generator that fails at its first step

        return cls(ref=ref, programs=(ref.text,), factory=factory, builtin=False)


async def resolve_run_program(
    registry: Any, agent: str, family: str, *, mark: int | None = None
) -> RunProgram:
    """The active version of ``family`` for ``agent`` in ``registry`` (a ProgramRegistry,
    or None: the built-in default; module docstring). Store errors propagate (the run does
    not start: the sender gets the error). ``mark``: the store's activation mark as the
    caller just read it (a message's send reads it with the chat): a version the registry
    resolved at that mark is answered on the loop, with no thread and no read."""
    if registry is None:
        return RunProgram.of_builtin(DEFAULTS[family])
    if mark is not None:
        found = registry.cached(agent, family, mark)
        if found is not None:
            return RunProgram.of(found)
    try:
        resolved = await asyncio.to_thread(registry.resolve, agent, family)
    except ProgramFault as fault:
        log.error(
            "the %s program of agent %s does not load: %s", family, agent, fault, exc_info=fault
        )
        return RunProgram.failing(fault)
    return RunProgram.of(resolved)
