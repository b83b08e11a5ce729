/**
 * The runs' reducer as pure functions: state in, event in, new state out; nothing
 * mutated (the states are deep-frozen), unchanged parts kept (by identity), the same
 * state back for an event that shows nothing.
 */
import { withSteps, withTurns } from '../../runs/records';
import { reduceEvent, reduceRun } from '../../runs/reducer';
import { emptyChat, IAgentEvent, IChatRuns, ICellItem, newRun } from '../../runs/state';
import { CHAT, ev, resetSeq, runEvents, runSteps, turn } from './fixtures';

/** Freeze a state and everything in it (a mutation then throws: the specs are strict). */
function frozen<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value as object)) {
      frozen(v);
    }
  }
  return value;
}

/** Fold events through the reducer, each from a frozen state. */
function fold(events: IAgentEvent[], from: IChatRuns = emptyChat(CHAT)): IChatRuns {
  return events.reduce((state, e) => reduceEvent(frozen(state), e), from);
}

beforeEach(() => {
  resetSeq();
});

describe('reduceEvent', () => {
  it('builds a whole run from frozen states, never mutating one', () => {
    const state = fold(runEvents('r'));
    expect(state.lastSeq).toBe(10);
    expect(state.activeRunId).toBeNull();
    const run = state.runs[0];
    expect(run.items.map(i => i.kind)).toEqual(['bubble', 'cell']);
    expect(run.items[1]).toMatchObject({ cellId: 'c1', running: false, executionCount: 1 });
    expect(run.reply).toEqual({ text: 'It is **2**.', messageId: 'msg_2' });
    expect(run).toMatchObject({ ended: true, endCause: 'done', streaming: '', retry: null });
  });

  it('answers the same state for an event seen already or of another chat', () => {
    const state = frozen(fold(runEvents('r').slice(0, 4)));
    expect(reduceEvent(state, { type: 'delta', chat_id: CHAT, run_id: 'r', seq: 4, text: 'x' })).toBe(state);
    expect(reduceEvent(state, { type: 'delta', chat_id: 'other', run_id: 'r', seq: 99, text: 'x' })).toBe(state);
  });

  it('keeps what an event does not touch, by identity', () => {
    const events = runEvents('r1');
    const r2 = [
      ev('run_start', 'r2', { text: 'next' }),
      ev('cell_start', 'r2', { cell_id: 'c9', kind: 'python', code: 'x' }),
      ev('bubble', 'r2', { text: 'working', message_id: 'b1' })
    ];
    const before = fold([...events, ...r2]);
    const after = reduceEvent(
      frozen(before),
      ev('cell_output', 'r2', { cell_id: 'c9', output: { output_type: 'stream', name: 'stdout', text: '1' } })
    );
    expect(after.runs[0]).toBe(before.runs[0]); // the other run
    const [cell, bubble] = after.runs[1].items;
    expect(bubble).toBe(before.runs[1].items[1]); // the other item
    expect(cell).not.toBe(before.runs[1].items[0]);
    expect((cell as ICellItem).outputs).toHaveLength(1);
    expect((before.runs[1].items[0] as ICellItem).outputs).toHaveLength(0);
  });

  it('counts a summary, and moves lastSeq for events it does not show', () => {
    const start = frozen(fold([ev('run_start', 'r')]));
    const summed = reduceEvent(start, ev('summary', 'run_h', { chunk: {} }));
    expect(summed).toMatchObject({ summaries: 1, lastSeq: 2 });
    expect(summed.runs).toBe(start.runs);
    const unknown = reduceEvent(summed, ev('model_call', 'r'));
    expect(unknown.lastSeq).toBe(3);
    expect(unknown.runs).toBe(start.runs);
  });

  it('takes a title event as seen, with no run of its own', () => {
    const start = frozen(fold([ev('run_start', 'r')]));
    const named = reduceEvent(start, ev('title', 'run_t', { title: 'Sine wave maximum' }));
    expect(named.lastSeq).toBe(2);
    expect(named.runs).toBe(start.runs);
    expect(named.summaries).toBe(start.summaries);
  });

  it('leaves a run shown from its record or steps to them, but places its proposals', () => {
    const recorded = withTurns(emptyChat(CHAT), [turn('r')], null);
    const stepped = frozen(withSteps(recorded, 'r', runSteps(), () => null));
    expect(stepped.runs[0].source).toBe('steps');
    const caught = fold(runEvents('r'), stepped);
    expect(caught.runs).toBe(stepped.runs);
    expect(caught.lastSeq).toBe(10);
    const proposed = reduceEvent(
      frozen(caught),
      ev('proposal', 'r', { proposal_id: 'p1', path: 'a.ipynb', edits: [] })
    );
    expect(proposed.runs[0].items.at(-1)).toEqual({ kind: 'proposal', proposalId: 'p1' });
    // Once: its replay (a later seq) places nothing more; its end is the store's.
    const again = reduceEvent(proposed, ev('proposal', 'r', { proposal_id: 'p1', path: 'a.ipynb', edits: [] }));
    expect(again.runs).toBe(proposed.runs);
    expect(reduceEvent(again, ev('proposal_end', 'r', { proposal_id: 'p1', outcome: 'applied' })).runs).toBe(
      proposed.runs
    );
  });

  it('sets the active run on run_start and clears it on run_end', () => {
    const started = fold([ev('run_start', 'r', { text: 'go' })]);
    expect(started.activeRunId).toBe('r');
    const ended = fold([ev('run_end', 'r', { stop_reason: 'done', end_cause: 'done', turn: turn('r') })], started);
    expect(ended.activeRunId).toBeNull();
    expect(started.activeRunId).toBe('r');
  });

  it('moves a message taken with a stop to the run it opens', () => {
    const first = fold([
      ev('run_start', 'r1', { text: 'count', message_id: 'msg_1' }),
      ev('steering', 'r1', { text: 'also the minimum', message_id: 'msg_2' }),
      ev('run_end', 'r1', { stop_reason: 'wrapup', end_cause: 'break_soft', turn: turn('r1') })
    ]);
    expect(first.runs[0].items.map(i => i.kind)).toEqual(['steering']);
    const next = fold([ev('run_start', 'r2', { text: 'also the minimum', message_id: 'msg_2' })], first);
    expect(next.runs[0].items).toEqual([]);
    expect(next.runs[1]).toMatchObject({ userText: 'also the minimum', userMessageId: 'msg_2' });
    // Another run's start leaves steering it did not take where it is.
    const other = fold([ev('run_start', 'r3', { text: 'new', message_id: 'msg_9' })], first);
    expect(other.runs[0]).toBe(first.runs[0]);
  });
});

