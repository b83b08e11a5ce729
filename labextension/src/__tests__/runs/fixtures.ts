/**
 * Shared fixtures of the runs' tests: the events of one whole run (`runEvents`), the
 * steps `GET agent/runs/{id}` answers for it (`runSteps`), its turn record (`turn`), and
 * `ev` (an event of chat `CHAT` with the next seq; `resetSeq` before each test).
 */
import type { RunStep } from '../../events';
import type { IAgentEvent } from '../../runs/state';
import type { ITurnRecord } from '../../runs/turns';

export const CHAT = 'chat_1';
let seq = 0;

/** An event of `CHAT` with the next seq. */
export function ev(type: string, run_id: string, fields: Record<string, unknown> = {}): IAgentEvent {
  seq += 1;
  return { type, chat_id: CHAT, run_id, seq, ...fields };
}

/** The turn record of run `run_id` (the run of `runEvents`). */
export function turn(run_id: string, fields: Partial<ITurnRecord> = {}): ITurnRecord {
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
export function runEvents(run: string): IAgentEvent[] {
  return [
    ev('run_start', run, {
      started: '2025-01-01T00:00:00Z',
      text: 'what is 1+1?',
      message_id: 'msg_0'
    }),
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
      status: 'ok',
      digest: 'print #1: 2',
      duration_s: 0.01
    }),
    ev('delta', run, { text: 'It is ' }),
    ev('delta', run, { text: '**2**.' }),
    ev('reply', run, { text: 'It is **2**.', done: true, message_id: 'msg_2' }),
    ev('run_end', run, { stop_reason: 'done', end_cause: 'done', turn: turn(run) })
  ];
}

/** Start the seqs again (each test's events from 1). */
export function resetSeq(): void {
  seq = 0;
}

/** The steps `GET agent/runs/{id}` answers for the run of `runEvents` (same content). */
export function runSteps(): RunStep[] {
  return [
    { type: 'user', seq: 3, text: 'what is 1+1?', at: 't', view: null, attachments: [], message_id: 'msg_0' },
    { type: 'model_call', seq: 5, status: 'ok', t: 't', http_status: 200, attempts: 1 },
    { type: 'bubble', seq: 6, text: 'Let me look.', t: 't', status: 'ok', message_id: 'msg_1' },
    {
      type: 'cell',
      seq: 7,
      seqs: [7],
      cell_id: 'c1',
      code: 'print(1+1)',
      status: 'ok',
      t: 't',
      execution_count: 1,
      duration_s: 0.01,
      failed: false,
      app_calls: 0,
      digest: 'print #1: 2',
      outputs: [{ output_type: 'stream', name: 'stdout', text: '2\n' }],
      error: null,
      timeout_s: 60,
      deterministic: true,
      outputs_truncated: false,
      end_status: 'ok',
      bubbles: [],
      copies: []
    },
    { type: 'reply', seq: 9, text: 'It is **2**.', t: 't', status: 'ok', message_id: 'msg_2' }
  ];
}
