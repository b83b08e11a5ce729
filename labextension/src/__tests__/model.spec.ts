import {
  ChatState,
  describeEnd,
  IAgentEvent,
  ICellItem,
  ITurnRecord,
  turnStats
} from '../model';
import { backoffMs } from '../stream';

const CHAT = 'chat_1';
let seq = 0;

function ev(type: string, run_id: string, fields: Record<string, unknown> = {}): IAgentEvent {
  seq += 1;
  return { type, chat_id: CHAT, run_id, seq, ...fields };
}

function turn(run_id: string, fields: Partial<ITurnRecord> = {}): ITurnRecord {
  return {
    id: `turn_${run_id}`,
    chat_id: CHAT,
    run_id,
    userText: 'what is 1+1?',
    steering: [],
    replies: [
      { text: 'Let me look.', done: false },
      { text: 'It is **2**.', done: true }
    ],
    interrupted: false,
    created: '2025-01-01T00:00:00Z',
    durationMs: 1500,
    model: 'claude-sonnet-4-5',
    llm: {
      stopReason: 'done',
      endCause: 'done',
      modelCalls: 2,
      cells: 1,
      usage: { in: 1200, out: 80, cacheRead: 15000, cacheWrite: 0, reasoning: 0 },
      cost: 0.0123
    },
    ...fields
  };
}

/** The events of a whole run: a bubble, one cell, streamed reply, end. */
function runEvents(run: string): IAgentEvent[] {
  return [
    ev('run_start', run, { started: '2025-01-01T00:00:00Z' }),
    ev('delta', run, { text: 'Let me ' }),
    ev('delta', run, { text: 'look.' }),
    ev('bubble', run, { text: 'Let me look.', done: false, message_id: 'msg_1' }),
    ev('cell_start', run, { cell_id: 'c1', kind: 'python', code: 'print(1+1)' }),
    ev('cell_end', run, {
      cell_id: 'c1',
      kind: 'python',
      outputs: [{ output_type: 'stream', name: 'stdout', text: '2\n' }],
      execution_count: 1,
      error: false,
      digest: 'print #1: 2',
      duration_s: 0.01
    }),
    ev('delta', run, { text: 'It is ' }),
    ev('delta', run, { text: '**2**.' }),
    ev('reply', run, { text: 'It is **2**.', done: true, message_id: 'msg_2' }),
    ev('run_end', run, { stopReason: 'done', endCause: 'done', turn: turn(run) })
  ];
}

beforeEach(() => {
  seq = 0;
});

