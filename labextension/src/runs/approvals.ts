/**
 * A run's waits for the person's OK (the `approval` policy: a cell, a command, a proposal
 * or an MCP call waits): pure data and text, no DOM and no `@jupyterlab/*` import.
 *
 * An approval comes from its `approval` event (or, after a reload, its step);
 * `approval_end` closes it, and so does the end of its run. The person's answer goes
 * through `answered` (see `withAnswer`).
 */
import type { IApprovalStep } from '../events';

/** A wait for the person's OK (an item of `IRunState.items`). */
export interface IApprovalItem {
  kind: 'approval';
  approvalId: string;
  runId: string;
  /** What asks: a python cell, a bash command, a proposal, an MCP call, code for the
   * person's own kernel (`notebook.run`). */
  what: 'cell' | 'bash' | 'proposal' | 'mcp' | 'kernel';
  code: string;
  summary: string;
  /** True until `approval_end` (or the run's end) closes it. */
  open: boolean;
  /** The decision: null while open, or when the run ended without one. */
  approved: boolean | null;
  /** The person approved the rest of this turn with it. */
  rest: boolean;
  /** True once the person answered it here (a break or the turn's time limit may close
   * it unapproved without anyone clicking Deny). */
  answered: boolean;
  busy: boolean;
  error: string | null;
}

/** An approval item from its `approval` event. */
export function approvalFromEvent(event: {
  approval_id: string;
  run_id: string;
  kind: string;
  code?: string | null;
  summary?: string | null;
}): IApprovalItem {
  const what = ['cell', 'bash', 'proposal', 'mcp', 'kernel'].includes(event.kind)
    ? (event.kind as IApprovalItem['what'])
    : 'cell';
  return {
    kind: 'approval',
    approvalId: event.approval_id,
    runId: event.run_id,
    what,
    code: String(event.code ?? ''),
    summary: String(event.summary ?? ''),
    open: true,
    approved: null,
    rest: false,
    answered: false,
    busy: false,
    error: null
  };
}

/**
 * A closed approval from its step, as the live path leaves it: `approval_end` says
 * approved or not (a hard break: not), the person's own answer is `answered` (a break or
 * the turn's time limit closes it unanswered), and a wait with no answer recorded is
 * closed by its run's end (approved null).
 */
export function approvalFromStep(runId: string, step: IApprovalStep): IApprovalItem {
  const approved = step.status === 'unfinished' ? null : step.approve === true;
  return {
    ...approvalFromEvent({ ...step, run_id: runId }),
    open: false,
    approved,
    rest: approved === true && Boolean(step.rest),
    answered: step.by === 'person'
  };
}

/** The approval as its `approval_end` leaves it (closed, approved or not). */
export function closeApproval(item: IApprovalItem, approve: boolean): IApprovalItem {
  return { ...item, open: false, busy: false, approved: approve };
}

/**
 * The approval after the person's request left (busy), failed (error) or was answered
 * (`answered`: then approved as they said; the server closes it with `approval_end`).
 */
export function withAnswer(
  item: IApprovalItem,
  busy: boolean,
  error: string | null,
  answered?: { approve: boolean; rest: boolean }
): IApprovalItem {
  const next = { ...item, busy, error };
  if (busy) {
    // The person clicked: its `approval_end` may come before the POST's answer.
    next.answered = true;
  } else if (error) {
    next.answered = false; // not taken (a break or the time limit closed it first)
  }
  if (answered) {
    // Until `approval_end`, the buttons stay disabled.
    next.approved = answered.approve;
    next.rest = answered.rest;
    next.answered = true;
  }
  return next;
}

/** The question of an open approval, or its outcome once closed. */
export function describeApproval(a: IApprovalItem): string {
  const what: { [k in IApprovalItem['what']]: string } = {
    cell: 'run this cell',
    bash: 'run this command',
    proposal: 'apply this proposal',
    mcp: 'make this call',
    kernel: 'run this code in your kernel'
  };
  if (a.open) {
    return `The agent asks to ${what[a.what]}`;
  }
  if (a.approved === true) {
    return a.rest ? 'Approved (and the rest of this turn)' : 'Approved';
  }
  if (a.approved === false) {
    return a.answered ? 'Denied' : 'Not approved: the run was stopped or ran out of time';
  }
  return 'Not answered: the run ended';
}
