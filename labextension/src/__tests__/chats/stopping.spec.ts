import { runningCell, stopNote } from '../../chats/stopping';
import type { IRunState } from '../../runs/state';

function run(items: any[]): IRunState {
  return { items } as unknown as IRunState;
}

describe('what a stop says', () => {
  it('tells the person a soft stop waits for the running cell, and offers Stop now', () => {
    expect(stopNote(0, true)).toBe('');
    expect(stopNote(1, true)).toMatch(/^Stopping after the running cell ends/);
    expect(stopNote(1, true)).toMatch(/Stop now ends the cell at once/);
    expect(stopNote(1, false)).toMatch(/^Stopping at the agent’s next step/);
    expect(stopNote(2, true)).toBe('Stopping now…');
  });

  it('finds the cell still running', () => {
    expect(runningCell(undefined)).toBeNull();
    expect(runningCell(run([{ kind: 'cell', running: false, code: 'a' }]))).toBeNull();
    expect(
      runningCell(run([{ kind: 'bubble' }, { kind: 'cell', running: true, code: 'sleep(30)' }]))
    ).toBe('sleep(30)');
  });
});
