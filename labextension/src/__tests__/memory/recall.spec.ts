import { ChatState } from '../../chats/state';
import {
  hitScore,
  hitSource,
  IRecallHit,
  recallFromEvent,
  recallFromTurn,
  recallSummary,
  recallTitle
} from '../../memory/recall';
import type { IAgentEvent } from '../../runs/state';
import type { ITurnRecord } from '../../runs/turns';

const CHAT = 'chat_1';
let seq = 0;

function ev(type: string, run_id: string, fields: Record<string, unknown> = {}): IAgentEvent {
  seq += 1;
  return { type, chat_id: CHAT, run_id, seq, ...fields };
}

function hit(kind: string, fields: Partial<IRecallHit> = {}): IRecallHit {
  return {
    kind,
    id: `${kind}_1`,
    chat_id: 'chat_0',
    text: `a ${kind}`,
    score: 0.8123,
    created: '2025-03-04T05:06:07Z',
    ...fields
  };
}

function turn(run_id: string, fields: Partial<ITurnRecord> = {}): ITurnRecord {
  return {
    id: `turn_${run_id}`,
    chat_id: CHAT,
    run_id,
    userText: 'where is the raw data?',
    steering: [],
    replies: [{ text: 'In s3://acme-raw.', done: true }],
    interrupted: false,
    created: '2025-03-05T00:00:00Z',
    durationMs: 900,
    model: 'claude-sonnet-4-5',
    llm: {
      stopReason: 'done',
      endCause: 'done',
      modelCalls: 1,
      cells: 0,
      usage: { in: 100, out: 10, cacheRead: 0, cacheWrite: 0, reasoning: 0 },
      cost: null
    },
    ...fields
  };
}

/** A turn record's `recall` (hits cut to kind, id, chat_id, score, text). */
const RECORDED = {
  program: 'autorecall@v1',
  tokens: 42,
  hits: [
    { kind: 'memory', id: 'mem_1', chat_id: 'chat_0', score: 0.9, text: 'The data lives in s3://acme-raw' }
  ]
};

beforeEach(() => {
  seq = 0;
});

describe('recall summary', () => {
  it('counts the hits by kind, memories first', () => {
    expect(recallSummary([hit('memory'), hit('memory'), hit('memory')])).toBe('recalled 3 memories');
    expect(recallSummary([hit('turn'), hit('memory'), hit('turn')])).toBe(
      'recalled 1 memory, 2 earlier turns'
    );
    expect(recallSummary([hit('chunk')])).toBe('recalled 1 earlier summary');
    expect(recallSummary([hit('chunk'), hit('turn'), hit('chunk'), hit('memory')])).toBe(
      'recalled 1 memory, 1 earlier turn, 2 earlier summaries'
    );
    expect(recallSummary([hit('file')])).toBe('recalled 1 other note');
  });

  it('labels where a hit comes from, and its score', () => {
    expect(hitSource(hit('memory', { category: 'project' }))).toBe('memory · project · 2025-03-04');
    expect(hitSource(hit('turn', { chat_title: 'Sales', created: undefined }))).toBe('earlier turn · Sales');
    expect(hitSource(hit('chunk', { first_turn: 3, last_turn: 9, chat_title: 'Sales' }))).toBe(
      'summary of turns 3–9 · Sales · 2025-03-04'
    );
    expect(hitScore(hit('memory'))).toBe('0.81');
    expect(recallTitle({ hits: [], tokens: 42, program: 'autorecall@v1' })).toMatch(
      /autorecall@v1.*not its own words.*42 tokens/
    );
  });

  it('reads an event and a turn record; nothing recalled is null', () => {
    expect(recallFromEvent({ hits: [] })).toBeNull();
    expect(recallFromEvent({})).toBeNull();
    expect(recallFromEvent({ hits: [hit('memory'), { bogus: true }] })!.hits).toHaveLength(1);
    expect(recallFromTurn(turn('r'))).toBeNull();
    expect(recallFromTurn(turn('r', { recall: RECORDED }))).toEqual({
      hits: RECORDED.hits,
      tokens: 42,
      program: 'autorecall@v1'
    });
  });
});

