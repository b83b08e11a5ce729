/**
 * The cards of the person's decisions in a run: a proposal (the agent's edits of a
 * notebook, per edit its op, cell, reason and coloured diff with a checkbox; Apply, Apply
 * selected, Discard; then the outcome and Undo; a conflict in the server's words) and an
 * approval (the code or summary; Approve, Deny, Approve the rest of this turn; disabled
 * once decided).
 *
 * The cards only draw their item (`proposals.ts`) and call their actions; the chat view
 * sends the requests and updates the chat state, which re-renders them.
 */
import { Widget } from '@lumino/widgets';

import {
  canDecide,
  canUndo,
  describeApproval,
  describeOutcome,
  diffLines,
  diffStat,
  editTitle,
  IApprovalItem,
  IProposalItem,
  selectedCells
} from '../proposals';
import { button } from './items';

/** What the cards ask of their chat view. */
export interface IDecisionActions {
  /** Apply the proposal (`cells`: only these edits; null: all) or discard it. */
  decideProposal: (item: IProposalItem, apply: boolean, cells: string[] | null) => void;
  undoProposal: (item: IProposalItem) => void;
  answerApproval: (item: IApprovalItem, approve: boolean, rest: boolean) => void;
}

/** A proposal card (see the module comment). */
export class ProposalWidget extends Widget {
  constructor(
    private readonly actions: IDecisionActions,
    item: IProposalItem
  ) {
    super();
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

  private render(): void {
    const it = this.item;
    const key = JSON.stringify([
      it.status,
      it.applied,
      it.busy,
      it.error,
      it.path,
      it.edits?.length ?? null,
      [...this.selected]
    ]);
    if (key === this._key) {
      return;
    }
    if (it.edits && this._edits !== it.edits) {
      // Edits arrived (a row read after a reload): all selected, as on a new card.
      this._edits = it.edits;
      this.selected = new Set(it.edits.map(e => e.cellId));
    }
    this._key = key;
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
  private _key = '';
}

/** An approval card (see the module comment). */
export class ApprovalWidget extends Widget {
  constructor(
    private readonly actions: IDecisionActions,
    item: IApprovalItem
  ) {
    super();
    this.addClass('jp-agent-approval');
    this.node.setAttribute('role', 'group');
    this.node.dataset.approvalId = item.approvalId;
    this.item = item;
    this.render();
  }

  item: IApprovalItem;

  setItem(item: IApprovalItem): void {
    this.item = item;
    this.render();
  }

  private render(): void {
    const it = this.item;
    const key = JSON.stringify([it.open, it.approved, it.rest, it.busy, it.error]);
    if (key === this._key) {
      return;
    }
    this._key = key;
    const node = this.node;
    node.dataset.state = it.open ? 'open' : 'closed';
    node.dataset.approved = it.approved === null ? '' : String(it.approved);
    this.toggleClass('jp-mod-open', it.open);
    node.setAttribute('aria-label', describeApproval(it));
    node.textContent = '';

    const header = document.createElement('div');
    header.className = 'jp-agent-approval-header';
    header.textContent = describeApproval(it);
    node.appendChild(header);
    if (it.summary) {
      const summary = document.createElement('div');
      summary.className = 'jp-agent-approval-summary';
      summary.textContent = it.summary;
      node.appendChild(summary);
    }
    if (it.code) {
      const pre = document.createElement('pre');
      pre.className = 'jp-agent-approval-code';
      pre.textContent = it.what === 'bash' ? `$ ${it.code}` : it.code;
      node.appendChild(pre);
    }
    if (it.error) {
      const err = document.createElement('div');
      err.className = 'jp-agent-approval-error';
      err.setAttribute('role', 'alert');
      err.textContent = it.error;
      node.appendChild(err);
    }
    if (it.open) {
      const decided = it.busy || it.approved !== null;
      const row = document.createElement('div');
      row.className = 'jp-agent-approval-buttons';
      const approve = button(
        'Approve',
        'Let the agent go ahead',
        () => this.actions.answerApproval(this.item, true, false),
        'jp-agent-approve jp-mod-accept'
      );
      const deny = button(
        'Deny',
        'Refuse: the agent is told you denied it',
        () => this.actions.answerApproval(this.item, false, false),
        'jp-agent-deny jp-mod-reject'
      );
      const rest = button(
        'Approve the rest of this turn',
        'Approve this and every later request of this turn',
        () => this.actions.answerApproval(this.item, true, true),
        'jp-agent-approve-rest'
      );
      for (const b of [approve, deny, rest]) {
        b.disabled = decided;
      }
      row.append(approve, deny, rest);
      node.appendChild(row);
    }
  }

  private _key = '';
}
