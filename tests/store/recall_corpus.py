"""A seeded corpus of facts, turns and chunk summaries for the recall tests, and the
reference ranking computed from the texts alone (no index): what recall must return."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from jupyter_agent.core.history.chunks import StoredChunk
from jupyter_agent.core.memory.records import Memory
from jupyter_agent.core.memory.terms import KIND_ORDER, hit_score, query_terms, score, terms
from jupyter_agent.core.turns import Reply, TurnLLM, TurnRecord
from jupyter_agent.store import Store
from tests.store.factories import iso

# Few words, many overlaps: ties in score and in time, common and rare terms.
_WORD_LIST = (
    "sales revenue region quarter forecast pandas dataframe plot seaborn matplotlib axis"
    " label colour legend parquet bucket s3 credentials deadline friday monday launch"
    " customer churn model accuracy regression feature pipeline cluster kubernetes docker"
    " notebook kernel restart memory leak latency database postgres sqlite index query"
    " join schema migration backup invoice budget report summary meeting agenda python"
    " numpy scipy histogram outlier median variance anomaly alert dashboard grafana"
)
WORDS = _WORD_LIST.split()
RARE = ("zeppelin", "quokka", "marzipan", "xylograph", "fjord")
CHATS = ("chat_01A", "chat_01B", "chat_01C")


@dataclass(frozen=True)
class Corpus:
    memories: tuple[Memory, ...]
    turns: tuple[TurnRecord, ...]
    chunks: tuple[StoredChunk, ...]
    queries: tuple[str, ...]


def _sentence(rng: random.Random, n: int) -> str:
    words = rng.choices(WORDS, k=n)
    if rng.random() < 0.1:
        words.append(rng.choice(RARE))
    return " ".join(words)


def build(seed: int = 15, *, facts: int = 100, turns: int = 150, chunks: int = 50) -> Corpus:
    rng = random.Random(seed)
    memories = tuple(
        Memory(
            id=f"mem_{n:04d}",
            text=_sentence(rng, rng.randint(3, 12)),
            category=rng.choice(("data", "preferences", "project")),
            chat_id=rng.choice((*CHATS, None)),
            author="agent",
            created=iso(n // 3),  # ties in time
            updated=iso(n // 3),
        )
        for n in range(facts)
    )
    per_chat: dict[str, int] = {}
    turn_list = []
    for n in range(turns):
        chat_id = CHATS[n % len(CHATS)]
        per_chat[chat_id] = per_chat.get(chat_id, 0) + 1
        turn_list.append(
            TurnRecord(
                id=f"turn_{n:05d}",
                chat_id=chat_id,
                run_id=f"run_{n:05d}",
                user_text=_sentence(rng, rng.randint(4, 15)),
                created=iso(1000 + n // 2),
                llm=TurnLLM(stop_reason="done", end_cause="done"),
                replies=(
                    Reply(text=_sentence(rng, 3), done=False),  # not indexed: a progress bubble
                    Reply(text=_sentence(rng, rng.randint(5, 30)), done=True),
                ),
            )
        )
    chunk_list = []
    for n in range(chunks):
        chat_id = CHATS[n % len(CHATS)]
        level = 1 if n % 5 else 2
        first = 1 + (n // len(CHATS)) * (10 if level == 1 else 50)
        chunk_list.append(
            StoredChunk(
                chat_id=chat_id,
                level=level,  # type: ignore[arg-type]
                first_turn=first,
                last_turn=first + (9 if level == 1 else 49),
                text=_sentence(rng, rng.randint(10, 40)),
                run_id=f"run_h{n:04d}",
                model=None,
                created=iso(2000 + n),
            )
        )
    queries = [_sentence(rng, rng.randint(1, 6)) for _ in range(26)]
    queries += ["zeppelin quokka", "sales", "the of and", "plotting the revenue by region!"]
    return Corpus(tuple(memories), tuple(turn_list), tuple(chunk_list), tuple(queries))


def load(store: Store, corpus: Corpus) -> None:
    for chat_id in CHATS:
        store.create_chat(chat_id=chat_id, title=f"title of {chat_id}", now=iso(0))
    for memory in corpus.memories:
        store.add_memory(memory)
    for turn in corpus.turns:
        store.append_turn(turn)
    for chunk in corpus.chunks:
        store.add_chunk(chunk)


def docs(corpus: Corpus) -> list[tuple[str, str, str | None, str, str]]:
    """(kind, ref id, chat id, created, indexed text) of every doc, from the texts."""
    out: list[tuple[str, str, str | None, str, str]] = []
    for m in corpus.memories:
        out.append(("memory", m.id, m.chat_id, m.updated, m.text))
    for t in corpus.turns:
        final = [r.text for r in t.replies if r.done][-1]
        out.append(("turn", t.id, t.chat_id, t.created, f"{t.user_text}\n{final}"))
    for c in corpus.chunks:
        key = f"{c.chat_id}:{c.level}:{c.first_turn}"
        out.append(("chunk", key, c.chat_id, c.created, c.text))
    return out


def reference(
    corpus: Corpus, query: str, *, k: int = 5, kinds: Sequence[str] = ("memory", "turn", "chunk")
) -> list[tuple[str, str, float]]:
    """The top ``k`` (kind, id, score) by the definition: every doc scored, then sorted."""
    q = query_terms(query)
    all_docs = docs(corpus)
    term_sets = [set(terms(body)) for *_, body in all_docs]
    df = {t: sum(t in s for s in term_sets) for t in q}
    scored = []
    for (kind, ref_id, _chat, created, _body), held in zip(all_docs, term_sets, strict=True):
        if kind not in kinds:
            continue
        s = hit_score(kind, score(q, held, df, len(all_docs)))
        if s > 0:
            scored.append((kind, ref_id, created, s))
    scored.sort(key=lambda r: r[1])
    scored.sort(key=lambda r: r[2], reverse=True)
    scored.sort(key=lambda r: (-r[3], KIND_ORDER[r[0]]))
    return [(kind, ref_id, s) for kind, ref_id, _created, s in scored[:k]]
