/**
 * The proposals of one chat, kept once, by id, with a Lumino signal that says what
 * changed (`IProposalChange`: the proposal as it is now and as it was before).
 *
 * A run's items only name its proposals (`IProposalRef`, see `runs/state.ts`); the cards
 * read them here and follow `changed`. Items are values (`proposals.ts`): a change
 * replaces the item, so the payload's `previous` is the item before it.
 *
 * No `@jupyterlab/*` or DOM import (jest tests it alone).
 */
import { ISignal, Signal } from '@lumino/signaling';

import { IProposalItem, mergeProposal, withOutcome, withRequest } from './proposals';

/** What `ProposalStore.changed` carries. */
export interface IProposalChange {
  /** `added`: a proposal new to this chat; `updated`: a known one changed. */
  type: 'added' | 'updated';
  /** The proposal as it is now. */
  proposal: IProposalItem;
  /** The proposal before the change (null when added). */
  previous: IProposalItem | null;
}

/** The proposals of one chat (see the module comment). */
export class ProposalStore {
  /** Emitted once per proposal added or changed, with what changed. */
  get changed(): ISignal<this, IProposalChange> {
    return this._changed;
  }

  /** The proposal with this id, if known. */
  get(proposalId: string): IProposalItem | undefined {
    return this._items.get(proposalId);
  }

  /** The proposals, in the order they became known. */
  all(): IProposalItem[] {
    return [...this._items.values()];
  }

  /** Keep a new proposal (false, and nothing changes, for an id known already). */
  add(item: IProposalItem): boolean {
    if (this._items.has(item.proposalId)) {
      return false;
    }
    this._items.set(item.proposalId, item);
    this._changed.emit({ type: 'added', proposal: item, previous: null });
    return true;
  }

  /** Bring a known proposal in line with newer knowledge of it (a row, an event). */
  merge(from: IProposalItem): boolean {
    return this.update(from.proposalId, known => mergeProposal(known, from));
  }

  /**
   * An outcome: a `proposal_end` event (`message` undefined: a conflict's words stay), or
   * the server's answer to the person's decision or undo (`message`: its words, or null).
   */
  outcome(
    proposalId: string,
    outcome: string,
    cells: string[] | null = null,
    message?: string | null
  ): boolean {
    return this.update(proposalId, known => {
      const next = withOutcome(known, outcome, cells);
      return message === undefined ? next : withRequest(next, false, message);
    });
  }

  /** A request of the person about a proposal left (busy) or failed (error). */
  request(proposalId: string, busy: boolean, error: string | null = null): boolean {
    return this.update(proposalId, known => withRequest(known, busy, error));
  }

  /** Replace a known proposal by `change(it)`; emits when that is a new item. */
  private update(proposalId: string, change: (item: IProposalItem) => IProposalItem): boolean {
    const previous = this._items.get(proposalId);
    if (!previous) {
      return false;
    }
    const proposal = change(previous);
    if (proposal === previous) {
      return false;
    }
    this._items.set(proposalId, proposal);
    this._changed.emit({ type: 'updated', proposal, previous });
    return true;
  }

  private readonly _items = new Map<string, IProposalItem>();
  private readonly _changed = new Signal<this, IProposalChange>(this);
}