describe('ChatState and recall', () => {
  it('shows a live recall event on its run, then keeps it past the run end', () => {
    const s = new ChatState(CHAT);
    s.applyEvent(ev('run_start', 'r', { text: 'where is the raw data?', message_id: 'm0' }));
    expect(s.run('r')!.recall).toBeNull();
    const hits = [hit('memory', { category: 'project', text: 'The data lives in s3://acme-raw' })];
    expect(s.applyEvent(ev('recall', 'r', { hits }))).toBe(true);
    expect(s.run('r')!.recall).toEqual({ hits, tokens: null, program: null });
    s.applyEvent(ev('reply', 'r', { text: 'In s3://acme-raw.', message_id: 'm1' }));
    s.applyEvent(
      ev('run_end', 'r', { stop_reason: 'done', end_cause: 'done', turn: turn('r', { recall: RECORDED }) })
    );
    // The event's hits (with their category) stay; the record adds the tokens.
    expect(s.run('r')!.recall).toEqual({ hits, tokens: 42, program: 'autorecall@v1' });
  });

  it('ignores a recall event without hits, and one already applied', () => {
    const s = new ChatState(CHAT);
    s.applyEvent(ev('run_start', 'r'));
    expect(s.applyEvent(ev('recall', 'r', { hits: [] }))).toBe(false);
    const e = ev('recall', 'r', { hits: [hit('turn')] });
    expect(s.applyEvent(e)).toBe(true);
    expect(s.applyEvent(e)).toBe(false);
    expect(s.run('r')!.recall!.hits).toHaveLength(1);
  });

  it('shows the recall of a turn record after a reload, and keeps it past its steps', () => {
    const s = new ChatState(CHAT);
    s.loadTurns([turn('r1'), turn('r2', { recall: RECORDED })], null);
    expect(s.run('r1')!.recall).toBeNull();
    expect(s.run('r2')!.recall!.hits.map(h => h.id)).toEqual(['mem_1']);
    s.loadSteps('r2', [
      { type: 'user', seq: 1, text: 'where is the raw data?', at: 'x', view: null, attachments: [], message_id: 'm0' },
      { type: 'reply', seq: 3, text: 'In s3://acme-raw.', t: 'x', status: 'ok', message_id: 'm1' }
    ]);
    expect(s.run('r2')!.source).toBe('steps');
    expect(s.run('r2')!.recall!.tokens).toBe(42);
  });

  it('takes the hits of a recall step (whole, with category) over the record', () => {
    const s = new ChatState(CHAT);
    s.loadTurns([turn('r', { recall: RECORDED })], null);
    const hits = [hit('memory', { id: 'mem_1', category: 'project', text: 'The data lives in s3://acme-raw' })];
    const step = {
      type: 'recall' as const,
      seq: 2,
      status: 'ok' as const,
      t: 'x',
      program: 'autorecall@v1',
      query: 'where is the raw data?',
      code: 'memory.search("where is the raw data?", k=5, history=True)',
      text: 'Recalled notes…',
      hits,
      tokens: 42,
      error: null
    };
    s.loadSteps('r', [
      { type: 'user', seq: 1, text: 'where is the raw data?', at: 'x', view: null, attachments: [], message_id: 'm0' },
      step,
      { type: 'reply', seq: 3, text: 'In s3://acme-raw.', t: 'x', status: 'ok', message_id: 'm1' }
    ]);
    expect(s.run('r')!.recall).toEqual({ hits, tokens: 42, program: 'autorecall@v1' });
    expect(hitSource(s.run('r')!.recall!.hits[0])).toBe('memory · project · 2025-03-04');
    // A failed search (or none recalled) leaves the record's.
    const t = new ChatState(CHAT);
    t.loadTurns([turn('r', { recall: RECORDED })], null);
    t.loadSteps('r', [{ ...step, status: 'failed', hits: [] }]);
    expect(t.run('r')!.recall!.hits).toEqual(RECORDED.hits);
  });

  it('reads the tokens and program of a live event', () => {
    const s = new ChatState(CHAT);
    s.applyEvent(ev('run_start', 'r'));
    s.applyEvent(ev('recall', 'r', { hits: [hit('chunk')], tokens: 17, program: 'autorecall@v1' }));
    expect(s.run('r')!.recall).toMatchObject({ tokens: 17, program: 'autorecall@v1' });
  });
});
