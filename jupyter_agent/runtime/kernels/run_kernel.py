"""The kernel of one run: taken from the pool at its first cell, discarded at its end.

A chat-only turn never takes one. The kernel is never shared by two runs (the seed's
rule). A kernel start is never cancelled half way (it would leave a half-registered
kernel in the server's manager): a hard break cancels the cell, not the start.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from jupyter_agent.exceptions import BadRequest
from jupyter_agent.runtime.notebook.safe_paths import resolve

__all__ = ["RunKernel"]

log = logging.getLogger(__name__)


class RunKernel:
    """Lazily acquired kernel of one run, moved to ``cwd`` (relative to ``root_dir``)."""

    def __init__(
        self,
        pool: Any,
        *,
        root_dir: str,
        cwd: str | None,
        python: Callable[[], Awaitable[str | None]] | None = None,
    ) -> None:
        """``python``: the interpreter the run's kernel runs under, asked at its first
        cell (None, or an answer of None: the server's, a warm kernel)."""
        self._pool = pool
        self._python = python
        self._root_dir = root_dir
        self._cwd = cwd
        self._task: asyncio.Task[Any] | None = None
        self.current: Any = None
        """The kernel handle once acquired (None before, or after it died)."""

    def folder(self) -> str | None:
        """The kernel's working folder: the viewed document's folder, resolved again now
        (:mod:`jupyter_agent.runtime.notebook.safe_paths`: its real path, no symlink in it),
        else the root (also when the folder has since become a link out of the root, or a
        hidden one)."""
        if not self._cwd:
            return self._root_dir or None
        try:
            return resolve(
                self._cwd, self._root_dir, what="the viewed folder", allow_root=True
            ).real
        except BadRequest as exc:
            log.warning("the kernel stays in the server's root: %s", exc.message)
            return self._root_dir or None

    async def handle(self) -> Any:
        """The run's kernel, acquired on first use (shielded: see the module docstring)."""
        if self.current is None:
            if self._task is None:
                self._task = asyncio.create_task(self._acquire())
            self.current = await asyncio.shield(self._task)
        return self.current

    async def _acquire(self) -> Any:
        python = await self._python() if self._python is not None else None
        if python is None:
            return await self._pool.acquire(cwd=self.folder())
        return await self._pool.acquire(cwd=self.folder(), python=python)

    async def replace_dead(self) -> None:
        """Drop a kernel that died; the next cell takes a fresh one."""
        dead, self.current = self.current, None
        if dead is not None:
            try:
                await self._pool.discard(dead)
            except Exception:
                log.debug("discarding a dead kernel failed", exc_info=True)
        self._task = None

    async def release(self) -> None:
        """At the run's end: discard its kernel in the background. A kernel still awaited
        (the run ended, say by a hard break, while it waited in the pool's line) is not
        waited for: the wait is cancelled, which the pool takes back safely (a kernel
        handed over meanwhile goes to the next waiter or back to the pool; a start itself
        is never cancelled, it is the pool's task, not this one)."""
        task = self._task
        if task is None:
            return
        if self.current is None and not task.done():
            task.cancel()
        try:
            handle = await task
        except (asyncio.CancelledError, Exception):
            return
        self._pool.discard_soon(handle)
