"""An in-cell app's shape: :class:`AppSpec` (the name bound in the kernel, its docstring, its
methods) and :class:`MethodSpec` (a method's signature as the model writes it). Pure data,
shared by the built-in apps' catalogue (:mod:`jupyter_agent.core.loop.apps`), the MCP
catalogue's app (:mod:`jupyter_agent.core.mcp.catalogue`), the prompt and the kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["AppSpec", "MethodSpec", "WithPayload"]


@dataclass(frozen=True, kw_only=True)
class MethodSpec:
    """One app method: its call signature as the model writes it, and what it does."""

    name: str
    signature: str
    doc: str
    mutation: bool = False
    #: The first ``toolcaller`` version whose prompt lists it (within its app's).
    since: int = 1


@dataclass(frozen=True, kw_only=True)
class AppSpec:
    """One app: the name bound in the kernel's namespace, its docstring and its methods;
    ``since``: the first ``toolcaller`` version whose prompt lists it."""

    name: str
    doc: str
    methods: tuple[MethodSpec, ...]
    since: int = 1


@dataclass(frozen=True, kw_only=True)
class WithPayload:
    """An app's answer whose ``payload`` goes to the kernel beside the reply but is never
    logged: ``notebook.fetch``'s copied bytes (the logged ``value`` says what was copied
    and where its blob is kept)."""

    value: Any
    payload: str
