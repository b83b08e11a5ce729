import { turnWindow } from '../../history/window';
import { turn } from '../runs/fixtures';

describe('the history window line', () => {
  it('formats what a turn’s history window held, only when the record says', () => {
    expect(turnWindow(turn('r'))).toBeNull();
    const window = { raw: 12, l1: 3, l2: 1, omitted: 40, tokens: 1834 };
    const shown = turnWindow(turn('r', { llm: { ...turn('r').llm, window } }));
    expect(shown?.text).toBe('history: 12 turns, 3 L1, 1 L2, 40 omitted, 1.8k tokens');
    expect(shown?.title).toMatch(/level-1 summaries/);
    const small = { raw: 1, l1: 0, l2: 0, omitted: 0, tokens: 217 };
    expect(turnWindow(turn('r', { llm: { ...turn('r').llm, window: small } }))?.text).toBe(
      'history: 1 turn, 0 L1, 0 L2, 0 omitted, 217 tokens'
    );
    const first = { raw: 0, l1: 0, l2: 0, omitted: 0, tokens: 0 };
    expect(turnWindow(turn('r', { llm: { ...turn('r').llm, window: first } }))).toBeNull();
  });
});
