/**
 * Proposals and approvals as the panel shows them: pure data and text, no DOM and no
 * `@jupyterlab/*` import (jest tests it alone; `model.ts` keeps them in a run's items and
 * `widgets/proposal.ts` draws them).
 *
 * A proposal (the agent's `notebook.propose(path, edits)`) comes from its `proposal` event
 * (live or caught up), or after a reload from `GET agent/proposals?chat_id=` (full rows,
 * with their edits) and, at the least, from the turn's `proposals` in the chat JSON
 * (`{proposal_id, path, status, applied}`: no edits). Its status changes with
 * `proposal_end` events and with the answers of the person's own decisions.
 *
 * An approval (the `approval` policy: a cell, a command or a proposal waits for the
 * person) comes from its `approval` event; `approval_end` closes it, and so does the end
 * of its run.
 */

/** What the agent asked to do to a cell (`op` of an edit). */
export type EditOp = 'insert' | 'replace' | 'delete' | 'move';

/** A proposal's state: `pending` until decided; `undone` after an applied one is undone. */
export type ProposalStatus =
  | 'pending'
  | 'applied'
  | 'partly'
  | 'discarded'
  | 'conflict'
  | 'undone';

const STATUSES: ReadonlyArray<string> = [
  'pending',
  'applied',
  'partly',
  'discarded',
  'conflict',
  'undone'
];

/** One edit of a proposal (the stored edit JSON, camel-cased). */
export interface IProposalEdit {
  op: EditOp;
  /** The cell edited (for an insert: the id the new cell gets). */
  cellId: string;
  /** insert / move: the cell it goes after (null: at the top). */
  after: string | null;
  cellType: string | null;
  source: string | null;
  oldSource: string | null;
  reason: string;
  /** The unified diff of the cell's source (old vs new). */
  diff: string;
}

/** A proposal shown in a run (an item of `IRunState.items`). */
export interface IProposalItem {
  kind: 'proposal';
  proposalId: string;
  /** The run that proposed it (its decide route names it). */
  runId: string;
  /** The notebook's contents path. */
  path: string;
  /** The edits, in order; null when only the turn record is known (no edits to show). */
  edits: IProposalEdit[] | null;
  /** The agent cell that proposed it, when known (the card shows after it). */
  agentCellId: string | null;
  status: ProposalStatus;
  /** The ids of the cells applied (`applied` / `partly`). */
  applied: string[];
  /** A request of the person is in flight (the buttons wait). */
  busy: boolean;
  /** What the server said when the last request failed (a conflict names the cells). */
  error: string | null;
}

/** A wait for the person's OK (an item of `IRunState.items`). */
export interface IApprovalItem {
  kind: 'approval';
  approvalId: string;
  runId: string;
  /** What asks: a python cell, a bash command, a proposal, an MCP call. */
  what: 'cell' | 'bash' | 'proposal' | 'mcp';
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

/** One line of a diff, with its kind (for colour). */
export interface IDiffLine {
  kind: 'add' | 'del' | 'hunk' | 'head' | 'context';
  text: string;
}

/**
 * The lines of a unified diff, each with its kind: `---`/`+++` headers, `@@` hunks, `+`
 * added, `-` removed, the rest context. A trailing newline adds no empty line.
 */
export function diffLines(diff: string): IDiffLine[] {
  if (!diff) {
    return [];
  }
  const lines = diff.split('\n');
  if (lines[lines.length - 1] === '') {
    lines.pop();
  }
  return lines.map(text => {
    if (text.startsWith('+++') || text.startsWith('---')) {
      return { kind: 'head', text };
    }
    if (text.startsWith('@@')) {
      return { kind: 'hunk', text };
    }
    if (text.startsWith('+')) {
      return { kind: 'add', text };
    }
    if (text.startsWith('-')) {
      return { kind: 'del', text };
    }
    return { kind: 'context', text };
  });
}

/** How many lines an edit adds and removes (its diff's `+` and `-` lines). */
export function diffStat(diff: string): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const line of diffLines(diff)) {
    if (line.kind === 'add') {
      added += 1;
    } else if (line.kind === 'del') {
      removed += 1;
    }
  }
  return { added, removed };
}

function str(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}

/** An edit of the server's JSON (`{op, cell_id, after?, ...}`), or null when unusable. */
export function editFromJson(raw: any): IProposalEdit | null {
  if (!raw || typeof raw !== 'object') {
    return null;
  }
  const op = raw.op;
  if (op !== 'insert' && op !== 'replace' && op !== 'delete' && op !== 'move') {
    return null;
  }
  return {
    op,
    cellId: String(raw.cell_id ?? ''),
    after: str(raw.after),
    cellType: str(raw.cell_type),
    source: str(raw.source),
    oldSource: str(raw.old_source),
    reason: String(raw.reason ?? ''),
    diff: String(raw.diff ?? '')
  };
}

/** The edits of an event or a row (a list, or a row's JSON text); null when absent. */
export function editsFromJson(raw: unknown): IProposalEdit[] | null {
  let list: unknown = raw;
  if (typeof raw === 'string') {
    try {
      list = JSON.parse(raw);
    } catch {
      return null;
    }
  }
  if (!Array.isArray(list)) {
    return null;
  }
  const edits: IProposalEdit[] = [];
  for (const e of list) {
    const edit = editFromJson(e);
    if (edit) {
      edits.push(edit);
    }
  }
  return edits;
}

