/**
 * The chat state of the panel: one model of a chat, built from the server's events (live)
 * and, after a reload, from the REST records and each run's steps. Never from a notebook,
 * never by matching text.
 *
 * Pure logic: no `@jupyterlab/*` or DOM import, so jest tests it with ts-jest alone. Views
 * connect to `changed` (a Lumino signal, emitted once per call that changed something).
 *
 * A chat is a list of runs (one per turn). Each run holds, in the order they happened,
 * the items the person sees: steering messages, progress bubbles, cells (python or bash)
 * and notes; plus the opening user message, what autorecall recalled for it (the `recall`
 * event or step, or the record's `recall`), the text being streamed, a provider
 * retry in progress, the final reply and, once ended, the turn record (for the footer).
 *
 * Sources (a run has one, `source`), and identities:
 * - events (`applyEvent`, typed in `events.ts`, generated from the server's definitions):
 *   an event whose seq is not above the last one applied is ignored, so catch-up after a
 *   reconnect never doubles anything; items are keyed (cells by `cell_id`, bubbles by
 *   `message_id`, steering by the `message_id` the POST answered and the `steering` event
 *   repeats); the reply comes from `reply` only (`run_end` brings the turn for the footer);
 * - a run's steps (`loadSteps`, from `GET agent/runs/{id}`): the same items, for a run
 *   that ended before this view opened (after a reload or a server restart);
 * - turn records (`loadTurns`, from `GET agent/chats/{id}`): an ended run is shown from its
 *   record until its steps arrive (and stays so if they cannot be read); its events, if the
 *   server still holds them, are not needed and ignored;
 * - the person's own messages (`addUserMessage`, with the `message_id` the server answered);
 * - proposals and approvals (issue 17, `proposals.ts`): `proposal` / `approval` events
 *   add a card to their run; `proposal_end` updates a proposal whatever its run's source
 *   (a proposal is decided after its run ended); after a reload the turns' `proposals`
 *   and `loadProposals` (`GET agent/proposals` rows) bring them back, placed after the
 *   cell that proposed them (kept there when the run's steps replace its items).
 */
import { ISignal, Signal } from '@lumino/signaling';

import type {
  AgentEvent,
  IApprovalStep,
  ICellEndEvent,
  ICellStep,
  IBashStep,
  IEventEnvelope,
  RunStep
} from './events';
import {
  approvalFromEvent,
  IApprovalItem,
  IProposalItem,
  mergeProposal,
  ProposalStatus,
  proposalFromEvent,
  proposalFromRow
} from './proposals';
import { IRecallInfo, ITurnRecall, recallFromEvent, recallFromTurn } from './recall';

/** An event of `agent/chats/{id}/events` (any type; `AgentEvent` for the known ones). */
export interface IAgentEvent extends IEventEnvelope {
  [key: string]: any;
}

/** How a cell ended (`cell_end`'s `status`), or `running` while it runs. */
export type CellStatus = 'running' | 'ok' | 'error' | 'cancelled' | 'timed_out';

const ENDED_STATUSES: ReadonlyArray<string> = ['ok', 'error', 'cancelled', 'timed_out'];

/** Token usage of a turn, with the seed's JSON keys. */
export interface IUsage {
  in: number;
  out: number;
  cacheRead: number;
  cacheWrite: number;
  reasoning: number;
}

/** A turn record as REST JSON (`jupyter_agent.core.turns.TurnRecord.to_json`). */
export interface ITurnRecord {
  id: string;
  chat_id: string;
  run_id: string;
  userText: string;
  steering: { text: string; at: string }[];
  replies: { text: string; done: boolean }[];
  fromAgent?: string;
  traceRef?: string;
  /** What autorecall put in front of the model (issue 15; absent when nothing). */
  recall?: ITurnRecall;
  /** The programs the turn ran, e.g. `["toolcaller@v4", "autorecall@v1"]` (issue 15). */
  programs?: string[];
  /** The proposals the turn made (issue 17; absent in older servers' JSON). */
  proposals?: ITurnProposal[];
  interrupted: boolean;
  created: string;
  durationMs: number;
  model: string | null;
  llm: {
    stopReason: string;
    endCause: string;
    modelCalls: number;
    cells: number;
    usage: IUsage;
    cost: number | null;
    fingerprints?: { [key: string]: string };
    /** What the turn's boot window held (issue 14; absent in older records). */
    window?: ITurnWindow;
  };
}

