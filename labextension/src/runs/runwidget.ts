/**
 * The widget of one run (one turn): the person's message, what autorecall recalled for
 * it (a collapsible block, marked as recalled), the run's items in order (cells, bubbles,
 * steering, notes, the agent's proposals and its waits for approval),
 * the text being streamed, a provider retry, the final reply and the turn's footer
 * (how it ended, the agent that answered, tokens, cost, cells, duration, model, the
 * history window it held, "Open trace as notebook").
 */
import { Panel, Widget } from '@lumino/widgets';

import { answeredBy } from '../agents/agents';
import { turnWindow } from '../history/window';
import { RecallWidget } from '../memory/recallwidget';
import { IProposalActions, ProposalWidget } from '../notebook/proposalwidget';
import type { ProposalStore } from '../notebook/store';
import { button, IItemContext, MarkdownWidget, TextWidget } from '../ui/widgets';
import { ApprovalWidget, IApprovalActions } from './approvalwidget';
import { CellWidget } from './cellwidget';
import type { IRunState, RunItem } from './state';
import { describeEnd, turnStats } from './turns';

/** What a run widget can ask of its chat view. */
export interface IRunActions extends IProposalActions, IApprovalActions {
  openTrace: (runId: string) => void;
  /** A new chat from this turn ("Fork from here"), or before it with an edited message. */
  forkFrom?: (runId: string, edit: boolean) => void;
  /** Re-run the turn's recorded inputs on another model ("Re-run…"). */
  rerun?: (runId: string) => void;
}

/**
 * The key of an item's widget, stable across the item's changes (items are values: a
 * changed item is a new object): its id (cell, proposal, approval, a message's id), else
 * its kind and its rank among the items of that kind with no id.
 */
export function itemKeys(items: ReadonlyArray<RunItem>): string[] {
  const ranks = new Map<string, number>();
  return items.map(item => {
    switch (item.kind) {
      case 'cell':
        return `cell:${item.cellId}`;
      case 'proposal':
        return `proposal:${item.proposalId}`;
      case 'approval':
        return `approval:${item.approvalId}`;
      case 'bubble':
      case 'steering':
        if (item.messageId !== null) {
          return `${item.kind}:${item.messageId}`;
        }
        break;
      default:
        break;
    }
    const rank = ranks.get(item.kind) ?? 0;
    ranks.set(item.kind, rank + 1);
    return `${item.kind}#${rank}`;
  });
}

export class RunWidget extends Panel {
  constructor(
    private readonly ctx: IItemContext,
    private readonly actions: IRunActions,
    private readonly proposals: ProposalStore,
    run: IRunState
  ) {
    super();
    this.addClass('jp-agent-run');
    this.node.dataset.runId = run.runId;
    this.run = run;
    this.user = new TextWidget('jp-agent-user', '', 'You');
    this.streaming = new TextWidget('jp-agent-streaming', '');
    this.retry = new TextWidget('jp-agent-retry', '');
    this.retry.node.setAttribute('role', 'status');
    this.reply = new MarkdownWidget(ctx.rendermime, 'jp-agent-reply', '');
    this.footer = new Widget();
    this.footer.addClass('jp-agent-turn-footer');
    this.sync(run);
  }

  run: IRunState;

  /** Bring the widget in line with the run's state. */
  sync(run: IRunState): void {
    this.run = run;
    const desired: Widget[] = [];
    if (run.userText) {
      this.user.setText(run.userText);
      desired.push(this.user);
    }
    if (run.recall) {
      // Before the model's first call, so above everything the run did.
      if (this.recall) {
        this.recall.setInfo(run.recall);
      } else {
        this.recall = new RecallWidget(run.recall);
      }
      desired.push(this.recall);
    }
    const keys = itemKeys(run.items);
    const seen = new Set<string>();
    run.items.forEach((item, i) => {
      seen.add(keys[i]);
      const w = this.itemWidget(keys[i], item);
      if (w) {
        desired.push(w);
      }
    });
    for (const [key, entry] of [...this.itemWidgets]) {
      if (!seen.has(key)) {
        this.itemWidgets.delete(key);
        entry.widget.dispose();
      }
    }
    if (run.streaming) {
      this.streaming.setText(run.streaming);
      desired.push(this.streaming);
    }
    if (run.retry) {
      this.retry.setText(
        `Provider busy, retrying (attempt ${run.retry.attempt})` +
          (run.retry.status ? ` after HTTP ${run.retry.status}` : '') +
          (run.retry.waitS ? `, waiting ${run.retry.waitS.toFixed(1)} s` : '') +
          '…'
      );
      desired.push(this.retry);
    }
    if (run.reply) {
      this.reply.setText(run.reply.text);
      desired.push(this.reply);
    }
    this.renderFooter(run);
    desired.push(this.footer);
    desired.forEach((w, i) => {
      if (this.widgets[i] !== w) {
        this.insertWidget(i, w);
      }
    });
    for (const w of [...this.widgets].slice(desired.length)) {
      if (!desired.includes(w)) {
        w.parent = null;
      }
    }
    this.toggleClass('jp-mod-running', !run.ended);
  }

