/**
 * What a turn's history window held (`llm.window` of its record: the turns shown in full,
 * the level-1 and level-2 chunk summaries, the turns omitted, the tokens), as the turn's
 * footer shows it. Pure: no `@jupyterlab/*` or DOM import.
 */
import type { ITurnRecord } from '../runs/turns';

function count(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/**
 * The turn footer's history line, in words, and a title explaining it: only when
 * something of the chat's earlier turns was summarised or left out (a window that holds
 * every earlier turn in full says nothing worth a line); null otherwise.
 *
 * For example `history: 12 recent turns in full, 4 summaries of older turns, 40 older
 * turns left out (1.8k tokens)`.
 */
export function turnWindow(turn: ITurnRecord): { text: string; title: string } | null {
  const w = turn.llm?.window;
  const summaries = (w?.l1 || 0) + (w?.l2 || 0);
  const omitted = w?.omitted || 0;
  if (!w || !(summaries + omitted)) {
    return null;
  }
  const tokens = w.tokens >= 1000 ? `${(w.tokens / 1000).toFixed(1)}k` : String(w.tokens || 0);
  const parts = [count(w.raw || 0, 'recent turn in full', 'recent turns in full')];
  if (summaries) {
    parts.push(count(summaries, 'summary of older turns', 'summaries of older turns'));
  }
  if (omitted) {
    parts.push(count(omitted, 'older turn left out', 'older turns left out'));
  }
  return {
    text: `history: ${parts.join(', ')} (${tokens} tokens)`,
    title:
      'What the model saw of this chat’s earlier turns: the newest turns in full, then ' +
      `summaries of older ones (${w.l1 || 0} of a chunk of turns each, ${w.l2 || 0} of ` +
      'several chunks), older first; turns no summary covered were left out. Tokens: the ' +
      'size of that history in the prompt.'
  };
}
