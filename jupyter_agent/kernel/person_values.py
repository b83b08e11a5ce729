"""What the ``notebook`` app's looks at the person's kernel become in the agent's cell.

- ``notebook.variables()``: a :class:`KernelVariables`, whose ``repr`` (what a cell ending
  with it shows) is one line per variable, ``name: type = summary``, then what was left
  out for the budget; ``.variables`` is the list of ``{name, type, summary}`` dicts,
  ``.names`` their names, ``.more`` the names left out.
- ``notebook.inspect(name)``: the summary's text (:func:`inspected`), a marker at its end
  when the host cut it to its budget.
- ``notebook.fetch(name)``: the value itself, unpickled from the bytes the host sent
  beside the reply (:func:`fetched`); the reply's logged value names the copy (its
  blob's sha256 and size), never its bytes.
"""

from __future__ import annotations

import base64
import pickle
from typing import Any

from jupyter_agent.exceptions import AppCallError

__all__ = ["KernelVariables", "fetched", "inspected"]


class KernelVariables:
    """The person's variables as ``notebook.variables()`` read them (module docstring)."""

    def __init__(self, value: dict[str, Any]) -> None:
        self._value = value
        raw = value.get("variables")
        self.variables: list[dict[str, Any]] = list(raw) if isinstance(raw, list) else []
        self.names = [str(v.get("name")) for v in self.variables]
        more = value.get("more")
        self.more: list[str] = [str(m) for m in more] if isinstance(more, list) else []
        self.path = str(value.get("path") or "")

    def __repr__(self) -> str:
        head = f"# variables of the kernel of {self.path} ({self._value.get('kernel')})"
        lines = [head]
        lines += [f"{v.get('name')}: {v.get('type')} = {v.get('summary')}" for v in self.variables]
        if not self.variables:
            lines.append("(no variables)")
        cut = int(self._value.get("cut") or 0)
        if cut:
            names = ", ".join(self.more)
            lines.append(
                f"# {cut} more, left out for the budget (notebook.inspect(name) for one): {names}"
            )
        return "\n".join(lines)

    __str__ = __repr__

    def __iter__(self) -> Any:
        return iter(self.variables)

    def __len__(self) -> int:
        return len(self.variables)


def fetched(reply: dict[str, Any]) -> Any:
    """The value ``notebook.fetch`` copied, from the reply's ``payload`` (pickle bytes,
    base64); AppCallError when the bytes are missing or do not unpickle here (a class
    the agent's environment does not have, say)."""
    payload = reply.get("payload")
    if not isinstance(payload, str):
        raise AppCallError("notebook.fetch: the host sent no copy of the value")
    try:
        return pickle.loads(base64.b64decode(payload))
    except Exception as exc:  # the person's environment has what this one lacks
        raise AppCallError(
            f"notebook.fetch: the copy does not load in the agent's kernel ({exc!r}); "
            "the agent's environment may lack a package the value needs"
        ) from None


def inspected(value: dict[str, Any]) -> str:
    """``notebook.inspect``'s text (module docstring)."""
    text = str(value.get("text") or "")
    return text + "\n[... cut to the budget]" if value.get("cut") else text
