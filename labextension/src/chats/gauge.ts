/**
 * The context and cost gauge of a chat's header (pure: jest tests it alone).
 *
 * `gaugeOf` reads what production stores: the last finished turn's record (its model, its
 * boot window's split `llm.window`: raw turns, level-1 and level-2 summaries; its recall
 * block's tokens), the size of that turn's last model request (`GET agent/runs/{id}/stats`:
 * the call's input, cache read and cache write tokens), the model's context window (`GET
 * agent/settings`: the readiness profile of the tier that runs it), every turn's cost (USD
 * at the profiles' prices; one unknown makes the total "unknown", never a guess) and the
 * ceilings a run gets. Nothing is recomputed in the browser.
 */
import type { ITurnRecord } from '../runs/turns';

/** One model call of `GET agent/runs/{id}/stats`. */
export interface IStatsCall {
  in: number;
  cacheRead: number;
  cacheWrite: number;
  nested?: boolean;
  status?: string;
}

/** What the gauge is made of (see the module comment). */
export interface IGaugeInput {
  turns: ITurnRecord[];
  /** The calls of the last turn's run (null: not read). */
  calls: IStatsCall[] | null;
  /** The context window of the last turn's model (null: unknown). */
  contextWindow: number | null;
  ceilings: { [key: string]: unknown } | null;
}

/** What the gauge shows: a line, its hover text, how full the window is (0..1 or null). */
export interface IGauge {
  text: string;
  title: string;
  ratio: number | null;
}

function k(n: number): string {
  return n >= 10000 ? `${Math.round(n / 1000)}k` : n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n);
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** The chat's total cost in USD, or null when a turn's is unknown. */
export function totalCost(turns: ITurnRecord[]): number | null {
  let sum = 0;
  for (const turn of turns) {
    if (turn.llm.cost === null || turn.llm.cost === undefined) {
      if ((turn.llm.modelCalls ?? 0) > 0) {
        return null;
      }
      continue;
    }
    sum += turn.llm.cost;
  }
  return sum;
}

/** The last top-level request's prompt tokens (input + cache read + cache write). */
export function lastPrompt(calls: IStatsCall[] | null): number | null {
  const own = (calls ?? []).filter(c => !c.nested && c.status !== 'cancelled');
  const last = own[own.length - 1];
  return last ? (last.in || 0) + (last.cacheRead || 0) + (last.cacheWrite || 0) : null;
}

/** The gauge (see the module comment); an empty chat shows its cost only. */
export function gaugeOf(input: IGaugeInput): IGauge {
  const cost = totalCost(input.turns);
  const costText = cost === null ? 'cost unknown' : `$${cost.toFixed(cost < 1 ? 4 : 2)}`;
  const last = input.turns[input.turns.length - 1];
  const prompt = lastPrompt(input.calls);
  const window = input.contextWindow;
  const ratio = prompt !== null && window ? Math.min(1, prompt / window) : null;
  const used =
    prompt === null
      ? ''
      : window
        ? `${k(prompt)} / ${k(window)} tokens (${Math.round((ratio ?? 0) * 100)}%) · `
        : `${k(prompt)} tokens · `;
  const lines: string[] = [];
  if (last) {
    lines.push(`Last turn's model: ${last.model ?? 'unknown'}`);
    lines.push(
      prompt === null
        ? 'Its last request: size unknown'
        : `Its last request: ${prompt.toLocaleString('en')} tokens of ${window ? window.toLocaleString('en') : 'an unknown'} context window`
    );
    const held = last.llm.window;
    if (held) {
      lines.push(
        `History held: ${plural(held.raw, 'turn')} in full, ${held.l1} + ${held.l2} summaries` +
          (held.omitted ? `, ${plural(held.omitted, 'turn')} left out` : '') +
          ` (${held.tokens.toLocaleString('en')} tokens)`
      );
    }
    if (last.recall && last.recall.tokens) {
      lines.push(`Recall: ${last.recall.tokens.toLocaleString('en')} tokens`);
    }
  }
  lines.push(
    cost === null
      ? `Chat's cost: unknown (a model's price is not known) over ${plural(input.turns.length, 'turn')}`
      : `Chat's cost: $${cost.toFixed(4)} over ${plural(input.turns.length, 'turn')}`
  );
  const c = input.ceilings ?? {};
  if (Object.keys(c).length) {
    lines.push(
      `Each run's ceilings: ${c.max_model_calls} model calls, ${c.max_cells} cells, ` +
        `$${Number(c.max_cost_usd).toFixed(2)}, ${c.max_wall_s} s`
    );
  }
  return { text: `${used}${costText}`, title: lines.join('\n'), ratio };
}