describe('ChatState.applyEvent', () => {
  it('builds a run: bubble, cell by cell_id, reply, end', () => {
    const s = new ChatState(CHAT);
    for (const e of runEvents('run_1')) {
      expect(s.applyEvent(e)).toBe(true);
    }
    expect(s.runs).toHaveLength(1);
    const run = s.runs[0];
    expect(run.items.map(i => i.kind)).toEqual(['bubble', 'cell']);
    const cell = run.items[1] as ICellItem;
    expect(cell).toMatchObject({
      cellId: 'c1',
      lang: 'python',
      code: 'print(1+1)',
      running: false,
      executionCount: 1,
      digest: 'print #1: 2',
      error: false
    });
    expect(cell.outputs).toHaveLength(1);
    expect(run.reply?.text).toBe('It is **2**.');
    expect(run.streaming).toBe('');
    expect(run.ended).toBe(true);
    expect(run.endCause).toBe('done');
    expect(run.userText).toBe('what is 1+1?');
    expect(s.activeRunId).toBeNull();
    expect(s.lastSeq).toBe(10);
  });

  it('streams deltas until the reply arrives', () => {
    const s = new ChatState(CHAT);
    s.applyEvent(ev('run_start', 'r'));
    s.applyEvent(ev('delta', 'r', { text: 'Hel' }));
    s.applyEvent(ev('delta', 'r', { text: 'lo' }));
    expect(s.run('r')!.streaming).toBe('Hello');
    expect(s.running).toBe(true);
    expect(s.activeRunId).toBe('r');
    s.applyEvent(ev('reply', 'r', { text: 'Hello', message_id: 'm' }));
    expect(s.run('r')!.streaming).toBe('');
    expect(s.run('r')!.reply!.text).toBe('Hello');
  });

  it('ignores events already applied (catch-up by seq)', () => {
    const s = new ChatState(CHAT);
    const events = runEvents('r');
    events.slice(0, 6).forEach(e => s.applyEvent(e));
    // A reconnect with since=4 replays 5 and 6 again, then the rest.
    for (const e of events.slice(4)) {
      s.applyEvent(e);
    }
    const run = s.run('r')!;
    expect(run.items.filter(i => i.kind === 'cell')).toHaveLength(1);
    expect(run.items.filter(i => i.kind === 'bubble')).toHaveLength(1);
    expect(s.applyEvent(events[3])).toBe(false);
    expect(s.lastSeq).toBe(10);
  });

  it('ignores events of another chat', () => {
    const s = new ChatState(CHAT);
    expect(s.applyEvent({ type: 'run_start', chat_id: 'other', run_id: 'r', seq: 1 })).toBe(false);
    expect(s.runs).toHaveLength(0);
  });

  it('updates a cell by cell_id and keeps bash output apart', () => {
    const s = new ChatState(CHAT);
    s.applyEvent(ev('run_start', 'r'));
    s.applyEvent(ev('cell_start', 'r', { cell_id: 'b3', kind: 'bash', code: 'ls' }));
    const cell = s.run('r')!.items[0] as ICellItem;
    expect(cell.running).toBe(true);
    s.applyEvent(
      ev('cell_end', 'r', {
        cell_id: 'b3',
        kind: 'bash',
        stdout: 'a.txt\n',
        stderr: 'warn\n',
        returncode: 2,
        error: true,
        digest: 'exit 2',
        duration_s: 0.2
      })
    );
    expect(cell).toMatchObject({
      lang: 'bash',
      running: false,
      stdout: 'a.txt\n',
      stderr: 'warn\n',
      returncode: 2,
      error: true
    });
  });

  it('shows a retry until the next event, and clears it at run end', () => {
    const s = new ChatState(CHAT);
    s.applyEvent(ev('run_start', 'r'));
    s.applyEvent(ev('retry', 'r', { attempt: 2, status: 529, wait_s: 1.5 }));
    expect(s.run('r')!.retry).toEqual({ attempt: 2, status: 529, waitS: 1.5 });
    s.applyEvent(ev('delta', 'r', { text: 'ok' }));
    expect(s.run('r')!.retry).toBeNull();
  });

  it('marks a run that ends while a cell runs as not running', () => {
    const s = new ChatState(CHAT);
    s.applyEvent(ev('run_start', 'r'));
    s.applyEvent(ev('cell_start', 'r', { cell_id: 'c1', kind: 'python', code: 'sleep' }));
    s.applyEvent(ev('run_end', 'r', { stopReason: 'break_hard', endCause: 'break_hard' }));
    expect((s.run('r')!.items[0] as ICellItem).running).toBe(false);
    expect(s.run('r')!.endCause).toBe('break_hard');
    expect(s.running).toBe(false);
  });
});

describe('ChatState user messages', () => {
  it('puts the opening message on its run even when events came first', () => {
    const s = new ChatState(CHAT);
    s.applyEvent(ev('run_start', 'r'));
    s.addUserMessage('hello', 'r', 'run');
    expect(s.run('r')!.userText).toBe('hello');
    expect(s.runs).toHaveLength(1);
  });

  it('shows steering as queued, confirmed by the turn record', () => {
    const s = new ChatState(CHAT);
    s.applyEvent(ev('run_start', 'r'));
    s.addUserMessage('first', 'r', 'run');
    s.addUserMessage('also plot it', 'r', 'mailbox');
    const steer = s.run('r')!.items[0];
    expect(steer).toEqual({ kind: 'steering', text: 'also plot it', queued: true });
    s.applyEvent(
      ev('run_end', 'r', {
        stopReason: 'done',
        endCause: 'done',
        turn: turn('r', { userText: 'first', steering: [{ text: 'also plot it', at: 'x' }] })
      })
    );
    expect(s.run('r')!.items).toEqual([{ kind: 'steering', text: 'also plot it', queued: false }]);
  });

  it('adds steering another tab sent, from the record', () => {
    const s = new ChatState(CHAT);
    s.applyEvent(ev('run_start', 'r'));
    s.applyEvent(
      ev('run_end', 'r', { turn: turn('r', { steering: [{ text: 'faster', at: 'x' }] }) })
    );
    expect(s.run('r')!.items).toEqual([{ kind: 'steering', text: 'faster', queued: false }]);
    expect(s.run('r')!.reply!.text).toBe('It is **2**.');
  });
});

