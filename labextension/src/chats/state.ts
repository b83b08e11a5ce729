/**
 * The chat state of the panel: one chat's runs (a value, `IChatRuns`, changed only by
 * the pure functions of `runs/`) and its proposals (`ProposalStore`, kept once), built
 * from the server's events (live) and, after a reload, from the REST records and each
 * run's steps (`hydration.ts` reads them). Never from a notebook, never by matching text.
 *
 * Views connect to `changed` (a Lumino signal, emitted once per call that changed
 * something: a new runs state, or a proposal added or changed); the cards of proposals
 * can follow `proposals.changed` alone, whose payload says which proposal changed and how.
 *
 * No `@jupyterlab/*` or DOM import: jest tests it with ts-jest alone.
 */
import { ISignal, Signal } from '@lumino/signaling';

import type { AgentEvent, RunStep } from '../events';
import { IProposalItem, proposalFromEvent, proposalFromRow } from '../notebook/proposals';
import { ProposalStore } from '../notebook/store';
import type { IApprovalItem } from '../runs/approvals';
import { withApprovalAnswer, withNote, withUserMessage } from '../runs/local';
import { runsToLoad, withProposal, withSteps, withTurns } from '../runs/records';
import { reduceEvent } from '../runs/reducer';
import {
  approvalIndex,
  emptyChat,
  findRun,
  IAgentEvent,
  IApprovalAnswer,
  IChatRuns,
  IRunState,
  runningCellId
} from '../runs/state';
import type { ITurnRecord } from '../runs/turns';

/** The state of one chat (see the module comment). */
export class ChatState {
  constructor(readonly chatId: string) {
    this._runs = emptyChat(chatId);
    this.proposals.changed.connect(this.onProposal, this);
  }

  /** The chat's proposals, by id (a run's items name them). */
  readonly proposals = new ProposalStore();

  /** The runs' state now (a value: the next change makes a new one). */
  get snapshot(): IChatRuns {
    return this._runs;
  }

  /** The runs, oldest first. */
  get runs(): ReadonlyArray<IRunState> {
    return this._runs.runs;
  }

  /** The highest event seq applied (the `since` of the next connection). */
  get lastSeq(): number {
    return this._runs.lastSeq;
  }

  /** Chunk summaries made of this chat since the view opened (`summary` events). */
  get summaries(): number {
    return this._runs.summaries;
  }

  /** The run in progress, if any. */
  get activeRunId(): string | null {
    return this._runs.activeRunId;
  }

  /** Whether a run is going (the Stop button shows). */
  get running(): boolean {
    return this._runs.activeRunId !== null;
  }

  /** Emitted after every change of the state (views re-render on it). */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** The run with this id, if known. */
  run(runId: string): IRunState | undefined {
    return findRun(this._runs, runId);
  }

  /** The proposal shown with this id, if any. */
  proposal(proposalId: string): IProposalItem | undefined {
    return this.proposals.get(proposalId);
  }

  /** The open or closed approval with this id in a run, if any. */
  approval(runId: string, approvalId: string): IApprovalItem | undefined {
    const run = this.run(runId);
    const item = run ? run.items[approvalIndex(run, approvalId)] : undefined;
    return item?.kind === 'approval' ? item : undefined;
  }

  /**
   * Apply one event. Returns false (and changes nothing shown) for an event already
   * applied (seq not above `lastSeq`), of another chat, of a type this panel does not
   * show, or of a run shown from its record or steps (a proposal's excepted).
   */
  applyEvent(event: IAgentEvent): boolean {
    return this.batch(() => {
      const before = this._runs;
      this._runs = reduceEvent(before, event);
      if (this._runs.lastSeq === before.lastSeq) {
        return; // not applied: seen already, or another chat's
      }
      const e = event as AgentEvent;
      if (e.type === 'proposal') {
        const known = this.proposals.get(e.proposal_id);
        if (known) {
          this.proposals.merge(proposalFromEvent(e, known.agentCellId));
        } else {
          // Made by the cell running when it came.
          this.proposals.add(proposalFromEvent(e, runningCellId(findRun(before, e.run_id))));
        }
      } else if (e.type === 'proposal_end') {
        this.proposals.outcome(e.proposal_id, e.outcome);
      }
    });
  }

