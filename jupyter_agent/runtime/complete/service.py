"""The completion service: ``POST agent/complete`` (see the package docstring).

:meth:`CompletionService.complete` checks its input (bounded ``prefix`` and ``suffix``, a
path in the root, a known language), the owner's rate (``rate_per_minute`` requests in any
60 s, else ``TooManyRequests`` with the seconds to wait), picks the tier (``complete``, else
``classify``, else ``codegen``; never the demo model: ``Conflict`` ``no_completion_tier``),
builds the prompt (the notebook's cells above and below the one being edited, bounded;
the names of the variables of the person's kernel when one is attached and idle; the
prefix, a cursor mark, the suffix) and makes ONE model call through the pure
:func:`~jupyter_agent.llm.chat.chat` generator and the shared transport, streaming the
text to ``on_text`` as it comes. Cancelling the coroutine (the person typed on: the
browser aborted the request) closes the model's stream. The answer: ``{text, model,
usage: {in, out}, cost_usd}``; the usage adds to the owner's counters (in memory, since
the server started: ``usage(owner)``).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from jupyter_agent.core.loop.drive import drive_async
from jupyter_agent.effects import Result
from jupyter_agent.exceptions import AgentError, BadRequest, Conflict, TooManyRequests
from jupyter_agent.llm.chat import chat
from jupyter_agent.llm.tiers import tier_from_config
from jupyter_agent.messages import Message, Text
from jupyter_agent.runtime.loop.model_calls import perform

__all__ = ["MAX_CONTEXT", "MAX_SIDE", "Completion", "CompletionService"]

#: The most characters of ``prefix`` and of ``suffix`` a request may carry.
MAX_SIDE: Final = 20_000
#: The most characters of the notebook's other cells the prompt holds (nearest first).
MAX_CONTEXT: Final = 6_000
_CURSOR: Final = "<CURSOR>"
_TIERS: Final = ("complete", "classify", "codegen")
_FENCE: Final = re.compile(r"^```[\w-]*\n(.*?)\n?```\s*$", re.S)
SYSTEM: Final = (
    "You complete code in a Jupyter notebook or file. Reply with ONLY the text to insert "
    f"at {_CURSOR}: no explanation, no code fences, nothing that repeats the text before "
    "or after the cursor. Keep it short: the rest of the line, or a few lines at most. If "
    "nothing useful fits, reply with nothing."
)


@dataclass
class _Usage:
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    recent: deque[float] = field(default_factory=deque)


@dataclass(frozen=True)
class Completion:
    """A checked completion request: whose, the tier that answers, the prompt."""

    owner: str
    tier: Any
    prompt: str


class CompletionService:
    """Completions for one server (see the module docstring).

    ``run_config(owner=...)`` gives an owner's ready tiers and profiles (a run's config);
    ``is_demo(owner)`` whether the demo model answers them; ``transport`` the shared model
    transport; ``cells(path)`` the ids and sources of a notebook's cells (``NotFound`` for
    no such notebook, ``PathRefused`` for a path out of the root); ``variables(path,
    owner)`` the person's kernel's variable names (may raise: then none)."""

    def __init__(
        self,
        *,
        run_config: Callable[..., Any],
        is_demo: Callable[[str], bool],
        transport: Any,
        cells: Callable[[str], Awaitable[list[tuple[str, str]] | None]],
        variables: Callable[[str, str], Awaitable[list[str]]] | None = None,
        rate_per_minute: Callable[[], int] = lambda: 60,
        scrub: Callable[[str], str] = lambda text: text,
    ) -> None:
        self._run_config = run_config
        self._is_demo = is_demo
        self._transport = transport
        self._cells = cells
        self._variables = variables
        self._rate = rate_per_minute
        self._scrub = scrub
        self._usage: dict[str, _Usage] = defaultdict(_Usage)

    def usage(self, owner: str) -> dict[str, Any]:
        """``{requests, input_tokens, output_tokens, cost_usd}`` of the owner's completions
        since the server started (``cost_usd`` None once a price was unknown)."""
        u = self._usage[owner]
        return {
            "requests": u.requests,
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "cost_usd": None if u.cost_usd is None else round(u.cost_usd, 6),
        }

    def _admit(self, owner: str) -> None:
        now, rate = time.monotonic(), max(1, self._rate())
        recent = self._usage[owner].recent
        while recent and now - recent[0] >= 60:
            recent.popleft()
        if len(recent) >= rate:
            wait = max(0.1, 60 - (now - recent[0]))
            raise TooManyRequests(
                f"at most {rate} completions a minute (JupyterAgent.complete_rate): "
                f"ask again in {wait:.0f} s",
                retry_after_s=wait,
            )
        recent.append(now)

    def _tier(self, owner: str) -> tuple[str, Any]:
        if self._is_demo(owner):
            raise Conflict(
                "no model for completions: the demo model answers (set a model in Agent "
                "settings; a 'complete' or 'classify' tier is used first)",
                reason="no_completion_tier",
            )
        config = self._run_config(owner=owner)
        for name in _TIERS:
            data = config.tiers.get(name)
            if isinstance(data, Mapping):
                model = str(data.get("model"))
                return name, tier_from_config(name, data, config.profiles.get(model))
        raise Conflict("no ready tier for completions", reason="no_completion_tier")

    async def _context(self, path: str, cell_id: str | None, owner: str) -> str:
        parts: list[str] = []
        if path.endswith(".ipynb"):
            cells = await self._cells(path)
            if cells:
                at = next((i for i, (cid, _s) in enumerate(cells) if cid == cell_id), len(cells))
                above = [s for _c, s in cells[:at]][::-1]
                below = [s for _c, s in cells[at + 1 :]]
                taken: list[str] = []
                used = 0
                for source in above:
                    if used + len(source) > MAX_CONTEXT:
                        break
                    taken.insert(0, source)
                    used += len(source)
                if taken:
                    parts.append("Cells above:\n" + "\n# ---\n".join(taken))
                after = "\n# ---\n".join(below)[: max(0, MAX_CONTEXT - used) // 2]
                if after:
                    parts.append("Cells below:\n" + after)
            if self._variables is not None:
                try:
                    names = await self._variables(path, owner)
                except Exception:  # no kernel, a busy one: no names
                    names = []
                if names:
                    parts.append("Variables in the kernel: " + ", ".join(names[:80]))
        return "\n\n".join(parts)

    async def complete(
        self,
        *,
        owner: str,
        path: str,
        prefix: str,
        suffix: str,
        language: str,
        cell_id: str | None = None,
        on_text: Callable[[str], None] | None = None,
    ) -> dict[str, Any]:
        """One completion (see the module docstring); raises the one error tree."""
        call = await self.prepare(
            owner=owner, path=path, prefix=prefix, suffix=suffix, language=language,
            cell_id=cell_id,
        )  # fmt: skip
        return await self.run(call, on_text=on_text)

    async def prepare(
        self,
        *,
        owner: str,
        path: str,
        prefix: str,
        suffix: str,
        language: str,
        cell_id: str | None = None,
    ) -> Completion:
        """Check the request and build its model call (every refusal happens here)."""
        for name, value in (("prefix", prefix), ("suffix", suffix)):
            if len(value) > MAX_SIDE:
                raise BadRequest(
                    f"'{name}' holds {len(value):,} characters: at most {MAX_SIDE:,}",
                    reason="too_large",
                )
        if not re.fullmatch(r"[A-Za-z0-9_+#.-]{1,40}", language or ""):
            raise BadRequest(
                "'language' must be a language name such as python", reason="bad_language"
            )
        _name, tier = await asyncio.to_thread(self._tier, owner)  # settings: store reads
        self._admit(owner)
        context = await self._context(path, cell_id, owner)
        where = f"File: {path} ({language})" if path else f"Language: {language}"
        prompt = "\n\n".join(
            p for p in (where, context, f"Complete at {_CURSOR}:\n{prefix}{_CURSOR}{suffix}") if p
        )
        return Completion(owner=owner, tier=tier, prompt=prompt)

    async def run(
        self, call: Completion, *, on_text: Callable[[str], None] | None = None
    ) -> dict[str, Any]:
        """Make the prepared model call, streaming its text to ``on_text``; the answer.
        Cancelled: the model's stream is closed."""
        owner, tier = call.owner, call.tier
        gen = chat(
            [Message(role="user", parts=(Text(text=call.prompt),))],
            system=SYSTEM,
            tier=tier,
            tools=(),
            stream=True,
            max_tokens=256,
        )

        async def performer(effect: Any) -> Result:
            data, error = await perform(
                effect, config={}, transport=self._transport, on_delta=on_text
            )
            return Result(seq=0, name=effect.name, data=data, error=error)

        try:
            result = await drive_async(gen, performer)
        except AgentError as err:
            # A provider's error text may echo what it was sent: scrubbed like any result.
            said = self._scrub(str(err))
            raise Conflict(f"the completion model failed: {said}", reason="provider") from None
        text = result.reply.text
        fenced = _FENCE.match(text.strip())
        text = fenced.group(1) if fenced else text
        usage = result.reply.usage
        u = self._usage[owner]
        u.requests += 1
        u.input_tokens += usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        u.output_tokens += usage.output_tokens
        cost = result.cost_usd
        u.cost_usd = None if u.cost_usd is None or cost is None else u.cost_usd + cost
        return {
            "text": text,
            "model": tier.model,
            "usage": {"in": usage.input_tokens, "out": usage.output_tokens},
            "cost_usd": cost,
        }
