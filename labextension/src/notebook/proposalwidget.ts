/**
 * The card of a proposal in a run: the agent's edits of a notebook, per edit its op,
 * cell, reason and coloured diff with a checkbox; Apply, Apply selected, Discard; then
 * the outcome and Undo; a conflict in the server's words.
 *
 * The card draws its proposal as the chat's `ProposalStore` holds it and follows the
 * store's `changed` signal for its own id; it only calls its actions: the chat view sends
 * the requests and updates the store.
 */
import { Widget } from '@lumino/widgets';

import { button } from '../ui/widgets';
import {
  canDecide,
  canUndo,
  describeOutcome,
  diffLines,
  diffStat,
  editTitle,
  IProposalItem,
  selectedCells
} from './proposals';
import type { IProposalChange, ProposalStore } from './store';

/** What a proposal card asks of its chat view. */
export interface IProposalActions {
  /** Apply the proposal (`cells`: only these edits; null: all) or discard it. */
  decideProposal: (item: IProposalItem, apply: boolean, cells: string[] | null) => void;
  undoProposal: (item: IProposalItem) => void;
}

/** A proposal card (see the module comment). */
export class ProposalWidget extends Widget {
  /** The card of the proposal `item` of `store` (it follows the store's changes to it). */
  constructor(
    private readonly actions: IProposalActions,
    private readonly store: ProposalStore,
    item: IProposalItem
  ) {
    super();
    store.changed.connect(this.onChange, this);
    this.addClass('jp-agent-proposal');
    this.node.setAttribute('role', 'group');
    this.item = item;
    this.node.dataset.proposalId = item.proposalId;
    this.selected = new Set((item.edits ?? []).map(e => e.cellId));
    this.render();
  }

  item: IProposalItem;

  setItem(item: IProposalItem): void {
    this.item = item;
    this.render();
  }

  dispose(): void {
    if (!this.isDisposed) {
      this.store.changed.disconnect(this.onChange, this);
    }
    super.dispose();
  }

  private onChange(_: ProposalStore, change: IProposalChange): void {
    if (change.proposal.proposalId === this.item.proposalId) {
      this.setItem(change.proposal);
    }
  }

  private render(): void {
    const it = this.item;
    // Items are values: the same item and selection draw the same card.
    const selection = [...this.selected].join('\n');
    if (it === this._drawn && selection === this._selection) {
      return;
    }
    if (it.edits && this._edits !== it.edits) {
      // Edits arrived (a row read after a reload): all selected, as on a new card.
      this._edits = it.edits;
      this.selected = new Set(it.edits.map(e => e.cellId));
    }
    this._drawn = it;
    this._selection = [...this.selected].join('\n');
    const node = this.node;
    node.dataset.status = it.status;
    node.setAttribute('aria-label', `Proposed edits of ${it.path}`);
    this.toggleClass('jp-mod-conflict', it.status === 'conflict');
    this.toggleClass('jp-mod-pending', it.status === 'pending');
    node.textContent = '';

    const header = document.createElement('div');
    header.className = 'jp-agent-proposal-header';
    const title = document.createElement('span');
    title.className = 'jp-agent-proposal-title';
    const n = it.edits?.length;
    title.textContent =
      `Proposed ${n === undefined ? 'edits' : `${n} edit${n === 1 ? '' : 's'}`} · ${it.path}`;
    const status = document.createElement('span');
    status.className = 'jp-agent-proposal-status';
    status.textContent = it.busy ? 'working…' : it.status;
    header.append(title, status);
    node.appendChild(header);

    const pending = canDecide(it);
    if (it.edits === null) {
      const none = document.createElement('div');
      none.className = 'jp-agent-proposal-missing';
      none.textContent = 'The edits could not be read from the server.';
      node.appendChild(none);
    } else {
      const list = document.createElement('ol');
      list.className = 'jp-agent-edits';
      for (const edit of it.edits) {
        list.appendChild(this.editNode(edit, pending));
      }
      node.appendChild(list);
    }

    const outcome = describeOutcome(it);
    if (outcome) {
      const line = document.createElement('div');
      line.className = `jp-agent-proposal-outcome jp-agent-outcome-${it.status}`;
      line.setAttribute('role', 'status');
      line.textContent = outcome;
      node.appendChild(line);
    }
    if (it.error) {
      const err = document.createElement('div');
      err.className = 'jp-agent-proposal-error';
      err.setAttribute('role', 'alert');
      err.textContent = it.error;
      node.appendChild(err);
    }

    const row = document.createElement('div');
    row.className = 'jp-agent-proposal-buttons';
    if (it.status === 'pending') {
      const cells = it.edits ? selectedCells(it.edits, this.selected) : null;
      const apply = button(
        'Apply',
        `Apply every edit to ${it.path}`,
        () => this.actions.decideProposal(this.item, true, null),
        'jp-agent-apply jp-mod-accept'
      );
      const some = button(
        'Apply selected',
        'Apply only the checked edits',
        () => {
          const chosen = this.item.edits ? selectedCells(this.item.edits, this.selected) : null;
          if (chosen && chosen.length) {
            this.actions.decideProposal(this.item, true, chosen);
          }
        },
        'jp-agent-apply-selected'
      );
      const discard = button(
        'Discard',
        'Discard the proposal: the notebook stays as it is',
        () => this.actions.decideProposal(this.item, false, null),
        'jp-agent-discard jp-mod-reject'
      );
      apply.disabled = !pending || it.edits === null;
      // A strict, non-empty subset: all checked is a plain Apply.
      some.disabled = !pending || cells === null || cells.length === 0;
      discard.disabled = !pending;
      row.append(apply, some, discard);
    } else if (it.status === 'applied' || it.status === 'partly') {
      const undo = button(
        'Undo',
        `Undo these edits of ${it.path}`,
        () => this.actions.undoProposal(this.item),
        'jp-agent-undo'
      );
      undo.disabled = !canUndo(it);
      row.append(undo);
    }
    if (row.childElementCount) {
      node.appendChild(row);
    }
  }

