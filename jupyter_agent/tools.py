"""The model's tools as data: ``run_cell`` and ``bash``.

Adapters render a :class:`ToolSpec` into their provider's tool schema (native mode) or
into the system prompt (fenced / xml modes). The tool result's text is the digest.

``toolcaller@v5`` offers :data:`RUN_CELL_V5` / :data:`BASH_V5`: the same tools with an
optional ``writes: bool`` argument (the cell writes or deletes files; the approval policy
``writes`` waits for those, :mod:`jupyter_agent.core.loop.approval`). Older versions keep
:data:`RUN_CELL` / :data:`BASH` exactly (they are in their recorded requests). In the
fenced and xml modes the model marks such a call ```` ```python writes ```` or
``<run_cell writes>`` (:mod:`jupyter_agent.llm.fenced`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["BASH", "BASH_V5", "RUN_CELL", "RUN_CELL_V5", "WRITES", "ToolSpec", "tools_for"]


@dataclass(frozen=True, kw_only=True)
class ToolSpec:
    """One tool: its name, its description (the docstring the model reads), its JSON schema."""

    name: str
    description: str
    input_schema: dict[str, Any] = field(default_factory=dict)

    @property
    def argument(self) -> str:
        """The single string argument the tool takes (``code`` or ``command``)."""
        props = self.input_schema.get("properties", {})
        return next(iter(props)) if props else "input"


RUN_CELL = ToolSpec(
    name="run_cell",
    description=(
        "Run Python code as one cell in this run's persistent IPython kernel. Variables, "
        "imports and functions defined in one cell stay visible in the next cells of this "
        "run (not in later turns). Returns a digest: printed values numbered in order, then "
        "the last expression's value, then the cell's side effects. A value too large for "
        'the digest is replaced by a stub naming the values.get("<cell>", i) call that '
        "returns it whole in a later cell; use that instead of re-running the code."
    ),
    input_schema={
        "type": "object",
        "properties": {"code": {"type": "string", "description": "The Python code to run."}},
        "required": ["code"],
    },
)

BASH = ToolSpec(
    name="bash",
    description=(
        "Run one shell command line on the kernel's machine, in the kernel's working folder, "
        "with a timeout. Returns stdout, stderr and the return code; the same result is bound "
        "as sh.last (stdout, stderr, returncode) in the kernel for the next cell."
    ),
    input_schema={
        "type": "object",
        "properties": {"command": {"type": "string", "description": "The command line to run."}},
        "required": ["command"],
    },
)


#: The ``writes`` argument of the v5 tools (JSON schema).
WRITES: dict[str, Any] = {
    "type": "boolean",
    "description": (
        "true when this writes or deletes files (the person may have to approve it first);"
        " default false."
    ),
}


def _with_writes(spec: ToolSpec) -> ToolSpec:
    schema = dict(spec.input_schema)
    schema["properties"] = {**schema["properties"], "writes": WRITES}
    return ToolSpec(name=spec.name, description=spec.description, input_schema=schema)


RUN_CELL_V5 = _with_writes(RUN_CELL)
BASH_V5 = _with_writes(BASH)


def tools_for(*, bash_enabled: bool, writes: bool = False) -> tuple[ToolSpec, ...]:
    """The tools offered to the model: run_cell always, bash when the runtime allows it;
    ``writes``: the v5 specs, with the ``writes`` argument."""
    cell, bash = (RUN_CELL_V5, BASH_V5) if writes else (RUN_CELL, BASH)
    return (cell, bash) if bash_enabled else (cell,)