  /** The widget of an item, kept by key and brought up to date (null: nothing to show). */
  private itemWidget(key: string, item: RunItem): Widget | null {
    const known = this.itemWidgets.get(key);
    if (known && known.kind === item.kind) {
      this.updateWidget(known.widget, item);
      return known.widget;
    }
    known?.widget.dispose();
    const widget = this.createWidget(item);
    if (widget) {
      this.itemWidgets.set(key, { kind: item.kind, widget });
    } else {
      this.itemWidgets.delete(key);
    }
    return widget;
  }

  private createWidget(item: RunItem): Widget | null {
    switch (item.kind) {
      case 'cell':
        return new CellWidget(this.ctx, item);
      case 'bubble':
        return new MarkdownWidget(this.ctx.rendermime, 'jp-agent-bubble', item.text);
      case 'proposal': {
        // Kept once, in the chat's store; the card follows the store's changes to it.
        const proposal = this.proposals.get(item.proposalId);
        return proposal ? new ProposalWidget(this.actions, this.proposals, proposal) : null;
      }
      case 'approval':
        return new ApprovalWidget(this.actions, item);
      case 'steering':
        return new TextWidget('jp-agent-steering', item.text, steeringLabel(item.queued));
      default:
        return new TextWidget('jp-agent-note', item.text);
    }
  }

  private updateWidget(w: Widget, item: RunItem): void {
    switch (item.kind) {
      case 'cell':
        (w as CellWidget).setItem(item);
        break;
      case 'bubble':
        (w as MarkdownWidget).setText(item.text);
        break;
      case 'proposal':
        break; // the card follows the store
      case 'approval':
        (w as ApprovalWidget).setItem(item);
        break;
      case 'steering':
        (w as TextWidget).setText(item.text);
        (w as TextWidget).setLabel(steeringLabel(item.queued));
        break;
      default:
        (w as TextWidget).setText(item.text);
    }
  }

  private renderFooter(run: IRunState): void {
    const key = JSON.stringify([
      run.ended,
      run.endCause,
      run.turn?.id,
      run.turn?.durationMs,
      run.turn?.fromAgent
    ]);
    if (key === this._footerKey) {
      return;
    }
    this._footerKey = key;
    const node = this.footer.node;
    node.textContent = '';
    if (!run.ended) {
      const working = document.createElement('span');
      working.className = 'jp-agent-working';
      working.textContent = 'Working…';
      node.appendChild(working);
      return;
    }
    const end = document.createElement('span');
    end.className = `jp-agent-end jp-agent-end-${(run.endCause || 'unknown').replace(/[^a-z_]/g, '-')}`;
    end.textContent = describeEnd(run.endCause, run.stopReason);
    node.appendChild(end);
    if (run.turn) {
      const agent = document.createElement('span');
      agent.className = 'jp-agent-from';
      agent.dataset.agent = answeredBy(run.turn);
      agent.textContent = `answered by ${answeredBy(run.turn)}`;
      agent.title = 'The agent that answered this turn (its soul, skills and model tiers)';
      node.appendChild(agent);
      const stats = document.createElement('span');
      stats.className = 'jp-agent-stats';
      stats.textContent = turnStats(run.turn).join(' · ');
      node.appendChild(stats);
      const held = turnWindow(run.turn);
      if (held) {
        const history = document.createElement('span');
        history.className = 'jp-agent-window';
        history.textContent = held.text;
        history.title = held.title;
        node.appendChild(history);
      }
    }
    node.appendChild(
      button(
        'Open trace as notebook',
        'Open this turn’s trace as a notebook',
        () => this.actions.openTrace(run.runId),
        'jp-agent-open-trace'
      )
    );
    const fork = this.actions.forkFrom;
    if (run.turn && fork) {
      node.appendChild(
        button(
          'Fork from here',
          'A new chat whose history is this chat up to this turn (this chat stays as it is)',
          () => fork(run.runId, false),
          'jp-agent-fork'
        )
      );
      node.appendChild(
        button(
          'Edit and resend',
          'Edit this message and send it in a new chat that holds the turns before it',
          () => fork(run.runId, true),
          'jp-agent-edit-resend'
        )
      );
    }
    const rerun = this.actions.rerun;
    if (run.turn && rerun && run.ended) {
      node.appendChild(
        button(
          'Re-run…',
          'Run this turn again with its recorded inputs on another model, and compare',
          () => rerun(run.runId),
          'jp-agent-rerun'
        )
      );
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    for (const w of [this.user, this.streaming, this.retry, this.reply, this.footer]) {
      w.dispose();
    }
    this.recall?.dispose();
    this.itemWidgets.clear();
    super.dispose();
  }

  private readonly itemWidgets = new Map<string, { kind: RunItem['kind']; widget: Widget }>();
  private readonly user: TextWidget;
  private readonly streaming: TextWidget;
  private readonly retry: TextWidget;
  private readonly reply: MarkdownWidget;
  private readonly footer: Widget;
  private recall: RecallWidget | null = null;
  private _footerKey = '';
}

function steeringLabel(queued: boolean): string {
  return queued ? 'You · steering (queued for the running turn)' : 'You · steering';
}
