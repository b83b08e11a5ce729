/**
 * What autorecall@v1 recalled for a run, as the chat shows it: the hits of the
 * run's `recall` event (live), of its `recall` step or turn record (after a reload),
 * summed up as "recalled 3 memories" / "recalled 1 memory, 2 earlier turns".
 *
 * The hits are not the model's words: they were searched before its first call and put in
 * front of it as a synthetic `memory.search(...)` cell and its result (evidence, not
 * instructions). The chat marks them so.
 *
 * Pure logic: no `@jupyterlab/*` or DOM import (jest tests it alone).
 */

/** The kinds of recall hits, in the order the server ranks ties (and we count them). */
export const HIT_KINDS = ['memory', 'turn', 'chunk'] as const;

export type HitKind = (typeof HIT_KINDS)[number];

/**
 * One recall hit: `RecallHit` JSON (`jupyter_agent.core.memory`) in a `recall` event; a
 * turn record keeps `{kind, id, chat_id, score, text}` only (text clipped to 200).
 */
export interface IRecallHit {
  kind: HitKind | string;
  id: string;
  chat_id?: string | null;
  text: string;
  score: number;
  created?: string;
  category?: string;
  chat_title?: string;
  level?: number;
  first_turn?: number;
  last_turn?: number;
}

/** The `recall` field of a turn record (absent when nothing was recalled). */
export interface ITurnRecall {
  program: string;
  hits: IRecallHit[];
  tokens: number;
}

/** What the chat shows of a run's recall. */
export interface IRecallInfo {
  hits: IRecallHit[];
  /** The tokens the injected block took (known from the turn record). */
  tokens: number | null;
  /** The program that recalled (`autorecall@v1`), when known. */
  program: string | null;
}

const NOUNS: { [kind: string]: [string, string] } = {
  memory: ['memory', 'memories'],
  turn: ['earlier turn', 'earlier turns'],
  chunk: ['earlier summary', 'earlier summaries']
};

function validHits(hits: unknown): IRecallHit[] {
  if (!Array.isArray(hits)) {
    return [];
  }
  return hits.filter(
    (h): h is IRecallHit =>
      !!h && typeof h === 'object' && typeof h.kind === 'string' && typeof h.text === 'string'
  );
}

/**
 * The recall of a `recall` event or step (`{hits, tokens, program}`: the whole RecallHit
 * JSON), or null when it holds no hit.
 */
export function recallFromEvent(event: { [key: string]: any }): IRecallInfo | null {
  const hits = validHits(event?.hits);
  if (hits.length === 0) {
    return null;
  }
  return {
    hits,
    tokens: typeof event.tokens === 'number' ? event.tokens : null,
    program: typeof event.program === 'string' ? event.program : null
  };
}

/** The recall of a turn record (its `recall` field), or null when nothing was recalled. */
export function recallFromTurn(turn: { recall?: ITurnRecall | null } | null): IRecallInfo | null {
  const recall = turn?.recall;
  if (!recall || typeof recall !== 'object') {
    return null;
  }
  const hits = validHits(recall.hits);
  if (hits.length === 0) {
    return null;
  }
  return {
    hits,
    tokens: typeof recall.tokens === 'number' ? recall.tokens : null,
    program: typeof recall.program === 'string' ? recall.program : null
  };
}

/**
 * The block's one-line summary: "recalled 3 memories", "recalled 1 memory, 2 earlier
 * turns", "recalled 1 earlier summary" (kinds in the order memory, turn, chunk; an
 * unknown kind counts as "other").
 */
export function recallSummary(hits: ReadonlyArray<IRecallHit>): string {
  const counts = new Map<string, number>();
  for (const h of hits) {
    const kind = h.kind in NOUNS ? h.kind : 'other';
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }
  const parts: string[] = [];
  for (const kind of [...HIT_KINDS, 'other']) {
    const n = counts.get(kind);
    if (n) {
      const [one, many] = NOUNS[kind] ?? ['other note', 'other notes'];
      parts.push(`${n} ${n === 1 ? one : many}`);
    }
  }
  return parts.length ? `recalled ${parts.join(', ')}` : 'recalled nothing';
}

/**
 * Where one hit comes from, as a short label: "memory · preferences", "earlier turn ·
 * Sales analysis", "summary of turns 3–9 · Sales analysis" (the category or chat title
 * when the hit carries it: the event's hits do, a turn record's do not).
 */
export function hitSource(hit: IRecallHit): string {
  let what: string;
  let where: string | undefined;
  switch (hit.kind) {
    case 'memory':
      what = 'memory';
      where = hit.category;
      break;
    case 'turn':
      what = 'earlier turn';
      where = hit.chat_title;
      break;
    case 'chunk':
      what =
        typeof hit.first_turn === 'number' && typeof hit.last_turn === 'number'
          ? `summary of turns ${hit.first_turn}–${hit.last_turn}`
          : 'earlier summary';
      where = hit.chat_title;
      break;
    default:
      what = String(hit.kind);
  }
  const date = (hit.created || '').slice(0, 10);
  return [what, where, date].filter(Boolean).join(' · ');
}

/** A hit's score as shown: two decimals ("0.82"). */
export function hitScore(hit: IRecallHit): string {
  return typeof hit.score === 'number' && Number.isFinite(hit.score) ? hit.score.toFixed(2) : '';
}

/** The block's title (tooltip): what a recalled block is, and its size in the prompt. */
export function recallTitle(info: IRecallInfo): string {
  const by = info.program ?? 'autorecall';
  const tokens = info.tokens !== null ? ` It took ${info.tokens} tokens of the prompt.` : '';
  return (
    `Recalled by ${by} before the model’s first call: notes from memory and earlier ` +
    'chats that matched this message, shown to the model as a synthetic memory.search ' +
    'cell and its result. Evidence the agent was given, not its own words.' +
    tokens
  );
}
