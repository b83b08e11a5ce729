"""The history program (``history@v1``): one chunk summary of a chat, as a pure generator.

A summary run is given a *job* and makes one summary of it (DESIGN section 7):

1. ``config.get {"key": "history_job"}`` -> ``{chat_id, level, first_turn, last_turn,
   items}``: ``items`` are the texts to summarise, oldest first: for level 1 each of the
   span's turns as the window renders it (``core.window.render_turn``: its user text, then
   its assistant text), for level 2 the texts of the span's level-1 summaries;
2. ``config.get {"key": "spaces"}``: the ``_history`` skill (``files["_history"]``; the
   package's ``spaces/_history.md``, which a user or project space overrides like any space
   file) is the system prompt; :data:`DEFAULT_SKILL` stands in when no layer has one;
3. the tier: ``classify`` (``config.get llm.tier.classify`` and its profile), falling back
   to ``codegen`` when classify cannot be used (the host already answers a missing
   classify tier with codegen's; this covers one that is configured but invalid);
4. exactly one model call (``http.post``; the transport retries as for any call), asking
   for at most :data:`BUDGET_TOKENS` of the level (the skill says the same), with a little
   headroom as ``max_tokens`` so a summary is not cut mid-sentence;
5. ``chunk.store {level, first_turn, last_turn, text, model}`` -> ``{"stored": bool}``
   (false: that span already had a summary; the first write wins).

It returns a :class:`HistoryOutcome` (what the run's summary row records). A failure (no
job, no usable tier, a failed model call, an empty reply) ends the run with ``error`` set
and nothing stored: the scheduler tries the span again later. A hard break's cancelled
result raises :class:`~jupyter_agent.exceptions.RunCancelled` as in the loop. Everything
the program depends on arrives through effects, so a replay needs only the log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from jupyter_agent.effects import CHUNK_STORE, CONFIG_GET, Effect, EffectGen
from jupyter_agent.exceptions import ConfigError, ProviderError
from jupyter_agent.llm.chat import ChatResult, chat
from jupyter_agent.llm.tiers import Tier, resolve_tier
from jupyter_agent.messages import Message, Text, Usage

__all__ = [
    "BUDGET_TOKENS",
    "DEFAULT_SKILL",
    "HISTORY_PROGRAM",
    "HistoryJob",
    "HistoryOutcome",
    "history",
    "summary_prompt",
]

#: The program's recorded name.
HISTORY_PROGRAM: Final = "history@v1"
#: The most tokens one summary of each level may take (also stated in ``_history.md``).
BUDGET_TOKENS: Final = {1: 300, 2: 500}
#: The system prompt when no space layer holds ``_history`` (a space without the file).
DEFAULT_SKILL: Final = (
    "# History summaries\n\nSummarise the chat turns you are given for later turns of the "
    "same chat. Keep the person's goals and decisions, facts and numbers found, names of "
    "files, variables and values, and open questions. Be short."
)
_SKILL_KEY = "_history"
_HEADROOM = 1.5  # max_tokens over the stated budget: a summary ends, it is not cut


@dataclass(frozen=True, kw_only=True)
class HistoryJob:
    """The span to summarise and the texts it holds (the ``history_job`` config value)."""

    chat_id: str
    level: int
    first_turn: int
    last_turn: int
    items: tuple[str, ...]

    @classmethod
    def from_json(cls, data: Any) -> HistoryJob:
        """Read a job; ValueError when it is not one."""
        if not isinstance(data, Mapping):
            raise ValueError("the history job is not an object")
        try:
            level, first, last = int(data["level"]), int(data["first_turn"]), int(data["last_turn"])
            items = tuple(str(t) for t in data["items"])
            chat_id = str(data["chat_id"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"malformed history job ({type(exc).__name__})") from None
        if level not in BUDGET_TOKENS or not 1 <= first <= last or not items:
            raise ValueError(f"bad history job: level {level}, turns {first}-{last}")
        return cls(chat_id=chat_id, level=level, first_turn=first, last_turn=last, items=items)

    def to_json(self) -> dict[str, Any]:
        return {
            "chat_id": self.chat_id,
            "level": self.level,
            "first_turn": self.first_turn,
            "last_turn": self.last_turn,
            "items": list(self.items),
        }


@dataclass(frozen=True, kw_only=True)
class HistoryOutcome:
    """What one summary run did: stored (or found already stored) a summary, or failed."""

    stored: bool = False
    text: str | None = None
    model: str | None = None
    tier: str | None = None
    model_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when the span has its summary now (this run's or an earlier one's)."""
        return self.error is None


