import { ChatState } from '../../chats/state';
import type { RunStep } from '../../events';
import type { ICellItem, IRunState } from '../../runs/state';
import { CHAT, ev, resetSeq, runEvents, runSteps, turn } from '../runs/fixtures';

beforeEach(() => {
  resetSeq();
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

  it('counts a summary event without making a run of it', () => {
    const s = new ChatState(CHAT);
    const chunk = { level: 1, first_turn: 1, last_turn: 10, text: 't', run_id: 'h', created: 'x' };
    expect(s.applyEvent(ev('summary', 'run_h', { chunk }))).toBe(false);
    expect(s.runs).toHaveLength(0);
    expect(s.summaries).toBe(1);
    expect(s.lastSeq).toBeGreaterThan(0);
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
    expect(s.run('r')!.items[0]).toMatchObject({
      lang: 'bash',
      running: false,
      stdout: 'a.txt\n',
      stderr: 'warn\n',
      returncode: 2,
      error: true
    });
    expect(cell.running).toBe(true); // items are values: the cell read before is unchanged
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
    s.applyEvent(ev('run_end', 'r', { stop_reason: 'break_hard', end_cause: 'break_hard' }));
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

  it('shows steering as queued until the run takes it, by message id', () => {
    const s = new ChatState(CHAT);
    s.applyEvent(ev('run_start', 'r', { text: 'first', message_id: 'msg_1' }));
    s.addUserMessage('first', 'r', 'run', 'msg_1');
    s.addUserMessage('also plot it', 'r', 'mailbox', 'msg_2');
    s.applyEvent(ev('cell_start', 'r', { cell_id: 'c2', kind: 'python', code: 'x' }));
    const queued = s.run('r')!.items.map(i => i.kind);
    expect(queued).toEqual(['steering', 'cell']);
    expect(s.run('r')!.items[0]).toEqual({
      kind: 'steering',
      messageId: 'msg_2',
      text: 'also plot it',
      queued: true
    });
    // The same text sent again is another message: never matched by text.
    s.applyEvent(ev('steering', 'r', { message_id: 'msg_2', text: 'also plot it', at: 'x' }));
    const items = s.run('r')!.items;
    expect(items.map(i => i.kind)).toEqual(['cell', 'steering']); // where the run took it
    expect(items[1]).toMatchObject({ messageId: 'msg_2', queued: false });
    expect(s.run('r')!.userText).toBe('first');
  });

  it('shows steering another tab sent, from its event', () => {
    const s = new ChatState(CHAT);
    s.applyEvent(ev('run_start', 'r'));
    s.applyEvent(ev('steering', 'r', { message_id: 'msg_9', text: 'faster', at: 'x' }));
    s.applyEvent(ev('reply', 'r', { text: 'Done.', done: true, message_id: 'm' }));
    s.applyEvent(ev('run_end', 'r', { turn: turn('r', { steering: [{ text: 'faster', at: 'x' }] }) }));
    expect(s.run('r')!.items).toEqual([
      { kind: 'steering', messageId: 'msg_9', text: 'faster', queued: false }
    ]);
    // The reply comes from `reply` once; run_end's turn is for the footer only.
    expect(s.run('r')!.reply!.text).toBe('Done.');
    expect(s.run('r')!.turn!.replies[1].text).toBe('It is **2**.');
  });

  it('does not show a steering event twice when the POST answer comes after it', () => {
    const s = new ChatState(CHAT);
    s.applyEvent(ev('run_start', 'r'));
    s.applyEvent(ev('steering', 'r', { message_id: 'msg_3', text: 'hi', at: 'x' }));
    s.addUserMessage('hi', 'r', 'mailbox', 'msg_3');
    expect(s.run('r')!.items).toHaveLength(1);
  });
});

describe('ChatState rebuilt from REST (records and steps)', () => {
  it('shows a record, then rebuilds the run from its steps as its events built it', () => {
    const live = new ChatState(CHAT);
    runEvents('r1').forEach(e => live.applyEvent(e));

    const s = new ChatState(CHAT);
    s.loadTurns([turn('r1')], null);
    expect(s.runs.map(r => r.source)).toEqual(['record']);
    expect(s.run('r1')!.items).toEqual([{ kind: 'bubble', messageId: null, text: 'Let me look.' }]);
    expect(s.runsToLoad()).toEqual(['r1']);
    expect(s.loadSteps('r1', runSteps())).toBe(true);
    const run = s.run('r1')!;
    expect(run.source).toBe('steps');
    expect(s.runsToLoad()).toEqual([]);
    // The same items, cells, reply and footer as the live view had.
    const shown = (r: IRunState) => ({
      userText: r.userText,
      items: r.items,
      reply: r.reply,
      ended: r.ended,
      endCause: r.endCause,
      turn: r.turn
    });
    expect(shown(run)).toEqual(shown(live.run('r1')!));
  });

  it('ignores the kept events of a run shown from its record or steps', () => {
    const s = new ChatState(CHAT);
    s.loadTurns([turn('r1')], null);
    s.loadSteps('r1', runSteps());
    const before = JSON.stringify(s.run('r1'));
    for (const e of runEvents('r1')) {
      expect(s.applyEvent(e)).toBe(false);
    }
    expect(JSON.stringify(s.run('r1'))).toBe(before);
    expect(s.lastSeq).toBe(10); // caught up all the same
  });

  it('rebuilds a hard-stopped cell, a bash command and cell bubbles from steps', () => {
    const s = new ChatState(CHAT);
    const stopped = turn('r', { llm: { ...turn('r').llm, stopReason: 'break_hard', endCause: 'break_hard' } });
    s.loadTurns([stopped], null);
    const steps: RunStep[] = [
      { type: 'user', seq: 1, text: 'loop', at: 't', view: null, attachments: [], message_id: null },
      {
        type: 'bash', seq: 4, cell_id: 'c1', command: 'ls', status: 'ok', t: 't', returncode: 2,
        stdout: 'a\n', stderr: 'warn\n', digest: '$ ls', error: null, timeout_s: 60,
        timed_out: false, duration_s: 0.2, outputs_truncated: false, end_status: 'error'
      },
      {
        type: 'cell', seq: 6, seqs: [6, 7], cell_id: 'c2', code: 'while 1: pass', status: 'cancelled',
        t: 't', execution_count: null, duration_s: 1.5, failed: false, app_calls: 1, digest: null,
        outputs: [{ output_type: 'stream', name: 'stdout', text: 'before\n' }], error: null,
        timeout_s: 60, deterministic: false, outputs_truncated: false, end_status: 'cancelled',
        bubbles: ['half way'],
        copies: []
      },
      { type: 'reply', seq: 8, text: 'never', t: 't', status: 'cancelled', message_id: null }
    ];
    s.loadSteps('r', steps);
    const run = s.run('r')!;
    expect(run.items.map(i => i.kind)).toEqual(['cell', 'cell', 'bubble']);
    expect(run.items[0]).toMatchObject({ lang: 'bash', stdout: 'a\n', returncode: 2, status: 'error', error: true });
    expect(run.items[1]).toMatchObject({ status: 'cancelled', running: false, digest: null, durationS: 1.5 });
    expect((run.items[1] as ICellItem).outputs).toHaveLength(1);
    expect(run.reply).toBeNull(); // never delivered
    expect(run.endCause).toBe('break_hard');
  });

  it('is idempotent when records arrive after the events', () => {
    const s = new ChatState(CHAT);
    runEvents('r').forEach(e => s.applyEvent(e));
    s.loadTurns([turn('r')], null);
    expect(s.runs).toHaveLength(1);
    expect(s.run('r')!.items.filter(i => i.kind === 'bubble')).toHaveLength(1);
    expect(s.loadSteps('r', runSteps())).toBe(false); // live in this view: events win
  });

  it('keeps the active run from the chat record, built from its events', () => {
    const s = new ChatState(CHAT);
    s.loadTurns([turn('r1')], 'r2');
    expect(s.activeRunId).toBe('r2');
    expect(s.running).toBe(true);
    expect(s.applyEvent(ev('cell_start', 'r2', { cell_id: 'c1', kind: 'python', code: 'x' }))).toBe(true);
    expect(s.runsToLoad()).toEqual(['r1']);
  });
});

describe('ChatState.changed', () => {
  it('is emitted once per change, never for an event ignored', () => {
    const s = new ChatState(CHAT);
    let count = 0;
    s.changed.connect(() => {
      count += 1;
    });
    const events = runEvents('r');
    events.forEach(e => s.applyEvent(e));
    expect(count).toBe(events.length);
    s.applyEvent(events[2]); // already applied
    expect(count).toBe(events.length);
    s.addUserMessage('more', 'r', 'mailbox', 'msg_5');
    s.addNote('r', 'a note');
    expect(count).toBe(events.length + 2);
    s.loadTurns([turn('r0')], null);
    s.loadSteps('r0', runSteps());
    expect(count).toBe(events.length + 4);
    expect(s.loadSteps('nope', [])).toBe(false);
    expect(count).toBe(events.length + 4);
  });
});
