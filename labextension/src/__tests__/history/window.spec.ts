import { turnWindow } from '../../history/window';
import { turn } from '../runs/fixtures';

describe('the history window line', () => {
  it('says in words what was summarised or left out, only when something was', () => {
    expect(turnWindow(turn('r'))).toBeNull();
    const window = { raw: 12, l1: 3, l2: 1, omitted: 40, tokens: 1834 };
    const shown = turnWindow(turn('r', { llm: { ...turn('r').llm, window } }));
    expect(shown?.text).toBe(
      'history: 12 recent turns in full, 4 summaries of older turns, 40 older turns left out (1.8k tokens)'
    );
    expect(shown?.title).toMatch(/3 of a chunk of turns each, 1 of several chunks/);
    const one = { raw: 1, l1: 1, l2: 0, omitted: 0, tokens: 217 };
    expect(turnWindow(turn('r', { llm: { ...turn('r').llm, window: one } }))?.text).toBe(
      'history: 1 recent turn in full, 1 summary of older turns (217 tokens)'
    );
    // Every earlier turn in full: nothing summarised, nothing left out, no line.
    const small = { raw: 1, l1: 0, l2: 0, omitted: 0, tokens: 217 };
    expect(turnWindow(turn('r', { llm: { ...turn('r').llm, window: small } }))).toBeNull();
    const first = { raw: 0, l1: 0, l2: 0, omitted: 0, tokens: 0 };
    expect(turnWindow(turn('r', { llm: { ...turn('r').llm, window: first } }))).toBeNull();
  });
});
