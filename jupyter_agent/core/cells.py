"""The structured cell result: what the agent kernel reports for one cell.

This is the contract between the kernel (which captures it and sends it as JSON with the
execute reply), the driver (which logs it as the ``cell.run`` result), the digest (which
renders it for the model) and the notebook export (which uses ``outputs``).

- ``prints``: one :class:`Value` per ``print()`` call (other stdout grouped per flush),
  numbered from 1: ``prints[i - 1]`` is what ``values.get(cell_id, i)`` returns.
- ``last``: the cell's last expression value (``values.get(cell_id, "last")``).
- ``displays``: rich display mime bundles (``display()``, figures), in order.
- ``error``: ename, evalue, traceback lines (ANSI kept; the digest strips it).
- ``outputs``: the cell's outputs in nbformat's shapes, bounded; ``outputs_truncated``
  marks that some were cut.
- ``app_calls``: the cell's in-cell app effect records, in order.
- ``model_calls``: model calls the host made for the cell's app calls (``llm.chat``), each
  ``{tier, model, usage: {in, out, ...}, cost}``, added by the driver so the turn counts
  every model call of the run.

A :class:`Value` carries at most a bounded prefix of the text (``text``) and the length of
the whole value the kernel keeps (``chars``), so a large value is never lost: the digest
stubs it and ``values.get`` returns it whole in a later cell.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AppCallRecord",
    "BashResult",
    "CellError",
    "CellResult",
    "LastValue",
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
        return {"text": self.text, "chars": self.chars}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Value:
        return cls(text=data["text"], chars=int(data.get("chars", len(data["text"]))))


@dataclass(frozen=True, kw_only=True)
class LastValue:
    """The last expression value: its repr and its mime bundle (without ``text/plain``)."""

    repr: Value
    mime: dict[str, Any] = field(default_factory=dict)
    type_name: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"repr": self.repr.to_json(), "mime": self.mime, "type_name": self.type_name}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LastValue:
        return cls(
            repr=Value.from_json(data["repr"]),
            mime=dict(data.get("mime") or {}),
            type_name=data.get("type_name", ""),
        )


@dataclass(frozen=True, kw_only=True)
class CellError:
    """An exception raised by the cell."""

    ename: str
    evalue: str
    traceback: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"ename": self.ename, "evalue": self.evalue, "traceback": list(self.traceback)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CellError:
        return cls(
            ename=data["ename"], evalue=data["evalue"], traceback=tuple(data.get("traceback", ()))
        )


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
        return {
            "seq": self.seq,
            "app": self.app,
            "method": self.method,
            "args": self.args,
            "ok": self.ok,
            "mutation": self.mutation,
            "error": self.error,
            "batch": self.batch,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AppCallRecord:
        return cls(
            seq=data.get("seq"),
            app=data["app"],
            method=data["method"],
            args=data.get("args"),
            ok=bool(data.get("ok", True)),
            mutation=bool(data.get("mutation", False)),
            error=data.get("error"),
            batch=data.get("batch"),
        )


@dataclass(frozen=True, kw_only=True)
class CellResult:
    """Everything the kernel reports about one cell (see the module docstring)."""

    cell_id: str
    prints: tuple[Value, ...] = ()
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

    def to_json(self) -> dict[str, Any]:
        return {
            "cell_id": self.cell_id,
            "prints": [v.to_json() for v in self.prints],
            "stderr": self.stderr.to_json() if self.stderr else None,
            "last": self.last.to_json() if self.last else None,
            "displays": list(self.displays),
            "error": self.error.to_json() if self.error else None,
            "outputs": list(self.outputs),
            "outputs_truncated": self.outputs_truncated,
            "execution_count": self.execution_count,
            "app_calls": [a.to_json() for a in self.app_calls],
            "duration_s": self.duration_s,
            "model_calls": list(self.model_calls),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CellResult:
        return cls(
            cell_id=data["cell_id"],
            prints=tuple(Value.from_json(v) for v in data.get("prints", ())),
            stderr=Value.from_json(data["stderr"]) if data.get("stderr") else None,
            last=LastValue.from_json(data["last"]) if data.get("last") else None,
            displays=tuple(data.get("displays", ())),
            error=CellError.from_json(data["error"]) if data.get("error") else None,
            outputs=tuple(data.get("outputs", ())),
            outputs_truncated=bool(data.get("outputs_truncated", False)),
            execution_count=data.get("execution_count"),
            app_calls=tuple(AppCallRecord.from_json(a) for a in data.get("app_calls", ())),
            duration_s=float(data.get("duration_s", 0.0)),
            model_calls=tuple(data.get("model_calls", ())),
        )


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
        return {
            "command": self.command,
            "stdout": self.stdout.to_json(),
            "stderr": self.stderr.to_json(),
            "returncode": self.returncode,
            "timed_out": self.timed_out,
            "duration_s": self.duration_s,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BashResult:
        return cls(
            command=data["command"],
            stdout=Value.from_json(data["stdout"]),
            stderr=Value.from_json(data["stderr"]),
            returncode=data.get("returncode"),
            timed_out=bool(data.get("timed_out", False)),
            duration_s=float(data.get("duration_s", 0.0)),
        )
