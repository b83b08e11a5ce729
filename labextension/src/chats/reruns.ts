/**
 * "Re-run…" on a turn: its recorded inputs (message, history window, recall, memory) go
 * to another model (a tier name such as `classify`, or a model of the codegen tier's
 * provider; empty: the same one) as a run of its own, never a turn of this chat (`POST
 * agent/runs/{id}/rerun`); once it ends, the two runs open side by side (`DiffView`,
 * `GET agent/runs/{a}/diff/{b}`) beside the chat.
 */
import { InputDialog } from '@jupyterlab/apputils';
import type { Widget } from '@lumino/widgets';

import type { AgentApi } from '../api/client';
import { DiffView } from '../runs/diffview';

/** What a rerun needs of its chat view. */
export interface IRerunContext {
  api: AgentApi;
  showNote: (text: string) => void;
  /** Open a widget beside the chat. */
  openBeside: (widget: Widget, label: string) => void;
}

const WAIT_MS = 600_000;

/** Wait for the run `runId` to end (polling its summary); false when it did not in time. */
export async function waitEnded(api: AgentApi, runId: string, pollMs = 400): Promise<boolean> {
  const deadline = Date.now() + WAIT_MS;
  while (Date.now() < deadline) {
    const detail = await api.runDetail(runId, false);
    if (detail?.summary?.status && detail.summary.status !== 'running') {
      return true;
    }
    await new Promise(resolve => setTimeout(resolve, pollMs));
  }
  return false;
}

/** Ask for the model, re-run, then open the diff (throws what the server answered). */
export async function rerunFrom(ctx: IRerunContext, runId: string): Promise<void> {
  const asked = await InputDialog.getText({
    title: 'Re-run this turn',
    label:
      'Its recorded inputs go to another model, as a run of its own (this chat does not change). ' +
      'A tier name (classify) or a model name; empty: the same model.',
    placeholder: 'classify',
    okLabel: 'Re-run'
  });
  if (!asked.button.accept) {
    return;
  }
  const model = (asked.value ?? '').trim() || null;
  const started = await ctx.api.rerun(runId, model);
  ctx.showNote(`Re-running this turn on ${started.model ?? 'the same model'} (${started.run_id})…`);
  if (!(await waitEnded(ctx.api, started.run_id))) {
    ctx.showNote(`The rerun ${started.run_id} is still going: trace diff shows it once it ends.`);
    return;
  }
  const diff = await ctx.api.runDiff(runId, started.run_id);
  ctx.openBeside(new DiffView(diff), `Turn vs ${started.model ?? 'rerun'}`);
  ctx.showNote(`The rerun on ${started.model ?? 'the same model'} ended: it opened beside this chat.`);
}
