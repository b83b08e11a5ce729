"""The naming program (``title@v1``): a chat's name from its first turn, as a pure generator.

After a chat's first turn, when its ``classify`` tier is configured, one naming run gives
the chat a short name in place of the one its first message gave it:

1. ``config.get {"key": "title_job"}`` -> ``{chat_id, title, user, reply}``: the title the
   chat has now (its first message's first line) and the first turn's texts;
2. the tier: ``classify`` (``config.get llm.tier.classify`` and its profile); the host
   starts a naming run only when the chat's agent configures that tier;
3. exactly one model call (``http.post``), asking for a name of a few words;
4. ``chat.retitle {title, expected}`` -> ``{"retitled": bool}``: the name is set only while
   the chat's title is still the expected one (the person's rename wins).

It returns a :class:`~jupyter_agent.core.history.program.HistoryOutcome` (``text``: the
name; ``stored``: whether it was set). A failure (no job, no tier, a failed call, an empty
answer) ends the run with ``error`` set and the title unchanged. Everything arrives
through effects, so a replay needs only the log.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from jupyter_agent.core.history.program import HistoryOutcome
from jupyter_agent.effects import CHAT_RETITLE, CONFIG_GET, Effect, EffectGen
from jupyter_agent.exceptions import ConfigError, ProviderError
from jupyter_agent.llm.chat import ChatResult, chat
from jupyter_agent.llm.tiers import resolve_tier
from jupyter_agent.messages import Message, Text

__all__ = ["MAX_NAME", "SYSTEM", "TITLE_PROGRAM", "TitleJob", "clean_name", "title"]

#: The program's recorded name.
TITLE_PROGRAM: Final = "title@v1"
#: The longest name kept (characters); a longer answer is cut at a word.
MAX_NAME: Final = 60
#: Each of the turn's texts is given up to this many characters (a name needs the gist).
MAX_ITEM: Final = 2_000
SYSTEM: Final = (
    "You name chats. Answer with a name of 2 to 6 words for the conversation you are "
    "given: what the person is working on, in their language. No quotes, no final "
    "punctuation, nothing else."
)
# A name is a few words; the room is for reasoning models, whose thinking counts in it.
_MAX_TOKENS: Final = 1024
# Quotes and markdown emphasis a model puts around a name (typographic ones too).
_QUOTES: Final = "*_`\"' \u201c\u201d\u2018\u2019"
_PREFIX = re.compile(r"^(title|name|chat name)\s*:\s*", re.IGNORECASE)


@dataclass(frozen=True, kw_only=True)
class TitleJob:
    """The chat to name: its title now and its first turn (the ``title_job`` value)."""

    chat_id: str
    title: str
    user: str
    reply: str

    @classmethod
    def from_json(cls, data: Any) -> TitleJob:
        """Read a job; ValueError when it is not one."""
        if not isinstance(data, Mapping):
            raise ValueError("the title job is not an object")
        try:
            job = cls(
                chat_id=str(data["chat_id"]),
                title=str(data["title"]),
                user=str(data["user"]),
                reply=str(data["reply"]),
            )
        except KeyError as exc:
            raise ValueError(f"malformed title job (no {exc})") from None
        if not job.user.strip():
            raise ValueError("the title job has no first message")
        return job

    def to_json(self) -> dict[str, Any]:
        return {
            "chat_id": self.chat_id,
            "title": self.title,
            "user": self.user,
            "reply": self.reply,
        }


def clean_name(text: str) -> str:
    """The name in a model's answer: its first non-blank line, without a ``Title:``
    prefix, quotes, markdown emphasis or final punctuation, at most :data:`MAX_NAME`
    characters (cut at a word); ``""`` when nothing is left."""
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    name = _PREFIX.sub("", " ".join(line.split()).lstrip("#").strip())
    name = name.strip(_QUOTES).rstrip(".!?;:, ")
    if len(name) > MAX_NAME:
        cut = name[:MAX_NAME]
        name = cut.rsplit(" ", 1)[0] if " " in cut[MAX_NAME // 2 :] else cut
    return name


def _prompt(job: TitleJob) -> str:
    user, reply = job.user[:MAX_ITEM], job.reply[:MAX_ITEM]
    return (
        f"<person>\n{user}\n</person>\n\n<agent>\n{reply}\n</agent>\n\nName this conversation now."
    )


def title(run_id: str, chat_id: str) -> EffectGen[HistoryOutcome]:
    """Name the chat of the job this run is given (see the module docstring)."""
    job_data = (yield Effect(name=CONFIG_GET, data={"key": "title_job"})).data
    try:
        job = TitleJob.from_json(job_data)
    except ValueError as err:
        return HistoryOutcome(error=str(err))
    try:
        tier = yield from resolve_tier("classify")
    except ConfigError as err:
        return HistoryOutcome(error=f"no classify tier can name the chat: {err}")
    messages = (Message(role="user", parts=(Text(text=_prompt(job)),)),)
    try:
        result: ChatResult = yield from chat(
            messages, system=SYSTEM, tier=tier, tools=(), stream=False, max_tokens=_MAX_TOKENS
        )
    except ProviderError as err:
        return HistoryOutcome(tier=tier.name, model=tier.model, model_calls=1, error=str(err))
    reply = result.reply
    counted = HistoryOutcome(
        tier=tier.name, model=tier.model, model_calls=1, usage=reply.usage, cost=result.cost_usd
    )
    name = clean_name(reply.text)
    if not name:
        return replace(counted, error="the model answered no name")
    answer = yield Effect(name=CHAT_RETITLE, data={"title": name, "expected": job.title})
    if answer.error is not None:
        message = str(answer.error.get("message") or answer.error.get("type"))
        return replace(counted, text=name, error=f"the name could not be stored: {message}")
    retitled = bool(isinstance(answer.data, Mapping) and answer.data.get("retitled"))
    return replace(counted, stored=retitled, text=name)