describe('reduceRun', () => {
  it('ends a retry with the next shown event only', () => {
    const run = frozen({
      ...newRun('r', 'events'),
      retry: { attempt: 2, status: 529, waitS: 1.5 }
    });
    expect(reduceRun(run, { type: 'delta', chat_id: CHAT, run_id: 'r', seq: 1, text: 'a' } as any).retry).toBeNull();
    // Nothing shown (an output of a cell never started): the same run, retry and all.
    const same = reduceRun(run, {
      type: 'cell_output', chat_id: CHAT, run_id: 'r', seq: 2, cell_id: 'nope', output: {}
    } as any);
    expect(same).toBe(run);
  });

  it('takes a queued steering message where the run took it', () => {
    const run = frozen({
      ...newRun('r', 'events'),
      items: [{ kind: 'steering' as const, messageId: 'm2', text: 'faster', queued: true }]
    });
    const next = reduceRun(run, {
      type: 'cell_start', chat_id: CHAT, run_id: 'r', seq: 1, cell_id: 'c1', kind: 'python', code: 'x'
    } as any);
    const taken = reduceRun(frozen(next), {
      type: 'steering', chat_id: CHAT, run_id: 'r', seq: 2, message_id: 'm2', text: 'faster', at: 't'
    } as any);
    expect(taken.items.map(i => i.kind)).toEqual(['cell', 'steering']);
    expect(taken.items[1]).toEqual({ kind: 'steering', messageId: 'm2', text: 'faster', queued: false });
    expect(run.items[0]).toMatchObject({ queued: true });
  });
});