function idList(raw: unknown): string[] {
  let list: unknown = raw;
  if (typeof raw === 'string') {
    try {
      list = JSON.parse(raw);
    } catch {
      return [];
    }
  }
  return Array.isArray(list) ? list.map(String) : [];
}

/** A status of the server's JSON (an unknown one reads as pending). */
export function statusFromJson(raw: unknown): ProposalStatus {
  return typeof raw === 'string' && STATUSES.includes(raw) ? (raw as ProposalStatus) : 'pending';
}

/** A proposal item from its `proposal` event. */
export function proposalFromEvent(
  event: { proposal_id: string; run_id: string; path: string; edits: unknown },
  agentCellId: string | null
): IProposalItem {
  return {
    kind: 'proposal',
    proposalId: event.proposal_id,
    runId: event.run_id,
    path: String(event.path ?? ''),
    edits: editsFromJson(event.edits) ?? [],
    agentCellId,
    status: 'pending',
    applied: [],
    busy: false,
    error: null
  };
}

/**
 * A proposal item from a row of `GET agent/proposals` (full: `id` or `proposal_id`,
 * `run_id`, `cell_id`, `path`, `edits`, `status`, `applied`) or from a turn's
 * `proposals` entry (`{proposal_id, path, status, applied}`); null without an id.
 */
export function proposalFromRow(row: any, runId: string | null = null): IProposalItem | null {
  if (!row || typeof row !== 'object') {
    return null;
  }
  const id = str(row.proposal_id) ?? str(row.id);
  const run = str(row.run_id) ?? runId;
  if (!id || !run) {
    return null;
  }
  return {
    kind: 'proposal',
    proposalId: id,
    runId: run,
    path: String(row.path ?? ''),
    edits: 'edits' in row ? editsFromJson(row.edits) : null,
    agentCellId: str(row.cell_id),
    status: statusFromJson(row.status),
    applied: idList(row.applied),
    busy: false,
    error: null
  };
}

/**
 * Bring a shown proposal in line with newer knowledge of it (a row read again): status
 * and applied cells; edits and the proposing cell when it had none. Returns whether it
 * changed.
 */
export function mergeProposal(into: IProposalItem, from: IProposalItem): boolean {
  let changed = false;
  if (into.status !== from.status) {
    into.status = from.status;
    changed = true;
  }
  if (JSON.stringify(into.applied) !== JSON.stringify(from.applied)) {
    into.applied = [...from.applied];
    changed = true;
  }
  if (into.edits === null && from.edits !== null) {
    into.edits = from.edits;
    changed = true;
  }
  if (into.agentCellId === null && from.agentCellId !== null) {
    into.agentCellId = from.agentCellId;
    changed = true;
  }
  if (!into.path && from.path) {
    into.path = from.path;
    changed = true;
  }
  return changed;
}

/** Whether the person can still decide (Apply / Apply selected / Discard). */
export function canDecide(p: IProposalItem): boolean {
  return p.status === 'pending' && !p.busy;
}

/** Whether the person can undo it (it was applied, wholly or partly). */
export function canUndo(p: IProposalItem): boolean {
  return (p.status === 'applied' || p.status === 'partly') && !p.busy;
}

/** The outcome line of a decided proposal (empty while pending). */
export function describeOutcome(p: IProposalItem): string {
  const n = p.applied.length;
  const total = p.edits?.length ?? null;
  switch (p.status) {
    case 'pending':
      return '';
    case 'applied':
      return `Applied to ${p.path}`;
    case 'partly':
      return (
        `Partly applied to ${p.path}: ${n}` +
        (total !== null ? ` of ${total}` : '') +
        ` edit${(total ?? n) === 1 ? '' : 's'}`
      );
    case 'discarded':
      return 'Discarded: the notebook was not changed';
    case 'conflict':
      return 'Conflict: the notebook changed since the agent read it; nothing was written';
    case 'undone':
      return `Undone: ${p.path} is back as it was`;
  }
}

/** A short title of an edit: `replace cell abc123`, `insert markdown cell after x`, ... */
export function editTitle(e: IProposalEdit): string {
  switch (e.op) {
    case 'insert':
      return (
        `insert ${e.cellType && e.cellType !== 'code' ? `${e.cellType} ` : ''}cell ${e.cellId} ` +
        (e.after ? `after ${e.after}` : 'at the top')
      );
    case 'move':
      return `move cell ${e.cellId} ` + (e.after ? `after ${e.after}` : 'to the top');
    default:
      return `${e.op} cell ${e.cellId}`;
  }
}

/**
 * The cells an "Apply selected" sends: the selected edits' cell ids in the edits' order,
 * or null when every edit is selected (a plain Apply).
 */
export function selectedCells(edits: IProposalEdit[], selected: ReadonlySet<string>): string[] | null {
  const cells = edits.map(e => e.cellId).filter(id => selected.has(id));
  return cells.length === edits.length ? null : cells;
}

/** An approval item from its `approval` event. */
export function approvalFromEvent(event: {
  approval_id: string;
  run_id: string;
  kind: string;
  code?: string | null;
  summary?: string | null;
}): IApprovalItem {
  const what = ['cell', 'bash', 'proposal', 'mcp'].includes(event.kind)
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

/** The question of an open approval, or its outcome once closed. */
export function describeApproval(a: IApprovalItem): string {
  const what: { [k in IApprovalItem['what']]: string } = {
    cell: 'run this cell',
    bash: 'run this command',
    proposal: 'apply this proposal',
    mcp: 'make this call'
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
