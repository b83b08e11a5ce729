/**
 * What the composer says once the person asked a run to stop: a soft stop ends the run at
 * its next step, so while a cell runs it waits for the cell's end; the note says so and
 * offers the hard stop ("Stop now"). Pure: no `@jupyterlab/*` or DOM import.
 */
import type { IRunState } from '../runs/state';

/** The code of the cell or command of `run` still running, or null. */
export function runningCell(run: IRunState | undefined): string | null {
  for (const item of run?.items ?? []) {
    if (item.kind === 'cell' && item.running) {
      return item.code;
    }
  }
  return null;
}

/**
 * The note under the composer for `stopStage` (0 nothing asked, 1 a soft stop asked,
 * 2 a hard stop asked) while `cellRunning`; empty when there is nothing to say.
 */
export function stopNote(stopStage: number, cellRunning: boolean): string {
  if (stopStage === 1) {
    return cellRunning
      ? 'Stopping after the running cell ends (the agent will not go on). Stop now ends the cell at once.'
      : 'Stopping at the agent’s next step. Stop now ends the run at once.';
  }
  if (stopStage === 2) {
    return 'Stopping now…';
  }
  return '';
}