  /** A request of the person about a proposal left (busy) or failed (error). */
  setProposalBusy(proposalId: string, busy: boolean, error: string | null = null): void {
    this.batch(() => this.proposals.request(proposalId, busy, error));
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
    this.batch(() => this.proposals.outcome(proposalId, outcome, cells, message));
  }

  /** An approval request left (busy), failed (error) or was answered (then `approved`). */
  setApprovalBusy(
    runId: string,
    approvalId: string,
    busy: boolean,
    error: string | null = null,
    answered?: IApprovalAnswer
  ): void {
    this.batch(() => {
      this._runs = withApprovalAnswer(this._runs, runId, approvalId, busy, error, answered);
    });
  }

  /**
   * Show the chat's proposals (`GET agent/proposals?chat_id=` rows, or a turn's
   * `proposals`): a known one is brought up to date, a new one is placed in its run
   * after the cell that proposed it (at the run's end when that cell is not shown).
   * Rows of runs this chat does not show are skipped.
   */
  loadProposals(rows: any[], runId: string | null = null): boolean {
    return this.batch(() => this.addRows(rows, runId));
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
    this.batch(() => {
      this._runs = withUserMessage(this._runs, text, runId, routed, messageId);
    });
  }

  /** Add a note (a break asked for, a failure) to a run. */
  addNote(runId: string, text: string): void {
    this.batch(() => {
      this._runs = withNote(this._runs, runId, text);
    });
  }

  /**
   * Show the chat's turn records (`GET agent/chats/{id}`), oldest first, and the
   * proposals they name (known without edits until `GET agent/proposals` brings them).
   * `activeRunId`: the run in progress, built from its events. `whole`: after a gap, the
   * runs this view saw end (see `withTurns`).
   */
  loadTurns(turns: ITurnRecord[], activeRunId: string | null, whole?: ReadonlySet<string>): void {
    this.batch(() => {
      this._runs = withTurns(this._runs, turns, activeRunId, whole);
      for (const turn of turns) {
        if (Array.isArray(turn.proposals) && turn.proposals.length) {
          this.addRows(turn.proposals, turn.run_id);
        }
      }
    });
  }

  /**
   * Rebuild an ended run from its steps (`GET agent/runs/{run_id}`; see
   * `runs/records.ts`). Returns false (and changes nothing) for a run that is unknown or
   * built from events (live in this view).
   */
  loadSteps(runId: string, steps: RunStep[]): boolean {
    return this.batch(() => {
      this._runs = withSteps(
        this._runs,
        runId,
        steps,
        id => this.proposals.get(id)?.agentCellId ?? null
      );
    });
  }

  /** The ids of the runs shown as ended. */
  endedRunIds(): Set<string> {
    return new Set(this._runs.runs.filter(r => r.ended).map(r => r.runId));
  }

  /** The ids of ended runs shown from their record only (whose steps to load), oldest first. */
  runsToLoad(): string[] {
    return runsToLoad(this._runs);
  }

  private addRows(rows: any[], runId: string | null): void {
    for (const row of rows) {
      const item = proposalFromRow(row, runId);
      if (!item) {
        continue;
      }
      const known = this.proposals.get(item.proposalId);
      if (known) {
        this.proposals.merge(item);
        // Its run may show it no more (rebuilt from its record after a gap).
        this._runs = withProposal(this._runs, item.runId, item.proposalId, known.agentCellId);
        continue;
      }
      const next = withProposal(this._runs, item.runId, item.proposalId, item.agentCellId);
      if (next !== this._runs) {
        this._runs = next;
        this.proposals.add(item);
      }
    }
  }

  /**
   * Run `change` and emit `changed` once if it changed the runs (a new value) or a
   * proposal (the store said so). Returns whether it did.
   */
  private batch(change: () => unknown): boolean {
    const before = this._runs;
    this._proposalChanged = false;
    change();
    const runsChanged =
      this._runs.runs !== before.runs || this._runs.activeRunId !== before.activeRunId;
    const changed = runsChanged || this._proposalChanged;
    this._proposalChanged = false;
    if (changed) {
      this._changed.emit();
    }
    return changed;
  }

  /** A proposal changed (within a call of this class: `batch` emits for it). */
  private onProposal(): void {
    this._proposalChanged = true;
  }

  private _runs: IChatRuns;
  private _proposalChanged = false;
  private readonly _changed = new Signal<this, void>(this);
}