describe('ChatState restore', () => {
  it('shows turns from records, then rebuilds a run from its kept events', () => {
    const s = new ChatState(CHAT);
    s.loadTurns([turn('r1'), turn('r2')], null);
    expect(s.runs.map(r => r.source)).toEqual(['record', 'record']);
    expect(s.run('r1')!.items).toEqual([{ kind: 'bubble', messageId: null, text: 'Let me look.' }]);
    expect(s.run('r1')!.reply!.text).toBe('It is **2**.');
    expect(s.recordOnlyRuns()).toEqual(['r1', 'r2']);
    // The socket from since=0 replays r2's events (r1's are no longer held).
    runEvents('r2').forEach(e => s.applyEvent(e));
    const r2 = s.run('r2')!;
    expect(r2.source).toBe('events');
    expect(r2.items.map(i => i.kind)).toEqual(['bubble', 'cell']);
    expect(r2.userText).toBe('what is 1+1?');
    expect(s.runs.map(r => r.runId)).toEqual(['r1', 'r2']);
    expect(s.recordOnlyRuns()).toEqual(['r1']);
  });

  it('is idempotent when records arrive after the events', () => {
    const s = new ChatState(CHAT);
    runEvents('r').forEach(e => s.applyEvent(e));
    s.loadTurns([turn('r')], null);
    expect(s.runs).toHaveLength(1);
    expect(s.run('r')!.items.filter(i => i.kind === 'bubble')).toHaveLength(1);
  });

  it('keeps the active run from the chat record', () => {
    const s = new ChatState(CHAT);
    s.loadTurns([turn('r1')], 'r2');
    expect(s.activeRunId).toBe('r2');
    expect(s.running).toBe(true);
  });

  it('restores cells, bubbles and notes from a run notebook', () => {
    const s = new ChatState(CHAT);
    s.loadTurns([turn('r1')], null);
    const nb = {
      cells: [
        { cell_type: 'markdown', source: '**User** · t\n\nwhat?', metadata: { jupyter_agent: { kind: 'user' } } },
        { cell_type: 'markdown', source: '**agent** (progress)\n\nLet me look.', metadata: { jupyter_agent: { kind: 'bubble' } } },
        {
          cell_type: 'code',
          source: ['import math\n', 'math.pi'],
          execution_count: 1,
          outputs: [{ output_type: 'execute_result', data: { 'text/plain': '3.14' }, metadata: {}, execution_count: 1 }],
          metadata: { jupyter_agent: { kind: 'python', cell_id: 'c1', digest: 'last: 3.14', status: 'ok' } }
        },
        {
          cell_type: 'code',
          source: "sh('ls', timeout=60)",
          outputs: [{ output_type: 'stream', name: 'stderr', text: 'nope\n' }],
          metadata: { jupyter_agent: { kind: 'bash', cell_id: 'c2', returncode: 1, status: 'ok' } }
        },
        { cell_type: 'markdown', source: '> **Note:** A hard break', metadata: { jupyter_agent: { kind: 'note' } } },
        { cell_type: 'markdown', source: '**agent** (reply)\n\nIt is 2.', metadata: { jupyter_agent: { kind: 'reply' } } }
      ]
    };
    expect(s.restoreFromNotebook('r1', nb)).toBe(true);
    const items = s.run('r1')!.items;
    expect(items.map(i => i.kind)).toEqual(['bubble', 'cell', 'cell', 'note']);
    expect(items[0]).toMatchObject({ text: 'Let me look.' });
    expect(items[1]).toMatchObject({ code: 'import math\nmath.pi', digest: 'last: 3.14', error: false, executionCount: 1 });
    expect(items[2]).toMatchObject({ lang: 'bash', stderr: 'nope\n', returncode: 1, error: true });
    expect(items[3]).toMatchObject({ text: 'A hard break' });
    // Only once, and never over a run built from events.
    expect(s.restoreFromNotebook('r1', nb)).toBe(false);
  });
});

describe('presentation helpers', () => {
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

  it('backs off from 0.25 s doubling up to 10 s', () => {
    const mid = () => 0.5;
    expect(backoffMs(0, mid)).toBe(250);
    expect(backoffMs(1, mid)).toBe(500);
    expect(backoffMs(10, mid)).toBe(10000);
    expect(backoffMs(3, () => 0)).toBe(1500);
    expect(backoffMs(3, () => 1)).toBe(2500);
  });
});
