/**
 * An eval followed to its end (issue 31, item 4): started on a suite (`POST agent/evals`),
 * polled (`GET agent/evals/{id}`), each change said through `onChange`; answers the final
 * state. Pure of the UI: the plugin turns the states into a notification.
 */
import type { IEvalState } from '../api/types';

/** What the watcher needs of the REST client. */
export interface IEvalApi {
  startEval(suite: string): Promise<IEvalState>;
  evalState(evalId: string): Promise<IEvalState>;
}

/** One line saying where an eval is: `2 of 4 case runs ended, 2 passed`. */
export function progressLine(state: IEvalState): string {
  if (state.status === 'done') {
    const failed = state.results.filter(r => r.status !== 'passed');
    const head = `Eval of ${state.suite ?? 'runs'}: ${state.passed} of ${state.total} case runs passed`;
    const first = failed[0];
    const why = first ? ` (first failure: ${first.case}: ${first.message || first.status})` : '';
    return state.error ? `${head}; it stopped early: ${state.error}` : head + why;
  }
  return `Eval of ${state.suite ?? 'runs'}: ${state.finished} of ${state.total} case runs ended, ${state.passed} passed`;
}

/** Start the eval of `suite` and poll it every `intervalMs` until it is done. */
export async function watchEval(
  api: IEvalApi,
  suite: string,
  onChange: (state: IEvalState) => void,
  intervalMs = 500
): Promise<IEvalState> {
  let state = await api.startEval(suite);
  onChange(state);
  let finished = state.finished;
  while (state.status !== 'done') {
    await new Promise(resolve => setTimeout(resolve, intervalMs));
    state = await api.evalState(state.eval_id);
    if (state.finished !== finished || state.status === 'done') {
      finished = state.finished;
      onChange(state);
    }
  }
  return state;
}