def summary_prompt(job: HistoryJob) -> str:
    """The user message of the summary call: the span, its items labelled, the budget."""
    budget = BUDGET_TOKENS[job.level]
    span = f"turns {job.first_turn} to {job.last_turn}"
    if job.level == 1:
        head = f"Summarise {span} of this chat (a level-1 summary)."
        parts = [
            f'<turn n="{job.first_turn + i}">\n{text}\n</turn>' for i, text in enumerate(job.items)
        ]
    else:
        width = max(1, (job.last_turn - job.first_turn + 1) // len(job.items))
        head = (
            f"Merge these summaries of {span} of this chat into one (a level-2 summary): "
            "keep what later turns need from each."
        )
        parts = []
        for i, text in enumerate(job.items):
            first = job.first_turn + i * width
            parts.append(f'<summary turns="{first}-{first + width - 1}">\n{text}\n</summary>')
    tail = f"Write the summary now, at most {budget} tokens, nothing else."
    return "\n\n".join([head, *parts, tail])


def _skill(spaces: Any) -> str:
    files = spaces.get("files") if isinstance(spaces, Mapping) else None
    text = files.get(_SKILL_KEY) if isinstance(files, Mapping) else None
    return text.strip() if isinstance(text, str) and text.strip() else DEFAULT_SKILL


def _tier() -> EffectGen[Tier]:
    """``classify``, else ``codegen`` (ConfigError when neither can be used)."""
    try:
        return (yield from resolve_tier("classify"))
    except ConfigError:
        return (yield from resolve_tier("codegen"))


def _store(job: HistoryJob, text: str, model: str) -> EffectGen[bool]:
    data = {
        "level": job.level,
        "first_turn": job.first_turn,
        "last_turn": job.last_turn,
        "text": text,
        "model": model,
    }
    result = yield Effect(name=CHUNK_STORE, data=data)
    if result.error is not None:
        raise _StoreFailed(str(result.error.get("message") or result.error.get("type")))
    return bool(isinstance(result.data, Mapping) and result.data.get("stored"))


class _StoreFailed(Exception):
    """chunk.store answered an error."""


def history(run_id: str, chat_id: str) -> EffectGen[HistoryOutcome]:
    """Make the summary of the job this run is given (see the module docstring)."""
    job_data = (yield Effect(name=CONFIG_GET, data={"key": "history_job"})).data
    try:
        job = HistoryJob.from_json(job_data)
    except ValueError as err:
        return HistoryOutcome(error=str(err))
    spaces = (yield Effect(name=CONFIG_GET, data={"key": "spaces"})).data or {}
    try:
        tier = yield from _tier()
    except ConfigError as err:
        return HistoryOutcome(error=f"no tier can summarise: {err}")
    messages: Sequence[Message] = (Message(role="user", parts=(Text(text=summary_prompt(job)),)),)
    budget = BUDGET_TOKENS[job.level]
    try:
        result: ChatResult = yield from chat(
            messages,
            system=_skill(spaces),
            tier=tier,
            tools=(),
            stream=False,
            max_tokens=int(budget * _HEADROOM),
        )
    except ProviderError as err:
        return HistoryOutcome(tier=tier.name, model=tier.model, model_calls=1, error=str(err))
    reply = result.reply
    counted = HistoryOutcome(
        tier=tier.name,
        model=tier.model,
        model_calls=1,
        usage=reply.usage,
        cost=result.cost_usd,
    )
    text = reply.text.strip()
    if not text:
        return replace(counted, error="the model answered no summary")
    try:
        stored = yield from _store(job, text, tier.model)
    except _StoreFailed as err:
        return replace(counted, text=text, error=f"the summary could not be stored: {err}")
    return replace(counted, stored=stored, text=text)