/**
 * `llm.window` of a turn record: the raw turns shown in full, the level-1 and level-2
 * chunk summaries, the turns the omission line names, and the window's tokens.
 */
export interface ITurnWindow {
  raw: number;
  l1: number;
  l2: number;
  omitted: number;
  tokens: number;
}

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

export type RunItem =
  | ICellItem
  | IBubbleItem
  | ISteeringItem
  | INoteItem
  | INoticeItem
  | IProposalItem
  | IApprovalItem;

/** A turn's proposal as the chat JSON lists it (issue 17: no edits, see `proposals.ts`). */
export interface ITurnProposal {
  proposal_id: string;
  path: string;
  status: string;
  applied: string[];
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

/** What the end of a run means for the person, from its `endCause`. */
export function describeEnd(endCause: string | null, stopReason?: string | null): string {
  switch (endCause) {
    case null:
    case undefined:
      return stopReason ? `Ended (${stopReason})` : '';
    case 'done':
      return 'Done';
    case 'length':
      return 'Wrapped up: the reply hit the length limit';
    case 'break_soft':
      return 'Stopped';
    case 'break_hard':
      return 'Stopped now (hard stop)';
    case 'error':
      return 'Ended with an error';
    case 'restart':
      return 'Interrupted: the server restarted during this run';
    default:
      if (endCause.startsWith('ceiling:')) {
        const what = endCause.slice('ceiling:'.length).replace(/_/g, ' ');
        return `Wrapped up: reached the ${what} ceiling`;
      }
      return `Ended (${endCause})`;
  }
}

/** Format a turn's figures: tokens, cache, cost, cells, duration, model. */
export function turnStats(turn: ITurnRecord): string[] {
  const u = turn.llm.usage || ({} as IUsage);
  const parts = [
    `${fmtCount(u.in)} in / ${fmtCount(u.out)} out`,
    `cache ${fmtCount(u.cacheRead)} read / ${fmtCount(u.cacheWrite)} write`,
    turn.llm.cost === null || turn.llm.cost === undefined
      ? 'cost n/a'
      : `$${turn.llm.cost.toFixed(4)}`,
    `${turn.llm.cells} cell${turn.llm.cells === 1 ? '' : 's'}`,
    `${(turn.durationMs / 1000).toFixed(1)} s`
  ];
  if (turn.model) {
    parts.push(turn.model);
  }
  return parts;
}

/**
 * The turn footer's history figure: `history: 12 turns, 3 L1, 1 L2, 40 omitted, 1.8k
 * tokens` (as `jupyter agent trace show` prints it) and a title explaining it; null when
 * the record says nothing about its window.
 */
export function turnWindow(turn: ITurnRecord): { text: string; title: string } | null {
  const w = turn.llm?.window;
  // A chat's first turn has no history: nothing worth a line.
  if (!w || !((w.raw || 0) + (w.l1 || 0) + (w.l2 || 0) + (w.omitted || 0))) {
    return null;
  }
  const tokens = w.tokens >= 1000 ? `${(w.tokens / 1000).toFixed(1)}k` : String(w.tokens || 0);
  const raw = w.raw || 0;
  return {
    text:
      `history: ${raw} turn${raw === 1 ? '' : 's'}, ${w.l1 || 0} L1, ${w.l2 || 0} L2, ` +
      `${w.omitted || 0} omitted, ${tokens} tokens`,
    title:
      'What the model saw of this chat’s earlier turns: the newest turns in full, then ' +
      'level-1 summaries (one per chunk of turns), then level-2 summaries (one per run of ' +
      'chunks), older first; "omitted" counts the turns no summary covered (not shown). ' +
      'Tokens: the size of that history in the prompt.'
  };
}

function fmtCount(n: number | undefined): string {
  const v = n || 0;
  return v >= 10000 ? `${(v / 1000).toFixed(1)}k` : String(v);
}

function newRun(runId: string, source: IRunState['source']): IRunState {
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

function newCell(cellId: string, lang: 'python' | 'bash', code: string): ICellItem {
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


/**
 * A closed approval from its step, as the live path leaves it: `approval_end` says
 * approved or not (a hard break: not), the person's own answer is `answered` (a break or
 * the turn's time limit closes it unanswered), and a wait with no answer recorded is
 * closed by its run's end (approved null).
 */
export function approvalFromStep(runId: string, step: IApprovalStep): IApprovalItem {
  const item = approvalFromEvent({ ...step, run_id: runId });
  item.open = false;
  item.approved = step.status === 'unfinished' ? null : step.approve === true;
  item.rest = item.approved === true && Boolean(step.rest);
  item.answered = step.by === 'person';
  return item;
}

/** A cell's end, from its `cell_end` event or its step (the same fields). */
function endCell(cell: ICellItem, end: ICellEnd): void {
  cell.running = false;
  cell.status = end.status;
  cell.error = end.status !== 'ok';
  cell.digest = typeof end.digest === 'string' ? end.digest : null;
  cell.durationS = typeof end.duration_s === 'number' ? end.duration_s : null;
  if (cell.lang === 'bash') {
    cell.stdout = String(end.stdout ?? '');
    cell.stderr = String(end.stderr ?? '');
    cell.returncode = typeof end.returncode === 'number' ? end.returncode : null;
  } else {
    cell.outputs = Array.isArray(end.outputs) ? [...end.outputs] : [];
    cell.executionCount = typeof end.execution_count === 'number' ? end.execution_count : null;
  }
}

/** What `endCell` reads: a `cell_end` event's fields. */
type ICellEnd = Pick<
  ICellEndEvent,
  'digest' | 'duration_s' | 'outputs' | 'execution_count' | 'stdout' | 'stderr' | 'returncode'
> & { status: Exclude<CellStatus, 'running'> };

/** The cell item of a `cell` or `bash` step (as its `cell_start` and `cell_end` made it). */
export function cellFromStep(step: ICellStep | IBashStep): ICellItem {
  const bash = step.type === 'bash';
  const cell = newCell(step.cell_id, bash ? 'bash' : 'python', bash ? step.command : step.code);
  // A cell with no cell_end (the run stopped under it) shows as the live view left it.
  const status = step.end_status ?? 'cancelled';
  endCell(cell, {
    status,
    digest: step.digest,
    duration_s: step.duration_s,
    outputs: bash ? null : step.outputs,
    execution_count: bash ? null : step.execution_count,
    stdout: bash ? step.stdout : null,
    stderr: bash ? step.stderr : null,
    returncode: bash ? step.returncode : null
  });
  return cell;
}

/**
 * The state of one chat. Mutated in place by its methods; each returns whether anything
 * changed, and then emits `changed` once.
 */
export class ChatState {
  constructor(readonly chatId: string) {}

  /** The runs, oldest first. */
  readonly runs: IRunState[] = [];
  /** The highest event seq applied (the `since` of the next connection). */
  lastSeq = 0;
  /** Chunk summaries made of this chat since the view opened (`summary` events). */
  summaries = 0;
  /** The run in progress, if any. */
  activeRunId: string | null = null;

  /** Emitted after every change of the state (views re-render on it). */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** The run with this id, if known. */
  run(runId: string): IRunState | undefined {
    return this.runs.find(r => r.runId === runId);
  }

  /** Whether a run is going (the Stop button shows). */
  get running(): boolean {
    return this.activeRunId !== null;
  }

  /**
   * Apply one event. Returns false (and changes nothing) for an event already applied
   * (seq not above `lastSeq`), of another chat, of a type this panel does not show, or of
   * a run shown from its record or steps.
   */
  applyEvent(event: IAgentEvent): boolean {
    if (event.chat_id !== undefined && event.chat_id !== this.chatId) {
      return false;
    }
    if (typeof event.seq !== 'number' || event.seq <= this.lastSeq) {
      return false;
    }
    this.lastSeq = event.seq;
    if (event.type === 'summary') {
      // History made by a summary run (not a turn of this chat): counted, not shown.
      this.summaries += 1;
      return false;
    }
    if (event.type === 'proposal_end' || event.type === 'proposal') {
      // A proposal outlives its run: decided (or undone) after the run ended, even one
      // shown from its record or steps.
      const changed = this.applyProposalEvent(event as AgentEvent);
      if (changed) {
        this._changed.emit();
      }
      return changed;
    }
    const known = this.run(event.run_id);
    if (known && known.source !== 'events') {
      // Ended before this view opened: its record and steps show all its events would.
      return false;
    }
    const run = known ?? this.ensureRun(event.run_id, 'events');
    const changed = this.apply(run, event as AgentEvent);
    if (changed) {
      this._changed.emit();
    }
    return changed;
  }

  private apply(run: IRunState, event: AgentEvent): boolean {
    if (event.type !== 'retry') {
      run.retry = null;
    }
    switch (event.type) {
      case 'run_start':
        if (!run.userText) {
          run.userText = String(event.text ?? '');
        }
        run.userMessageId = event.message_id ?? run.userMessageId;
        if (!run.ended) {
          this.activeRunId = run.runId;
        }
        return true;
      case 'recall': {
        // What autorecall put in front of the model: shown above the run's replies.
        const recall = recallFromEvent(event);
        if (!recall) {
          return false;
        }
        run.recall = recall;
        return true;
      }
      case 'delta':
        run.streaming += String(event.text ?? '');
        return true;
      case 'bubble': {
        run.streaming = '';
        const id = event.message_id ?? null;
        if (id === null || !run.items.some(i => i.kind === 'bubble' && i.messageId === id)) {
          run.items.push({ kind: 'bubble', messageId: id, text: String(event.text ?? '') });
        }
        return true;
      }
      case 'steering':
        this.takeSteering(run, event.message_id ?? null, String(event.text ?? ''));
        return true;
      case 'cell_start': {
        run.streaming = '';
        const existing = this.findCell(run, event.cell_id);
        if (existing) {
          existing.code = String(event.code ?? existing.code);
        } else {
          run.items.push(newCell(event.cell_id, event.kind === 'bash' ? 'bash' : 'python', event.code));
        }
        return true;
      }
      case 'cell_output': {
        // Always after its cell_start (kept in the server's history while the cell runs).
        const cell = this.findCell(run, event.cell_id);
        const output = event.output;
        if (!cell || !cell.running || !output || typeof output !== 'object') {
          return false; // or late: the cell's end already brought its final outputs
        }
        if (cell.lang === 'bash') {
          if (output.output_type !== 'stream') {
            return false;
          }
          if (output.name === 'stderr') {
            cell.stderr += String(output.text ?? '');
          } else {
            cell.stdout += String(output.text ?? '');
          }
        } else {
          cell.outputs.push(output);
        }
        return true;
      }
      case 'cell_end': {
        let cell = this.findCell(run, event.cell_id);
        if (!cell) {
          cell = newCell(event.cell_id, event.kind === 'bash' ? 'bash' : 'python', '');
          run.items.push(cell);
        }
        const status = ENDED_STATUSES.includes(event.status)
          ? event.status
          : event.error
            ? 'error'
            : 'ok';
        endCell(cell, { ...event, status });
        return true;
      }
      case 'approval': {
        if (this.findApproval(run, event.approval_id)) {
          return false;
        }
        run.streaming = '';
        run.items.push(approvalFromEvent(event));
        return true;
      }
      case 'approval_end': {
        const approval = this.findApproval(run, event.approval_id);
        if (!approval) {
          return false;
        }
        approval.open = false;
        approval.busy = false;
        approval.approved = Boolean(event.approve);
        return true;
      }
      case 'retry':
        run.retry = {
          attempt: Number(event.attempt ?? 1),
          status: typeof event.status === 'number' ? event.status : null,
          waitS: typeof event.wait_s === 'number' ? event.wait_s : null
        };
        return true;
      case 'reply':
        run.streaming = '';
        run.reply = { text: String(event.text ?? ''), messageId: event.message_id ?? null };
        return true;
      case 'run_end':
        this.endRun(run, (event.turn as ITurnRecord) ?? null, event.stop_reason, event.end_cause);
        return true;
      default:
        return false; // an event type this panel does not show
    }
  }

  /** The run took a steering message: the person's queued one moves here, or it is new. */
  private takeSteering(run: IRunState, messageId: string | null, text: string): void {
    const at = messageId === null ? -1 : run.items.findIndex(
      i => i.kind === 'steering' && i.messageId === messageId
    );
    if (at >= 0) {
      // Shown where the run took it (the order the steps will have after a reload).
      const [mine] = run.items.splice(at, 1) as ISteeringItem[];
      mine.queued = false;
      run.items.push(mine);
    } else {
      run.items.push({ kind: 'steering', messageId, text, queued: false });
    }
  }

  private findApproval(run: IRunState, approvalId: string): IApprovalItem | undefined {
    return run.items.find(
      (i): i is IApprovalItem => i.kind === 'approval' && i.approvalId === approvalId
    );
  }

  /** A `proposal` (shown once, after the cell that made it) or `proposal_end` event. */
  private applyProposalEvent(event: AgentEvent): boolean {
    if (event.type === 'proposal') {
      const known = this.proposals.get(event.proposal_id);
      if (known) {
        return mergeProposal(known, proposalFromEvent(event, known.agentCellId));
      }
      const run = this.run(event.run_id) ?? this.ensureRun(event.run_id, 'events');
      run.streaming = '';
      const running = [...run.items]
        .reverse()
        .find((i): i is ICellItem => i.kind === 'cell' && i.running);
      const item = proposalFromEvent(event, running?.cellId ?? null);
      this.proposals.set(item.proposalId, item);
      run.items.push(item);
      return true;
    }
    if (event.type === 'proposal_end') {
      const item = this.proposals.get(event.proposal_id);
      if (!item) {
        return false;
      }
      return this.setOutcome(item, event.outcome, null);
    }
    return false;
  }

  private setOutcome(item: IProposalItem, outcome: string, cells: string[] | null): boolean {
    const status = outcome as ProposalStatus;
    const before = JSON.stringify([item.status, item.applied, item.busy, item.error]);
    item.status = status;
    item.busy = false;
    if (status === 'applied') {
      item.applied = (item.edits ?? []).map(e => e.cellId);
    } else if (status === 'partly' && cells !== null) {
      item.applied = [...cells];
    } else if (status === 'undone' || status === 'discarded' || status === 'conflict') {
      item.applied = status === 'undone' ? item.applied : [];
    }
    if (status !== 'conflict') {
      item.error = null;
    }
    return JSON.stringify([item.status, item.applied, item.busy, item.error]) !== before;
  }

  /** The proposal shown with this id, if any. */
  proposal(proposalId: string): IProposalItem | undefined {
    return this.proposals.get(proposalId);
  }

  /** The open or closed approval with this id in a run, if any. */
  approval(runId: string, approvalId: string): IApprovalItem | undefined {
    const run = this.run(runId);
    return run ? this.findApproval(run, approvalId) : undefined;
  }

  /** A request of the person about a proposal left (busy) or failed (error). */
  setProposalBusy(proposalId: string, busy: boolean, error: string | null = null): void {
    const item = this.proposals.get(proposalId);
    if (item) {
      item.busy = busy;
      item.error = error;
      this._changed.emit();
    }
  }

  /**
   * The server answered a decision or an undo with `outcome` (`cells`: the cells an
   * "Apply selected" sent); `message` the server's words for a conflict.
   */
  proposalOutcome(
    proposalId: string,
    outcome: string,
    cells: string[] | null = null,
    message: string | null = null
  ): void {
    const item = this.proposals.get(proposalId);
    if (item) {
      this.setOutcome(item, outcome, cells);
      item.error = message;
      this._changed.emit();
    }
  }

  /** An approval request left (busy), failed (error) or was answered (then `approved`). */
  setApprovalBusy(
    runId: string,
    approvalId: string,
    busy: boolean,
    error: string | null = null,
    answered?: { approve: boolean; rest: boolean }
  ): void {
    const item = this.approval(runId, approvalId);
    if (item) {
      item.busy = busy;
      item.error = error;
      if (busy) {
        // The person clicked: its `approval_end` may come before the POST's answer.
        item.answered = true;
      } else if (error) {
        item.answered = false; // not taken (a break or the time limit closed it first)
      }
      if (answered) {
        // The server closes it with `approval_end`; until then the buttons stay disabled.
        item.approved = answered.approve;
        item.rest = answered.rest;
        item.answered = true;
      }
      this._changed.emit();
    }
  }

  /**
   * Show the chat's proposals (`GET agent/proposals?chat_id=` rows, or a turn's
   * `proposals`): a known one is brought up to date, a new one is placed in its run
   * after the cell that proposed it (at the run's end when that cell is not shown).
   * Rows of runs this chat does not show are skipped.
   */
  loadProposals(rows: any[], runId: string | null = null): boolean {
    let changed = false;
    for (const row of rows) {
      const item = proposalFromRow(row, runId);
      if (!item) {
        continue;
      }
      const known = this.proposals.get(item.proposalId);
      if (known) {
        changed = mergeProposal(known, item) || changed;
        continue;
      }
      const run = this.run(item.runId);
      if (!run) {
        continue;
      }
      this.proposals.set(item.proposalId, item);
      this.placeProposal(run.items, item);
      changed = true;
    }
    if (changed) {
      this._changed.emit();
    }
    return changed;
  }

  /** Insert a proposal after its proposing cell (and proposals before it), else at the end. */
  private placeProposal(items: RunItem[], item: IProposalItem): void {
    const at = items.findIndex(i => i.kind === 'cell' && i.cellId === item.agentCellId);
    if (at < 0) {
      items.push(item);
      return;
    }
    let end = at + 1;
    while (end < items.length && items[end].kind === 'proposal') {
      end += 1;
    }
    items.splice(end, 0, item);
  }

  private findCell(run: IRunState, cellId: string): ICellItem | undefined {
    return run.items.find((i): i is ICellItem => i.kind === 'cell' && i.cellId === cellId);
  }

  private endRun(
    run: IRunState,
    turn: ITurnRecord | null,
    stopReason?: string | null,
    endCause?: string | null
  ): void {
    run.ended = true;
    run.streaming = '';
    run.retry = null;
    run.turn = turn ?? run.turn;
    // The event's hits carry more (category, chat title); the record's come after a reload.
    const recorded = recallFromTurn(run.turn);
    if (!run.recall) {
      run.recall = recorded;
    } else if (recorded && run.recall.tokens === null) {
      run.recall = { ...run.recall, tokens: recorded.tokens, program: recorded.program };
    }
    run.stopReason = stopReason ?? turn?.llm?.stopReason ?? run.stopReason;
    run.endCause = endCause ?? turn?.llm?.endCause ?? run.endCause;
    for (const item of run.items) {
      if (item.kind === 'cell' && item.running) {
        // The run ended under it (a hard stop, a crash): it did not finish.
        item.running = false;
        item.status = 'cancelled';
      } else if (item.kind === 'steering') {
        item.queued = false; // every message routed to a run is in its turn
      } else if (item.kind === 'approval' && item.open) {
        item.open = false; // nothing waits any more
        item.busy = false;
      }
    }
    if (!run.userText && turn?.userText) {
      run.userText = turn.userText;
    }
    if (this.activeRunId === run.runId) {
      this.activeRunId = null;
    }
  }

  /** The run with this id, created (at the end) when it is new. */
  private ensureRun(runId: string, source: IRunState['source']): IRunState {
    let run = this.run(runId);
    if (!run) {
      run = newRun(runId, source);
      this.runs.push(run);
    }
    return run;
  }

  /**
   * Record a message the person sent, once the server answered `{run_id, routed,
   * message_id}`: the opening message of a run, or a steering message queued for it.
   */
  addUserMessage(
    text: string,
    runId: string,
    routed: 'run' | 'mailbox',
    messageId: string | null = null
  ): void {
    const run = this.ensureRun(runId, 'events');
    const opening =
      routed === 'run' &&
      (!run.userText || (messageId !== null && run.userMessageId === messageId));
    if (opening) {
      run.userText = run.userText || text;
      run.userMessageId = messageId ?? run.userMessageId;
      if (!run.ended) {
        this.activeRunId = runId;
      }
    } else if (
      messageId === null ||
      !run.items.some(i => i.kind === 'steering' && i.messageId === messageId)
    ) {
      // (Its steering event may have come first: then it is shown already.)
      run.items.push({ kind: 'steering', messageId, text, queued: !run.ended });
    }
    this._changed.emit();
  }

  /** Add a note (a break asked for, a failure) to a run. */
  addNote(runId: string, text: string): void {
    this.ensureRun(runId, 'events').items.push({ kind: 'note', text });
    this._changed.emit();
  }

  /**
   * Show the chat's turn records (`GET agent/chats/{id}`), oldest first. A run already
   * known (from events or steps) keeps its items and gains the record; a new one shows
   * what the record holds until its steps arrive (`loadSteps`).
   */
  loadTurns(turns: ITurnRecord[], activeRunId: string | null): void {
    for (const turn of turns) {
      let run = this.run(turn.run_id);
      if (!run) {
        run = newRun(turn.run_id, 'record');
        // Records come oldest first: keep them ahead of runs only known from events.
        const firstLive = this.runs.findIndex(r => !r.ended);
        this.runs.splice(firstLive < 0 ? this.runs.length : firstLive, 0, run);
        run.userText = turn.userText;
        for (const r of turn.replies || []) {
          if (!r.done) {
            run.items.push({ kind: 'bubble', messageId: null, text: r.text });
          }
        }
        for (const s of turn.steering || []) {
          run.items.push({ kind: 'steering', messageId: null, text: s.text, queued: false });
        }
        const final = [...(turn.replies || [])].reverse().find(r => r.done);
        run.reply = final ? { text: final.text, messageId: null } : null;
      }
      this.endRun(run, turn, turn.llm?.stopReason, turn.llm?.endCause);
    }
    for (const turn of turns) {
      if (Array.isArray(turn.proposals) && turn.proposals.length) {
        // Known without edits until `GET agent/proposals` brings them.
        this.loadProposals(turn.proposals, turn.run_id);
      }
    }
    if (activeRunId) {
      const run = this.ensureRun(activeRunId, 'events'); // its events build it
      if (!run.ended) {
        this.activeRunId = activeRunId;
      }
    }
    this._changed.emit();
  }

  /**
   * Rebuild an ended run from its steps (`GET agent/runs/{run_id}`): its message, cells
   * with their outputs and digests, bubbles, steering, approvals (closed, as their
   * `approval_end` left them), notices and reply, in order, as its events showed them. Returns false (and changes nothing) for a run that is unknown or built
   * from events (live in this view).
   */
  loadSteps(runId: string, steps: RunStep[]): boolean {
    const run = this.run(runId);
    if (!run || run.source === 'events') {
      return false;
    }
    const items: RunItem[] = [];
    let reply: IRunState['reply'] = null;
    let recall: IRecallInfo | null = null;
    for (const step of steps) {
      switch (step.type) {
        case 'user':
          run.userText = step.text;
          run.userMessageId = step.message_id;
          break;
        case 'steering':
          items.push({ kind: 'steering', messageId: step.message_id, text: step.text, queued: false });
          break;
        case 'bubble':
          if (step.status === 'ok') {
            items.push({ kind: 'bubble', messageId: step.message_id, text: step.text });
          }
          break;
        case 'reply':
          if (step.status === 'ok') {
            reply = { text: step.text, messageId: step.message_id };
          }
          break;
        case 'cell':
          items.push(cellFromStep(step));
          for (const text of step.bubbles || []) {
            items.push({ kind: 'bubble', messageId: null, text });
          }
          break;
        case 'bash':
          items.push(cellFromStep(step));
          break;
        case 'recall':
          // Its hits carry category and chat title (the record's are cut short).
          if (step.status === 'ok') {
            recall = recallFromEvent(step) ?? recall;
          }
          break;
        case 'approval':
          items.push(approvalFromStep(runId, step));
          break;
        case 'notice':
          items.push({ kind: 'notice', text: `Notice: ${step.text}`, at: step.at });
          break;
        default:
          break; // breaks and model calls are not shown in the chat
      }
    }
    // Proposals are not steps: those shown already keep their place after their cell.
    for (const item of run.items) {
      if (item.kind === 'proposal') {
        this.placeProposal(items, item);
      }
    }
    run.items = items;
    run.reply = reply;
    run.recall = recall ?? run.recall;
    run.source = 'steps';
    this._changed.emit();
    return true;
  }

  /** The ids of ended runs shown from their record only (whose steps to load), oldest first. */
  runsToLoad(): string[] {
    return this.runs.filter(r => r.source === 'record' && r.ended).map(r => r.runId);
  }

  /** The proposals shown, by id (each also an item of its run). */
  private readonly proposals = new Map<string, IProposalItem>();
  private readonly _changed = new Signal<this, void>(this);
}
