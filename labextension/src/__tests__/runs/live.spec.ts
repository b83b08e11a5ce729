import { ChatState } from '../../chats/state';
import type { RunStep } from '../../events';
import type { IAgentEvent, ICellItem } from '../../runs/state';
import type { ITurnRecord } from '../../runs/turns';

const CHAT = 'chat_live';
let seq = 0;

function ev(type: string, fields: Record<string, unknown> = {}): IAgentEvent {
  seq += 1;
  return { type, chat_id: CHAT, run_id: 'r', seq, ...fields };
}

function stream(text: string, name = 'stdout'): Record<string, unknown> {
  return { output_type: 'stream', name, text };
}

/** A chat whose run `r` started cell `c1`, and that cell as it is now at each call. */
function started(lang: 'python' | 'bash' = 'python'): [ChatState, () => ICellItem] {
  const s = new ChatState(CHAT);
  s.applyEvent(ev('run_start'));
  const cellId = 'c1';
  s.applyEvent(ev('cell_start', { cell_id: cellId, kind: lang, code: 'work()' }));
  return [s, () => s.run('r')!.items[0] as ICellItem];
}

beforeEach(() => {
  seq = 0;
});

describe('live cell output', () => {
  it('adds outputs to the running cell, then the final ones replace them', () => {
    const [s, cell] = started();
    expect(cell().status).toBe('running');
    expect(s.applyEvent(ev('cell_output', { cell_id: 'c1', output: stream('tick 1\n') }))).toBe(true);
    s.applyEvent(ev('cell_output', { cell_id: 'c1', output: stream('tick 2\n') }));
    const png = { output_type: 'display_data', data: { 'image/png': 'iVBOR' }, metadata: {} };
    s.applyEvent(ev('cell_output', { cell_id: 'c1', output: png }));
    expect(cell().outputs).toEqual([stream('tick 1\n'), stream('tick 2\n'), png]);
    expect(cell().running).toBe(true);
    const final = [stream('tick 1\ntick 2\n'), png];
    s.applyEvent(
      ev('cell_end', {
        cell_id: 'c1',
        kind: 'python',
        outputs: final,
        execution_count: 3,
        error: false,
        digest: 'print #1',
        duration_s: 1.5,
        status: 'ok'
      })
    );
    expect(cell()).toMatchObject({ running: false, status: 'ok', outputs: final });
    // A late live output (published before the end, delivered after) changes nothing.
    expect(s.applyEvent(ev('cell_output', { cell_id: 'c1', output: stream('late\n') }))).toBe(false);
    expect(cell().outputs).toEqual(final);
  });

  it('streams bash stdout and stderr into the command', () => {
    const [s, cell] = started('bash');
    s.applyEvent(ev('cell_output', { cell_id: 'c1', output: stream('one\n') }));
    s.applyEvent(ev('cell_output', { cell_id: 'c1', output: stream('oops\n', 'stderr') }));
    s.applyEvent(ev('cell_output', { cell_id: 'c1', output: stream('two\n') }));
    expect(cell().stdout).toBe('one\ntwo\n');
    expect(cell().stderr).toBe('oops\n');
    s.applyEvent(
      ev('cell_end', {
        cell_id: 'c1',
        kind: 'bash',
        stdout: 'one\ntwo\n',
        stderr: 'oops\n',
        returncode: 0,
        error: false,
        digest: 'ok',
        duration_s: 0.3,
        status: 'ok'
      })
    );
    expect(cell()).toMatchObject({ running: false, status: 'ok', stdout: 'one\ntwo\n' });
  });

  it('catch-up after a reconnect never doubles live output', () => {
    const s = new ChatState(CHAT);
    const events = [
      ev('run_start'),
      ev('cell_start', { cell_id: 'c1', kind: 'python', code: 'x' }),
      ev('cell_output', { cell_id: 'c1', output: stream('a\n') }),
      ev('cell_output', { cell_id: 'c1', output: stream('b\n') })
    ];
    events.slice(0, 3).forEach(e => s.applyEvent(e));
    events.slice(1).forEach(e => s.applyEvent(e)); // since=1 again
    expect((s.run('r')!.items[0] as ICellItem).outputs).toEqual([stream('a\n'), stream('b\n')]);
  });

  it('ignores output of a cell it never saw start', () => {
    const s = new ChatState(CHAT);
    s.applyEvent(ev('run_start'));
    expect(s.applyEvent(ev('cell_output', { cell_id: 'c9', output: stream('x') }))).toBe(false);
    expect(s.run('r')!.items).toEqual([]);
  });
});

describe('how a cell ended', () => {
  it.each([
    ['cancelled', true],
    ['timed_out', true],
    ['error', true],
    ['ok', false]
  ])('takes the status %s from cell_end', (status, error) => {
    const [s, cell] = started();
    s.applyEvent(ev('cell_output', { cell_id: 'c1', output: stream('before\n') }));
    const outputs = [stream('before\n')];
    s.applyEvent(
      ev('cell_end', { cell_id: 'c1', kind: 'python', outputs, error, digest: null, status })
    );
    expect(cell()).toMatchObject({ running: false, status, error, outputs });
  });

  it('falls back on the error flag when a server sends no status', () => {
    const [s, cell] = started();
    s.applyEvent(ev('cell_end', { cell_id: 'c1', kind: 'python', outputs: [], error: true }));
    expect(cell().status).toBe('error');
  });

  it('calls a cell the run ended under cancelled', () => {
    const [s, cell] = started();
    s.applyEvent(ev('run_end', { stop_reason: 'break_hard', end_cause: 'break_hard' }));
    expect(cell()).toMatchObject({ running: false, status: 'cancelled' });
  });

  it('reads the status of a cell rebuilt from its step', () => {
    const s = new ChatState(CHAT);
    const record = {
      id: 't',
      chat_id: CHAT,
      run_id: 'r',
      userText: 'go',
      steering: [],
      replies: [],
      interrupted: true,
      created: 'x',
      durationMs: 1,
      model: null,
      llm: {
        stopReason: 'break_hard',
        endCause: 'break_hard',
        modelCalls: 1,
        cells: 2,
        usage: { in: 0, out: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
        cost: null
      }
    } as ITurnRecord;
    s.loadTurns([record], null);
    const step = (cell_id: string, status: 'timed_out' | 'cancelled'): RunStep => ({
      type: 'cell', seq: 1, seqs: [1], cell_id, code: 'x', status, t: 't',
      execution_count: null, duration_s: 1, failed: false, app_calls: 0, digest: null,
      outputs: [stream('partial\n')], error: null, timeout_s: 1, deterministic: false,
      outputs_truncated: false, end_status: status, bubbles: [], copies: []
    });
    expect(s.loadSteps('r', [step('c1', 'timed_out'), step('c2', 'cancelled')])).toBe(true);
    const [a, b] = s.run('r')!.items as ICellItem[];
    expect(a).toMatchObject({ status: 'timed_out', error: true });
    expect(b).toMatchObject({ status: 'cancelled', outputs: [stream('partial\n')] });
  });
});
