/**
 * The state of a chat's runs as the panel shows them: the types and small pure helpers
 * the reducer (`reducer.ts`), the local actions (`local.ts`) and the REST hydration
 * (`records.ts`) share. No `@jupyterlab/*`, DOM or signal import.
 *
 * A chat is a list of runs (one per turn). Each run holds, in the order they happened,
 * the items the person sees: steering messages, progress bubbles, cells (python or bash),
 * notes, notices, approvals and the proposals it made (named by id: the proposal itself
 * is kept once, in the chat's `ProposalStore`); plus the opening user message, what
 * autorecall recalled for it, the text being streamed, a provider retry in progress, the
 * final reply and, once ended, the turn record (for the footer).
 *
 * State is a value: every change makes new objects along its path (the chat, its runs
 * array, the run, its items array, the item) and keeps the rest, so a view sees what
 * changed by identity and the old state stays as it was.
 */
import type { IEventEnvelope } from '../events';
import type { IRecallInfo } from '../memory/recall';
import type { IApprovalItem } from './approvals';
import type { ITurnRecord } from './turns';

/** An event of `agent/chats/{id}/events` (any type; `AgentEvent` for the known ones). */
export interface IAgentEvent extends IEventEnvelope {
  [key: string]: any;
}

/** How a cell ended (`cell_end`'s `status`), or `running` while it runs. */
export type CellStatus = 'running' | 'ok' | 'error' | 'cancelled' | 'timed_out';

/** A cell the agent ran (python) or a command (bash). */
export interface ICellItem {
  kind: 'cell';
  cellId: string;
  lang: 'python' | 'bash';
  code: string;
  running: boolean;
  /** How it ended (`running` until its `cell_end`). */
  status: CellStatus;
  /**
   * nbformat outputs (python; bash outputs are made from stdout/stderr). While the cell
   * runs, the live outputs as they came (stream pieces unmerged); at its end, the final ones.
   */
  outputs: any[];
  executionCount: number | null;
  error: boolean;
  /** The text the model saw for this cell, when known. */
  digest: string | null;
  durationS: number | null;
  stdout: string;
  stderr: string;
  returncode: number | null;
}

/** A progress bubble (a chat.post with done false). */
export interface IBubbleItem {
  kind: 'bubble';
  messageId: string | null;
  text: string;
}

/** A message of the person sent while the run was going (it went to the mailbox). */
export interface ISteeringItem {
  kind: 'steering';
  /** The id the server answered (null only for records written before ids). */
  messageId: string | null;
  text: string;
  /** True until the run takes it (its `steering` event, or the run's end). */
  queued: boolean;
}

/** A remark of the panel or of a restored trace (a break, a cancelled cell). */
export interface INoteItem {
  kind: 'note';
  text: string;
}

/**
 * Something the host told the agent (a proposal's outcome, ...) that the run took from its
 * mailbox: known from the run's `notice` steps (no event carries it); shown as a note.
 */
export interface INoticeItem {
  kind: 'notice';
  text: string;
  at: string;
}

/** Where a proposal of the run shows (the proposal is in the chat's `ProposalStore`). */
export interface IProposalRef {
  kind: 'proposal';
  proposalId: string;
}

export type RunItem =
  | ICellItem
  | IBubbleItem
  | ISteeringItem
  | INoteItem
  | INoticeItem
  | IProposalRef
  | IApprovalItem;

/** The person's answer to an approval, as the server took it. */
export interface IApprovalAnswer {
  approve: boolean;
  rest: boolean;
}

/** A provider retry in progress (`retry` event). */
export interface IRetryInfo {
  attempt: number;
  status: number | null;
  waitS: number | null;
}

/** One run (one turn) of a chat. */
export interface IRunState {
  runId: string;
  userText: string;
  /** The id of the message that opened the run, once known. */
  userMessageId: string | null;
  items: RunItem[];
  /** Model text streamed by `delta` events and not yet turned into a bubble or reply. */
  streaming: string;
  reply: { text: string; messageId: string | null } | null;
  retry: IRetryInfo | null;
  ended: boolean;
  stopReason: string | null;
  endCause: string | null;
  turn: ITurnRecord | null;
  /**
   * What autorecall@v1 put in front of the model before its first call: from the run's
   * `recall` event (live) or `recall` step (after a reload), else from its turn record
   * (whose hits are cut short); null when nothing was recalled.
   */
  recall: IRecallInfo | null;
  /** Where the items came from: events (live or caught up), a turn record, or steps. */
  source: 'events' | 'record' | 'steps';
}

/** The state of one chat's runs (what `ChatState` holds). */
export interface IChatRuns {
  readonly chatId: string;
  /** The runs, oldest first. */
  readonly runs: ReadonlyArray<IRunState>;
  /** The highest event seq applied (the `since` of the next connection). */
  readonly lastSeq: number;
  /** Chunk summaries made of this chat since the view opened (`summary` events). */
  readonly summaries: number;
  /** The run in progress, if any. */
  readonly activeRunId: string | null;
}

/** A chat with no run yet. */
export function emptyChat(chatId: string): IChatRuns {
  return { chatId, runs: [], lastSeq: 0, summaries: 0, activeRunId: null };
}

/** A run with nothing in it yet. */
export function newRun(runId: string, source: IRunState['source']): IRunState {
  return {
    runId,
    userText: '',
    userMessageId: null,
    items: [],
    streaming: '',
    reply: null,
    retry: null,
    ended: false,
    stopReason: null,
    endCause: null,
    turn: null,
    recall: null,
    source
  };
}

/** The run with this id, if known. */
export function findRun(state: IChatRuns, runId: string): IRunState | undefined {
  return state.runs.find(r => r.runId === runId);
}

/** The runs with `run` in place of the run of its id (at the end when it is new). */
export function putRun(runs: ReadonlyArray<IRunState>, run: IRunState): IRunState[] {
  const at = runs.findIndex(r => r.runId === run.runId);
  return at < 0 ? [...runs, run] : runs.map((r, i) => (i === at ? run : r));
}

/** The items with `item` at `index` instead of the one there. */
export function replaceItem(items: ReadonlyArray<RunItem>, index: number, item: RunItem): RunItem[] {
  return items.map((it, i) => (i === index ? item : it));
}

/** The index of a cell item in a run's items (-1 when absent). */
export function cellIndex(run: IRunState, cellId: string): number {
  return run.items.findIndex(i => i.kind === 'cell' && i.cellId === cellId);
}

/** The index of an approval item in a run's items (-1 when absent). */
export function approvalIndex(run: IRunState, approvalId: string): number {
  return run.items.findIndex(i => i.kind === 'approval' && i.approvalId === approvalId);
}

/** The cell running last in a run (a proposal made now is that cell's), if any. */
export function runningCellId(run: IRunState | undefined): string | null {
  const items = run?.items ?? [];
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i];
    if (item.kind === 'cell' && item.running) {
      return item.cellId;
    }
  }
  return null;
}

/**
 * Items with a proposal placed after its proposing cell (and the proposals already after
 * it), else at the end.
 */
export function placeProposal(
  items: ReadonlyArray<RunItem>,
  ref: IProposalRef,
  agentCellId: string | null
): RunItem[] {
  const at = items.findIndex(i => i.kind === 'cell' && i.cellId === agentCellId);
  if (at < 0) {
    return [...items, ref];
  }
  let end = at + 1;
  while (end < items.length && items[end].kind === 'proposal') {
    end += 1;
  }
  return [...items.slice(0, end), ref, ...items.slice(end)];
}