  private editNode(edit: NonNullable<IProposalItem['edits']>[number], pending: boolean): HTMLLIElement {
    const li = document.createElement('li');
    li.className = `jp-agent-edit jp-agent-edit-${edit.op}`;
    li.dataset.cellId = edit.cellId;
    if (this.item.status === 'partly') {
      li.classList.toggle('jp-mod-applied', this.item.applied.includes(edit.cellId));
    }
    const head = document.createElement('label');
    head.className = 'jp-agent-edit-header';
    const box = document.createElement('input');
    box.type = 'checkbox';
    box.className = 'jp-agent-edit-check';
    box.checked =
      this.item.status === 'pending'
        ? this.selected.has(edit.cellId)
        : this.item.applied.includes(edit.cellId);
    box.disabled = !pending;
    box.setAttribute('aria-label', `Include: ${editTitle(edit)}`);
    box.addEventListener('change', () => {
      if (box.checked) {
        this.selected.add(edit.cellId);
      } else {
        this.selected.delete(edit.cellId);
      }
      this.render();
    });
    const op = document.createElement('span');
    op.className = 'jp-agent-edit-op';
    op.textContent = edit.op;
    const what = document.createElement('span');
    what.className = 'jp-agent-edit-title';
    what.textContent = editTitle(edit).slice(edit.op.length + 1);
    const stat = diffStat(edit.diff);
    const count = document.createElement('span');
    count.className = 'jp-agent-edit-stat';
    count.textContent = stat.added || stat.removed ? `+${stat.added} −${stat.removed}` : '';
    head.append(box, op, what, count);
    li.appendChild(head);
    if (edit.reason) {
      const reason = document.createElement('div');
      reason.className = 'jp-agent-edit-reason';
      reason.textContent = edit.reason;
      li.appendChild(reason);
    }
    const lines = diffLines(edit.diff);
    if (lines.length) {
      const pre = document.createElement('pre');
      pre.className = 'jp-agent-diff';
      for (const line of lines) {
        const span = document.createElement('span');
        span.className = `jp-agent-diff-${line.kind}`;
        span.textContent = line.text + '\n';
        pre.appendChild(span);
      }
      li.appendChild(pre);
    }
    return li;
  }

  private selected: Set<string>;
  private _edits: IProposalItem['edits'] = null;
  private _drawn: IProposalItem | null = null;
  private _selection = '';
}
