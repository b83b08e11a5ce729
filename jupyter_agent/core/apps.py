"""The in-cell apps as data: what the model can call from inside a cell.

An app method is an effect performed by the host (the server), never inside the kernel:
the kernel forwards the call over the kernel protocol, the driver performs and logs it as
an ``app.call`` effect whose ``parent`` is the seq of the cell's ``cell.run``. This module
is the single catalogue used by the kernel (to build the proxies), the driver (to know what
is a mutation) and the prompt (one line per method).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["APPS", "AppSpec", "MethodSpec", "find_method"]


@dataclass(frozen=True, kw_only=True)
class MethodSpec:
    """One app method: its call signature as the model writes it, and what it does."""

    name: str
    signature: str
    doc: str
    mutation: bool = False


@dataclass(frozen=True, kw_only=True)
class AppSpec:
    """One app: the name bound in the kernel's namespace, its docstring and its methods."""

    name: str
    doc: str
    methods: tuple[MethodSpec, ...]


APPS: tuple[AppSpec, ...] = (
    AppSpec(
        name="chat",
        doc="The chat this run answers in.",
        methods=(
            MethodSpec(
                name="post",
                signature="chat.post(text: str) -> str",
                doc="Post a progress bubble (not the final reply) to the chat; returns its id.",
                mutation=True,
            ),
        ),
    ),
    AppSpec(
        name="llm",
        doc="Model calls made by the host (no credential ever enters the kernel).",
        methods=(
            MethodSpec(
                name="chat",
                signature=(
                    'llm.chat(messages: list[dict] | str, tier: str = "classify", '
                    "system: str = '') -> str"
                ),
                doc=(
                    "One model call on the classify or vision tier; messages are "
                    '{"role", "content"} dicts or a plain string; returns the reply text.'
                ),
            ),
        ),
    ),
)


def find_method(app: str, method: str) -> MethodSpec | None:
    """The spec of ``app.method``, or None when no such app method exists."""
    for spec in APPS:
        if spec.name == app:
            for m in spec.methods:
                if m.name == method:
                    return m
    return None
