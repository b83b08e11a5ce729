import type { IEvalState } from '../../api/types';
import { progressLine, watchEval } from '../../evals/watch';

function state(over: Partial<IEvalState>): IEvalState {
  return {
    eval_id: 'eval_1',
    status: 'running',
    suite: 'examples/eval',
    total: 4,
    finished: 0,
    passed: 0,
    report: null,
    error: null,
    results: [],
    ...over
  };
}

describe('watchEval', () => {
  it('starts, polls until done and says each change once', async () => {
    const polls = [
      state({ finished: 1, passed: 1 }),
      state({ finished: 1, passed: 1 }),
      state({
        status: 'done',
        finished: 4,
        passed: 3,
        report: 'agent-traces/eval-eval.ipynb',
        results: [
          { case: 'a', model: null, repeat: 1, status: 'passed', run_id: 'run_a', message: '' },
          {
            case: 'b',
            model: null,
            repeat: 1,
            status: 'failed',
            run_id: 'run_b',
            message: 'AssertionError: not 13'
          }
        ]
      })
    ];
    const started: string[] = [];
    const asked: string[] = [];
    const api = {
      startEval: async (suite: string) => {
        started.push(suite);
        return state({});
      },
      evalState: async (id: string) => {
        asked.push(id);
        return polls.shift()!;
      }
    };
    const said: string[] = [];
    const end = await watchEval(api, 'examples/eval', s => said.push(progressLine(s)), 1);
    expect(started).toEqual(['examples/eval']);
    expect(asked).toEqual(['eval_1', 'eval_1', 'eval_1']);
    expect(end.report).toBe('agent-traces/eval-eval.ipynb');
    expect(said).toEqual([
      'Eval of examples/eval: 0 of 4 case runs ended, 0 passed',
      'Eval of examples/eval: 1 of 4 case runs ended, 1 passed',
      'Eval of examples/eval: 3 of 4 case runs passed (first failure: b: AssertionError: not 13)'
    ]);
  });

  it('says an eval that stopped early', () => {
    const line = progressLine(state({ status: 'done', passed: 1, error: 'the server stopped' }));
    expect(line).toBe('Eval of examples/eval: 1 of 4 case runs passed; it stopped early: the server stopped');
  });
});
