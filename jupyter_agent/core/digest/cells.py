"""The structured cell result: what the agent kernel reports for one cell.

This is the contract between the kernel (which captures it and sends it as JSON with the
execute reply), the driver (which logs it as the ``cell.run`` result), the digest (which
renders it for the model) and the notebook export (which uses ``outputs``).

- ``prints``: one :class:`Value` per ``print()`` call (other stdout grouped per flush),
  numbered from 1: ``prints[i - 1]`` is what ``values.get(cell_id, i)`` returns. A cell
  that printed very many values sends only the first and the last ones:
  ``prints_omitted`` (:class:`OmittedPrints`) then names the run of values left out (the
  kernel keeps them for ``values.get``), and :meth:`CellResult.print_number` gives each
  kept value's number.
- ``last``: the cell's last expression value (``values.get(cell_id, "last")``).
- ``displays``: rich display mime bundles (``display()``, figures), in order.
- ``error``: ename, evalue, traceback lines (ANSI kept; the digest strips it).
- ``outputs``: the cell's outputs in nbformat's shapes, bounded; ``outputs_truncated``
  marks that some were cut.
- ``app_calls``: the cell's in-cell app effect records, in order.
- ``model_calls``: model calls the host made for the cell's app calls (``llm.chat``), each
  ``{tier, model, usage: {in, out, ...}, cost}``, added by the driver so the turn counts
  every model call of the run.

The JSON comes from the types through :mod:`jupyter_agent.codec` (fields in wire order);
``to_json``/``from_json`` are thin names for it.

A :class:`Value` carries at most a bounded prefix of the text (``text``) and the length of
the whole value the kernel keeps (``chars``), so a large value is never lost: the digest
stubs it and ``values.get`` returns it whole in a later cell.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from jupyter_agent.codec import OMIT_NONE, dump_dict, load

__all__ = [
    "AppCallRecord",
    "BashResult",
    "CellError",
    "CellResult",
    "LastValue",
    "OmittedPrints",
    "Value",
]


@dataclass(frozen=True, kw_only=True)
class Value:
    """A printed or last value: ``text`` is the (possibly cut) text, ``chars`` the full length."""

    text: str
    chars: int = -1

    def __post_init__(self) -> None:
        if self.chars < 0:
            object.__setattr__(self, "chars", len(self.text))

    @property
    def truncated(self) -> bool:
        """True when ``text`` is only a prefix of the value kept in the kernel."""
        return self.chars > len(self.text)

    def to_json(self) -> dict[str, Any]:
        return dump_dict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Value:
        return load(cls, data)


@dataclass(frozen=True, kw_only=True)
class LastValue:
    """The last expression value: its repr and its mime bundle (without ``text/plain``)."""

    repr: Value
    mime: dict[str, Any] = field(default_factory=dict)
    type_name: str = ""

    def to_json(self) -> dict[str, Any]:
        return dump_dict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LastValue:
        return load(cls, data)


@dataclass(frozen=True, kw_only=True)
class CellError:
    """An exception raised by the cell."""

    ename: str
    evalue: str
    traceback: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return dump_dict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CellError:
        return load(cls, data)


@dataclass(frozen=True, kw_only=True)
class AppCallRecord:
    """One in-cell app call: its log seq, what was called, and how it went.

    ``batch`` is None for a call made on its own; calls fanned out by one ``batch(...)``
    share the same ``batch`` number (unique within the cell), so the digest can tell
    sequential calls from a fan-out.
    """

    seq: int | None
    app: str
    method: str
    args: Any = None
    ok: bool = True
    mutation: bool = False
    error: str | None = None
    batch: int | None = None

    @property
    def name(self) -> str:
        """``app.method``, the name the digest groups by."""
        return f"{self.app}.{self.method}"

    def to_json(self) -> dict[str, Any]:
        return dump_dict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AppCallRecord:
        return load(cls, data)


@dataclass(frozen=True, kw_only=True)
class OmittedPrints:
    """Printed values a result leaves out: numbers ``first`` to ``first + count - 1``,
    ``chars`` characters in all. They come right after ``prints[first - 2]``."""

    first: int
    count: int
    chars: int = 0


@dataclass(frozen=True, kw_only=True)
class CellResult:
    """Everything the kernel reports about one cell (see the module docstring)."""

    cell_id: str
    prints: tuple[Value, ...] = ()
    prints_omitted: OmittedPrints | None = field(default=None, metadata=OMIT_NONE)
    stderr: Value | None = None
    last: LastValue | None = None
    displays: tuple[dict[str, Any], ...] = ()
    error: CellError | None = None
    outputs: tuple[dict[str, Any], ...] = ()
    outputs_truncated: bool = False
    execution_count: int | None = None
    app_calls: tuple[AppCallRecord, ...] = ()
    duration_s: float = 0.0
    model_calls: tuple[dict[str, Any], ...] = ()

    @property
    def failed(self) -> bool:
        """True when the cell raised."""
        return self.error is not None

    @property
    def prints_total(self) -> int:
        """How many values the cell printed, the omitted ones included."""
        gap = self.prints_omitted
        return len(self.prints) + (gap.count if gap is not None else 0)

    def print_number(self, index: int) -> int:
        """The ``values.get`` number of ``prints[index]`` (0-based index, 1-based number)."""
        gap = self.prints_omitted
        if gap is not None and index + 1 >= gap.first:
            return index + 1 + gap.count
        return index + 1

    def to_json(self) -> dict[str, Any]:
        return dump_dict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CellResult:
        return load(cls, data)


@dataclass(frozen=True, kw_only=True)
class BashResult:
    """One ``bash`` tool call's outcome (also bound as ``sh.last`` in the kernel)."""

    command: str
    stdout: Value
    stderr: Value
    returncode: int | None
    timed_out: bool = False
    duration_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return dump_dict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BashResult:
        return load(cls, data)
