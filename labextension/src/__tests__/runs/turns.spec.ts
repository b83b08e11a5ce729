import { describeEnd, turnStats } from '../../runs/turns';
import { turn } from './fixtures';

describe('the turn footer', () => {
  it('describes every end cause', () => {
    expect(describeEnd('done')).toBe('Done');
    expect(describeEnd('length')).toMatch(/length/);
    expect(describeEnd('ceiling:model_calls')).toBe('Wrapped up: reached the model calls ceiling');
    expect(describeEnd('break_soft')).toBe('Stopped');
    expect(describeEnd('break_hard')).toMatch(/hard/);
    expect(describeEnd('error')).toMatch(/error/);
    expect(describeEnd('restart')).toMatch(/restarted/);
  });

  it('formats a turn’s figures', () => {
    expect(turnStats(turn('r'))).toEqual([
      '1200 in / 80 out',
      'cache 15.0k read / 0 write',
      '$0.0123',
      '1 cell',
      '1.5 s',
      'claude-sonnet-4-5'
    ]);
    expect(turnStats(turn('r', { model: null, llm: { ...turn('r').llm, cost: null } }))[2]).toBe(
      'cost n/a'
    );
  });
});
