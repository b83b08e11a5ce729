/**
 * What a turn's history window held (`llm.window` of its record: the turns shown in full,
 * the level-1 and level-2 chunk summaries, the turns omitted, the tokens), as the turn's
 * footer shows it. Pure: no `@jupyterlab/*` or DOM import.
 */
import type { ITurnRecord } from '../runs/turns';

/**
 * The turn footer's history figure: `history: 12 turns, 3 L1, 1 L2, 40 omitted, 1.8k
 * tokens` (as `jupyter agent trace show` prints it) and a title explaining it; null when
 * the record says nothing about its window.
 */
export function turnWindow(turn: ITurnRecord): { text: string; title: string } | null {
  const w = turn.llm?.window;
  // A chat's first turn has no history: nothing worth a line.
  if (!w || !((w.raw || 0) + (w.l1 || 0) + (w.l2 || 0) + (w.omitted || 0))) {
    return null;
  }
  const tokens = w.tokens >= 1000 ? `${(w.tokens / 1000).toFixed(1)}k` : String(w.tokens || 0);
  const raw = w.raw || 0;
  return {
    text:
      `history: ${raw} turn${raw === 1 ? '' : 's'}, ${w.l1 || 0} L1, ${w.l2 || 0} L2, ` +
      `${w.omitted || 0} omitted, ${tokens} tokens`,
    title:
      'What the model saw of this chat’s earlier turns: the newest turns in full, then ' +
      'level-1 summaries (one per chunk of turns), then level-2 summaries (one per run of ' +
      'chunks), older first; "omitted" counts the turns no summary covered (not shown). ' +
      'Tokens: the size of that history in the prompt.'
  };
}
