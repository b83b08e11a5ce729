/**
 * Proposals as the panel shows them: pure data and text, no DOM and no `@jupyterlab/*`
 * import (jest tests it alone; `store.ts` keeps them, once, and `proposalwidget.ts` draws
 * them; a run's items only name them, see `runs/state.ts`).
 *
 * A proposal (the agent's `notebook.propose(path, edits)`) comes from its `proposal` event
 * (live or caught up), or after a reload from `GET agent/proposals?chat_id=` (full rows,
 * with their edits) and, at the least, from the turn's `proposals` in the chat JSON
 * (`{proposal_id, path, status, applied}`: no edits). Its status changes with
 * `proposal_end` events and with the answers of the person's own decisions.
 *
 * Items are values: every change makes a new item (`mergeProposal`, `withOutcome`,
 * `withRequest`) and returns the same one when nothing changed, so a change is seen by
 * identity.
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

/** A proposal of the chat (a run's items name it by id: `IProposalRef`). */
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

/** Whether two lists of cell ids are the same, in order. */
export function sameIds(a: ReadonlyArray<string>, b: ReadonlyArray<string>): boolean {
  return a.length === b.length && a.every((id, i) => id === b[i]);
}

/**
 * A shown proposal brought in line with newer knowledge of it (a row read again): status
 * and applied cells; edits and the proposing cell when it had none. Returns `into` itself
 * when nothing changed.
 */
export function mergeProposal(into: IProposalItem, from: IProposalItem): IProposalItem {
  const next: IProposalItem = {
    ...into,
    status: from.status,
    applied: sameIds(into.applied, from.applied) ? into.applied : [...from.applied],
    edits: into.edits === null && from.edits !== null ? from.edits : into.edits,
    agentCellId: into.agentCellId ?? from.agentCellId,
    path: into.path || from.path
  };
  return sameProposal(into, next) ? into : next;
}

/**
 * The proposal after an `outcome` (a `proposal_end` event or the answer of the person's
 * decision or undo; `cells`: the cells an "Apply selected" sent). Returns `item` itself
 * when nothing changed.
 */
export function withOutcome(
  item: IProposalItem,
  outcome: string,
  cells: string[] | null
): IProposalItem {
  const status = outcome as ProposalStatus;
  let applied = item.applied;
  if (status === 'applied') {
    applied = (item.edits ?? []).map(e => e.cellId);
  } else if (status === 'partly' && cells !== null) {
    applied = [...cells];
  } else if (status === 'discarded' || status === 'conflict') {
    applied = [];
  }
  const next: IProposalItem = {
    ...item,
    status,
    busy: false,
    applied: sameIds(applied, item.applied) ? item.applied : applied,
    error: status === 'conflict' ? item.error : null
  };
  return sameProposal(item, next) ? item : next;
}

/** The proposal while a request of the person is in flight (busy) or after it failed. */
export function withRequest(
  item: IProposalItem,
  busy: boolean,
  error: string | null
): IProposalItem {
  return item.busy === busy && item.error === error ? item : { ...item, busy, error };
}

/** Whether two items of one proposal show the same (field by field, no serialising). */
function sameProposal(a: IProposalItem, b: IProposalItem): boolean {
  return (
    a.status === b.status &&
    a.applied === b.applied &&
    a.edits === b.edits &&
    a.agentCellId === b.agentCellId &&
    a.path === b.path &&
    a.busy === b.busy &&
    a.error === b.error &&
    a.runId === b.runId
  );
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
