import type { IRunDiff } from '../../api/types';
import { diffRows, divergenceText } from '../../runs/diffrows';

const BODY: IRunDiff = {
  identical: false,
  tiers_differ: true,
  a: { run_id: 'run_a', program: 'toolcaller@v8', model: 'claude-sonnet-4-5' },
  b: { run_id: 'run_b', program: 'toolcaller@v8', model: 'claude-haiku-4-5', rerun_of: 'run_a' },
  divergence: {
    index: 3,
    effect_a: 'http.post',
    effect_b: 'http.post',
    part: 'intent',
    what: 'the request differs: model',
    model: { a: 'claude-sonnet-4-5', b: 'claude-haiku-4-5' }
  },
  summary: {
    a: { model_calls: 2, cells: 1, tokens_in: 100, tokens_out: 10, cost: 0.00123, stop_reason: 'end_turn', seconds: 1.5 },
    b: { model_calls: 2, cells: 1, tokens_in: 100, tokens_out: 12, cost: null, stop_reason: 'end_turn', seconds: 1.2 }
  }
};

describe('the diff view', () => {
  it('lists both runs side by side, marking what changed', () => {
    const rows = diffRows(BODY);
    expect(rows[0]).toEqual(['model', 'claude-sonnet-4-5', 'claude-haiku-4-5', true]);
    expect(rows[1]).toEqual(['program', 'toolcaller@v8', 'toolcaller@v8', false]);
    expect(rows.find(r => r[0] === 'tokens out')).toEqual(['tokens out', '10', '12', true]);
    expect(rows.find(r => r[0] === 'cost (USD)')).toEqual(['cost (USD)', '0.0012', '—', true]);
    expect(rows.find(r => r[0] === 'cells')).toEqual(['cells', '1', '1', false]);
  });

  it('says where the runs part, or that they do not', () => {
    expect(divergenceText(BODY)).toBe(
      'They first part at effect 4 (http.post), its intent: the request differs: model.'
    );
    expect(divergenceText({ ...BODY, identical: true, divergence: null })).toContain('Identical');
    const ended = { ...BODY.divergence!, effect_b: null, part: 'effect' as const, what: 'run b ended here' };
    expect(divergenceText({ ...BODY, divergence: ended })).toContain('(http.post / the end)');
  });
});
