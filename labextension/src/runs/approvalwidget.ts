/**
 * The card of an approval in a run: the code or summary of what waits; Approve, Deny,
 * Approve the rest of this turn (disabled once decided); then the outcome. It draws its
 * item (`approvals.ts`) and calls its actions; the chat view sends the answer.
 */
import { Widget } from '@lumino/widgets';

import { button } from '../ui/widgets';
import { describeApproval, IApprovalItem } from './approvals';

/** What an approval card asks of its chat view. */
export interface IApprovalActions {
  answerApproval: (item: IApprovalItem, approve: boolean, rest: boolean) => void;
}

/** An approval card (see the module comment). */
export class ApprovalWidget extends Widget {
  constructor(
    private readonly actions: IApprovalActions,
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
    if (it === this._drawn) {
      return; // items are values: the same item draws the same card
    }
    this._drawn = it;
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
      // Code for the person's own kernel is asked each time: no blanket approval.
      const buttons = this.item.what === 'kernel' ? [approve, deny] : [approve, deny, rest];
      for (const b of buttons) {
        b.disabled = decided;
      }
      row.append(...buttons);
      node.appendChild(row);
    }
  }

  private _drawn: IApprovalItem | null = null;
}
