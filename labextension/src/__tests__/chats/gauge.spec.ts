import { gaugeOf, lastPrompt, totalCost } from '../../chats/gauge';
import type { ITurnRecord } from '../../runs/turns';

function turn(cost: number | null, calls = 2, extra: Partial<ITurnRecord['llm']> = {}): ITurnRecord {
  return {
    id: 't', chat_id: 'c', run_id: 'run_1', userText: 'hi', steering: [], replies: [],
    interrupted: false, created: '', durationMs: 10, model: 'claude-sonnet-4-5',
    llm: {
      stopReason: 'end_turn', endCause: 'done', modelCalls: calls, cells: 1,
      usage: { in: 1, out: 1, cacheRead: 0, cacheWrite: 0, reasoning: 0 }, cost, ...extra
    }
  };
}

const CEILINGS = { max_model_calls: 40, max_cells: 60, max_cost_usd: 2, max_wall_s: 900 };

describe('the context and cost gauge', () => {
  it('adds the turns’ costs, unknown when one is unknown, never a guess', () => {
    expect(totalCost([turn(0.01), turn(0.02)])).toBeCloseTo(0.03);
    expect(totalCost([turn(0.01), turn(null)])).toBeNull();
    expect(totalCost([turn(0.01), turn(null, 0)])).toBeCloseTo(0.01); // no call: nothing spent
  });

  it('reads the last top-level request’s prompt size', () => {
    const calls = [
      { in: 100, cacheRead: 0, cacheWrite: 0 },
      { in: 50, cacheRead: 4000, cacheWrite: 10 },
      { in: 7, cacheRead: 0, cacheWrite: 0, nested: true }
    ];
    expect(lastPrompt(calls)).toBe(4060);
    expect(lastPrompt([])).toBeNull();
    expect(lastPrompt(null)).toBeNull();
  });

  it('shows tokens against the window, the cost, and the breakdown on hover', () => {
    const last = turn(0.0123, 2, { window: { raw: 3, l1: 1, l2: 0, omitted: 2, tokens: 1500 } });
    last.recall = { program: 'autorecall@v1', hits: [], tokens: 120 };
    const gauge = gaugeOf({
      turns: [turn(0.01), last],
      calls: [{ in: 20000, cacheRead: 0, cacheWrite: 0 }],
      contextWindow: 200000,
      ceilings: CEILINGS
    });
    expect(gauge.text).toBe('20k / 200k tokens (10%) · $0.0223');
    expect(gauge.ratio).toBeCloseTo(0.1);
    expect(gauge.title).toContain('History held: 3 turns in full, 1 + 0 summaries, 2 turns left out (1,500 tokens)');
    expect(gauge.title).toContain('Recall: 120 tokens');
    expect(gauge.title).toContain('Each run’s ceilings: 40 model calls, 60 cells, $2.00, 900 s'.replace('’', "'"));
  });

  it('says what it does not know', () => {
    const gauge = gaugeOf({ turns: [turn(null)], calls: null, contextWindow: null, ceilings: null });
    expect(gauge.text).toBe('cost unknown');
    expect(gauge.ratio).toBeNull();
    expect(gauge.title).toContain('Its last request: size unknown');
    const noWindow = gaugeOf({ turns: [turn(0.5)], calls: [{ in: 900, cacheRead: 0, cacheWrite: 0 }], contextWindow: null, ceilings: null });
    expect(noWindow.text).toBe('900 tokens · $0.5000');
  });
});
