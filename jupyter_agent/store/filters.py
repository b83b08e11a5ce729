"""SQL conditions shared by the Store's queries (SQLAlchemy Core, both backends)."""

from __future__ import annotations

from sqlalchemy import ColumnElement, and_, func, or_

__all__ = ["program_filter"]


def program_filter(column: ColumnElement[str], program: str) -> ColumnElement[bool]:
    """The SQL condition "``column`` is a run of ``program``".

    ``name@vN`` (anything with an ``@``) matches that stored value only. A bare name
    matches the name itself and every ``name@...``: a prefix match on ``name@``, so
    ``toolcall`` matches nothing. The prefix is a LIKE with its wildcards escaped (``%``
    and ``_`` in a name are literal) so a prefix index can serve it where the backend
    allows; SQLite's LIKE ignores ASCII case, so an exact ``substr`` comparison is added to
    make both backends case-sensitive alike.
    """
    if "@" in program:
        return column == program
    prefix = program + "@"
    return or_(
        column == program,
        and_(
            column.startswith(prefix, autoescape=True),
            func.substr(column, 1, len(prefix)) == prefix,
        ),
    )
