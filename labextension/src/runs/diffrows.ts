/**
 * What the view of two runs shows (pure: jest tests it alone): their totals side by side
 * (`diffRows`), where they part (`divergenceText`), and which diffs it holds (`DIFFS`).
 */
import type { IRunDiff } from '../api/types';

const ROWS: [string, string][] = [
  ['model calls', 'model_calls'],
  ['cells', 'cells'],
  ['tokens in', 'tokens_in'],
  ['tokens out', 'tokens_out'],
  ['cost (USD)', 'cost'],
  ['stop reason', 'stop_reason'],
  ['seconds', 'seconds']
];
/** The divergence's diffs, in the order the view shows them. */
export const DIFFS = ['system_diff', 'conversation_diff', 'reply_diff', 'code_diff', 'output_diff', 'data_diff'];

function shownValue(value: unknown): string {
  if (value === null || value === undefined) {
    return '—';
  }
  return typeof value === 'number' && !Number.isInteger(value) ? value.toFixed(4) : String(value);
}

/** The totals side by side: [label, a, b, changed]. */
export function diffRows(body: IRunDiff): [string, string, string, boolean][] {
  const rows: [string, string, string, boolean][] = [
    ['model', shownValue(body.a.model), shownValue(body.b.model), body.a.model !== body.b.model],
    ['program', shownValue(body.a.program), shownValue(body.b.program), body.a.program !== body.b.program]
  ];
  for (const [label, key] of ROWS) {
    const a = shownValue(body.summary.a[key]);
    const b = shownValue(body.summary.b[key]);
    rows.push([label, a, b, a !== b]);
  }
  return rows;
}

/** The one line that says whether and where the runs part. */
export function divergenceText(body: IRunDiff): string {
  const d = body.divergence;
  if (!d) {
    return body.identical
      ? 'Identical: the same effects, asked and answered alike.'
      : 'The runs ran alike on other tiers.';
  }
  const effect = d.effect_a === d.effect_b ? d.effect_a : `${d.effect_a ?? 'the end'} / ${d.effect_b ?? 'the end'}`;
  return `They first part at effect ${d.index + 1} (${effect}), its ${d.part}: ${d.what}.`;
}

