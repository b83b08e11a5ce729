"""Deployed versions a package upgrade shadows, moved to free numbers (migration v7).

Deployed versions are numbered per family after the built-in ones (``toolcaller@v5`` was
the first deployed toolcaller while ``v1..v4`` were built in). A release that adds a
built-in version (``toolcaller@v5``) would shadow a deployed row with that number:
the registry reads a key that is built in from the package. :func:`renumber_shadowed` moves
each deployed row whose ``(name, version)`` is now built in to the next free number of its
family, above every built-in, stored and activation-named version (in the old order: the
lowest shadowed one gets the lowest new number), and carries what names it along:

- ``agent_program_activations`` rows of that ``(name, version)`` name the new number (the
  layer keeps running the same code);
- ``agent_runs`` rows whose ``programs`` name ``name@vOLD#<hash>`` with *that row's* hash
  (matched by hash, so a run of the built-in is untouched) name ``name@vNEW#<hash>``, and
  their ``program`` ``name@vOLD`` becomes ``name@vNEW``;
- the turn record of such a run (``agent_turns.record``), where its ``programs`` list names
  the old ref (the host writes the run's refs into a failed run's turn).

The logs on disk keep the old ref: :meth:`~jupyter_agent.programs.registry.ProgramRegistry.
load` finds a built-in key recorded with another hash by ``(name, hash)`` in the store.

Runs on a SQLAlchemy Core connection inside the caller's transaction, in portable SQL (the
migration's rule). Idempotent: after it, no deployed row has a built-in number, so a second
call changes nothing. A later release that adds built-in versions calls it again in its own
migration step.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection

from jupyter_agent.programs.refs import ProgramRef, parse_ref

__all__ = ["Renumbered", "renumber_shadowed"]


@dataclass(frozen=True)
class Renumbered:
    """One deployed version moved: ``name``, ``old`` and ``new`` numbers, its full ``hash``,
    and the ``runs`` whose references followed."""

    name: str
    old: int
    new: int
    hash: str
    runs: int


def renumber_shadowed(conn: Connection, builtin: Iterable[str]) -> list[Renumbered]:
    """Move every deployed row whose ``name@vN`` is in ``builtin`` (the built-in keys) to
    the next free numbers of its family (module docstring); what moved, in order."""
    by_family: dict[str, set[int]] = {}
    for key in builtin:
        name, _, version = key.partition("@v")
        if version.isdigit():
            by_family.setdefault(name, set()).add(int(version))
    moved: list[Renumbered] = []
    for name in sorted(by_family):
        moved.extend(_renumber_family(conn, name, by_family[name]))
    return moved


def _renumber_family(conn: Connection, name: str, builtin: set[int]) -> list[Renumbered]:
    rows = conn.execute(
        text("SELECT version, hash FROM agent_programs WHERE name = :n ORDER BY version"),
        {"n": name},
    ).all()
    shadowed = [(int(v), str(h)) for v, h in rows if int(v) in builtin]
    if not shadowed:
        return []
    named = conn.execute(
        text("SELECT MAX(version) FROM agent_program_activations WHERE name = :n"), {"n": name}
    ).scalar()
    top = max(max(builtin), max(int(v) for v, _ in rows), int(named or 0))
    moved = []
    for offset, (old, full) in enumerate(shadowed, start=1):
        new = top + offset
        params = {"n": name, "old": old, "new": new}
        conn.execute(
            text("UPDATE agent_programs SET version = :new WHERE name = :n AND version = :old"),
            params,
        )
        conn.execute(
            text(
                "UPDATE agent_program_activations SET version = :new"
                " WHERE name = :n AND version = :old"
            ),
            params,
        )
        runs = _follow_runs(conn, name, old, new, full)
        moved.append(Renumbered(name=name, old=old, new=new, hash=full, runs=runs))
    return moved


def _follow_runs(conn: Connection, name: str, old: int, new: int, full: str) -> int:
    """Rewrite the refs of runs (and their turns) naming ``name@v{old}`` with hash ``full``."""
    pattern = f"%{name}@v{old}#%"
    found = conn.execute(
        text("SELECT run_id, program, programs FROM agent_runs WHERE programs LIKE :p"),
        {"p": pattern},
    ).all()
    changed = 0
    for run_id, program, programs in found:
        listed = _rewrite(programs, name, old, new, full)
        if listed is None:
            continue
        conn.execute(
            text(
                "UPDATE agent_runs SET program = :program, programs = :programs WHERE run_id = :r"
            ),
            {
                "program": f"{name}@v{new}" if program == f"{name}@v{old}" else program,
                "programs": json.dumps(listed, separators=(",", ":")),
                "r": run_id,
            },
        )
        changed += 1
        _follow_turn(conn, run_id, name, old, new, full)
    return changed


def _follow_turn(conn: Connection, run_id: str, name: str, old: int, new: int, full: str) -> None:
    record = conn.execute(
        text("SELECT record FROM agent_turns WHERE run_id = :r"), {"r": run_id}
    ).scalar()
    if record is None:
        return
    try:
        data = json.loads(record)
    except ValueError:
        return
    if not isinstance(data, dict):
        return
    listed = _rewrite(data.get("programs"), name, old, new, full)
    if listed is None:
        return
    data["programs"] = listed
    conn.execute(
        text("UPDATE agent_turns SET record = :rec WHERE run_id = :r"),
        {"rec": json.dumps(data, ensure_ascii=False, separators=(",", ":")), "r": run_id},
    )


def _rewrite(programs: Any, name: str, old: int, new: int, full: str) -> list[Any] | None:
    """``programs`` (a JSON list, or its text) with each ``name@v{old}#h`` whose ``h`` is a
    prefix of ``full`` renamed ``name@v{new}#h``; None when nothing in it changes."""
    if isinstance(programs, str):
        try:
            programs = json.loads(programs)
        except ValueError:
            return None
    if not isinstance(programs, list):
        return None
    out: list[Any] = []
    changed = False
    for item in programs:
        ref = _parse(item)
        # Another hash: a run of the built-in, untouched.
        if ref is not None and ref.key == f"{name}@v{old}" and full.startswith(ref.hash or "-"):
            item = f"{name}@v{new}#{ref.hash}"
            changed = True
        out.append(item)
    return out if changed else None


def _parse(item: Any) -> ProgramRef | None:
    if not isinstance(item, str):
        return None
    try:
        return parse_ref(item)
    except ValueError:
        return None
