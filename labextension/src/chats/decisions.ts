/**
 * The person's decisions in a chat, sent to the server: apply (all or some edits),
 * discard or undo a proposal, answer an approval. Each marks its card busy while the
 * request is in flight, then shows the server's answer (an outcome, a conflict in the
 * server's words, a refusal) through the chat state; an applied or undone proposal is
 * then shown in the open notebook (`refreshNotebook`).
 */
import { AgentApiError, errorText } from '../api/client';
import type { IProposalActions } from '../notebook/proposalwidget';
import type { IProposalItem } from '../notebook/proposals';
import type { IApprovalActions } from '../runs/approvalwidget';
import type { IApprovalItem } from '../runs/approvals';
import type { ChatHydration } from './hydration';
import type { IChatsService } from './service';
import type { ChatState } from './state';

/** What the decisions need from their chat view. */
export interface IChatDecisionsOptions {
  service: IChatsService;
  state: ChatState;
  /** Read the proposals again (a proposal found decided elsewhere). */
  hydration: ChatHydration;
  /**
   * Show a change written to the notebook at `path` where it is open; returns a remark
   * for the person when it could not (unsaved changes), else null.
   */
  refreshNotebook?: (path: string) => Promise<string | null>;
}

/** The person's decisions of one chat (see the module comment). */
export class ChatDecisions implements IProposalActions, IApprovalActions {
  constructor(private readonly options: IChatDecisionsOptions) {}

  decideProposal(item: IProposalItem, apply: boolean, cells: string[] | null): void {
    void this.decide(item, apply, cells);
  }

  undoProposal(item: IProposalItem): void {
    void this.undo(item);
  }

  answerApproval(item: IApprovalItem, approve: boolean, rest: boolean): void {
    void this.answer(item, approve, rest);
  }

  private async decide(item: IProposalItem, apply: boolean, cells: string[] | null): Promise<void> {
    const { service, state, hydration } = this.options;
    const id = item.proposalId;
    state.setProposalBusy(id, true);
    let outcome: string;
    try {
      ({ outcome } = await service.decideProposal(item.runId, id, apply, cells));
    } catch (err) {
      if (err instanceof AgentApiError && err.reason === 'proposal_conflict') {
        // Finished as a conflict: nothing was written; the server's message names the cells.
        state.proposalOutcome(id, 'conflict', null, err.message);
      } else {
        const verb = apply ? 'apply' : 'discard';
        state.setProposalBusy(id, false, `Could not ${verb} the proposal: ${errorText(err)}`);
        if (err instanceof AgentApiError && err.reason === 'proposal_decided') {
          await hydration.loadProposals(); // decided elsewhere: show how
        }
      }
      return;
    }
    state.proposalOutcome(id, outcome, cells);
    if (outcome === 'applied' || outcome === 'partly') {
      await this.showInNotebook(item);
    }
  }

  private async undo(item: IProposalItem): Promise<void> {
    const { service, state } = this.options;
    const id = item.proposalId;
    state.setProposalBusy(id, true);
    try {
      const { outcome } = await service.undoProposal(id);
      state.proposalOutcome(id, outcome);
    } catch (err) {
      // A conflict leaves it applied: the notebook changed since, nothing was written.
      const words =
        err instanceof AgentApiError && err.reason === 'proposal_conflict'
          ? `Could not undo: ${err.message}`
          : `Could not undo: ${errorText(err)}`;
      state.setProposalBusy(id, false, words);
      return;
    }
    await this.showInNotebook(item);
  }

  /** After a change written to disk, the open notebook shows it (see `refreshNotebook`). */
  private async showInNotebook(item: IProposalItem): Promise<void> {
    const refresh = this.options.refreshNotebook;
    if (!refresh) {
      return;
    }
    const state = this.options.state;
    try {
      const remark = await refresh(item.path);
      if (remark) {
        state.setProposalBusy(item.proposalId, false, remark);
      }
    } catch (err) {
      state.setProposalBusy(
        item.proposalId,
        false,
        `The notebook could not be reloaded: ${errorText(err)}`
      );
    }
  }

  private async answer(item: IApprovalItem, approve: boolean, rest: boolean): Promise<void> {
    const { service, state } = this.options;
    const { runId, approvalId } = item;
    state.setApprovalBusy(runId, approvalId, true);
    try {
      await service.answerApproval(runId, approvalId, approve, rest);
    } catch (err) {
      state.setApprovalBusy(runId, approvalId, false, `Could not answer: ${errorText(err)}`);
      return;
    }
    // Its `approval_end` closes the card; until then the buttons stay disabled.
    state.setApprovalBusy(runId, approvalId, false, null, { approve, rest });
  }
}
