/**
 * A run's cells (python) and commands (bash) as values: made by `cell_start`, grown by
 * `cell_output`, ended by `cell_end` (live), or rebuilt whole from a `cell` / `bash` step
 * (after a reload). Pure: each function returns a new cell, or the same one when the
 * event changes nothing.
 */
import type { IBashStep, ICellEndEvent, ICellOutputEvent, ICellStep } from '../events';
import type { CellStatus, ICellItem } from './state';

const ENDED_STATUSES: ReadonlyArray<string> = ['ok', 'error', 'cancelled', 'timed_out'];

/** What `endCell` reads: a `cell_end` event's fields. */
export type ICellEnd = Pick<
  ICellEndEvent,
  'digest' | 'duration_s' | 'outputs' | 'execution_count' | 'stdout' | 'stderr' | 'returncode'
> & { status: Exclude<CellStatus, 'running'> };

/** A cell that just started. */
export function newCell(cellId: string, lang: 'python' | 'bash', code: string): ICellItem {
  return {
    kind: 'cell',
    cellId,
    lang,
    code,
    running: true,
    status: 'running',
    outputs: [],
    executionCount: null,
    error: false,
    digest: null,
    durationS: null,
    stdout: '',
    stderr: '',
    returncode: null
  };
}

/** How a `cell_end` says its cell ended (older servers send only `error`). */
export function endStatus(event: Pick<ICellEndEvent, 'status' | 'error'>): ICellEnd['status'] {
  if (ENDED_STATUSES.includes(event.status)) {
    return event.status as ICellEnd['status'];
  }
  return event.error ? 'error' : 'ok';
}

/** The cell as its end left it, from its `cell_end` event or its step (the same fields). */
export function endCell(cell: ICellItem, end: ICellEnd): ICellItem {
  const ended: ICellItem = {
    ...cell,
    running: false,
    status: end.status,
    error: end.status !== 'ok',
    digest: typeof end.digest === 'string' ? end.digest : null,
    durationS: typeof end.duration_s === 'number' ? end.duration_s : null
  };
  if (cell.lang === 'bash') {
    ended.stdout = String(end.stdout ?? '');
    ended.stderr = String(end.stderr ?? '');
    ended.returncode = typeof end.returncode === 'number' ? end.returncode : null;
  } else {
    ended.outputs = Array.isArray(end.outputs) ? [...end.outputs] : [];
    ended.executionCount =
      typeof end.execution_count === 'number' ? end.execution_count : null;
  }
  return ended;
}

/**
 * The cell with one more live output (a bash command: its stdout or stderr grows), or the
 * same cell when the output is late (the cell ended: its end brought the final outputs)
 * or not one this cell shows.
 */
export function addOutput(cell: ICellItem, output: ICellOutputEvent['output']): ICellItem {
  if (!cell.running || !output || typeof output !== 'object') {
    return cell;
  }
  if (cell.lang !== 'bash') {
    return { ...cell, outputs: [...cell.outputs, output] };
  }
  if (output.output_type !== 'stream') {
    return cell;
  }
  const text = String(output.text ?? '');
  return output.name === 'stderr'
    ? { ...cell, stderr: cell.stderr + text }
    : { ...cell, stdout: cell.stdout + text };
}

/** A cell its run ended under (a hard stop, a crash): it did not finish. */
export function cancelCell(cell: ICellItem): ICellItem {
  return cell.running ? { ...cell, running: false, status: 'cancelled' } : cell;
}

/** The cell item of a `cell` or `bash` step (as its `cell_start` and `cell_end` made it). */
export function cellFromStep(step: ICellStep | IBashStep): ICellItem {
  const bash = step.type === 'bash';
  const cell = newCell(step.cell_id, bash ? 'bash' : 'python', bash ? step.command : step.code);
  // A cell with no cell_end (the run stopped under it) shows as the live view left it.
  return endCell(cell, {
    status: step.end_status ?? 'cancelled',
    digest: step.digest,
    duration_s: step.duration_s,
    outputs: bash ? null : step.outputs,
    execution_count: bash ? null : step.execution_count,
    stdout: bash ? step.stdout : null,
    stderr: bash ? step.stderr : null,
    returncode: bash ? step.returncode : null
  });
}
