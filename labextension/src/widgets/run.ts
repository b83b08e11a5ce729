/**
 * The widget of one run (one turn): the person's message, what autorecall recalled for
 * it (a collapsible block, marked as recalled), the run's items in order (cells, bubbles,
 * steering, notes, the agent's proposals and its waits for approval),
 * the text being streamed, a provider retry, the final reply and the turn's footer
 * (how it ended, the agent that answered, tokens, cost, cells, duration, model, the
 * history window it held, "Open trace as notebook").
 */
import { Panel, Widget } from '@lumino/widgets';

import { answeredBy } from '../agents';
import {
  describeEnd,
  IRunState,
  RunItem,
  turnStats,
  turnWindow
} from '../model';
import { button, CellWidget, IItemContext, MarkdownWidget, TextWidget } from './items';
import { ApprovalWidget, IDecisionActions, ProposalWidget } from './proposal';
import { RecallWidget } from './recall';

/** What a run widget can ask of its chat view. */
export interface IRunActions extends IDecisionActions {
  openTrace: (runId: string) => void;
}

export class RunWidget extends Panel {
  constructor(
    private readonly ctx: IItemContext,
    private readonly actions: IRunActions,
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
    const seen = new Set<RunItem>();
    for (const item of run.items) {
      seen.add(item);
      desired.push(this.itemWidget(item));
    }
    for (const [item, w] of [...this.itemWidgets]) {
      if (!seen.has(item)) {
        this.itemWidgets.delete(item);
        w.dispose();
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

  private itemWidget(item: RunItem): Widget {
    let w = this.itemWidgets.get(item);
    if (w) {
      if (item.kind === 'cell') {
        (w as CellWidget).setItem(item);
      } else if (item.kind === 'proposal') {
        (w as ProposalWidget).setItem(item);
      } else if (item.kind === 'approval') {
        (w as ApprovalWidget).setItem(item);
      } else if (item.kind === 'steering') {
        (w as TextWidget).setLabel(
          item.queued ? 'You · steering (queued for the running turn)' : 'You · steering'
        );
      }
      return w;
    }
    switch (item.kind) {
      case 'cell':
        w = new CellWidget(this.ctx, item);
        break;
      case 'bubble':
        w = new MarkdownWidget(this.ctx.rendermime, 'jp-agent-bubble', item.text);
        break;
      case 'proposal':
        w = new ProposalWidget(this.actions, item);
        break;
      case 'approval':
        w = new ApprovalWidget(this.actions, item);
        break;
      case 'steering':
        w = new TextWidget(
          'jp-agent-steering',
          item.text,
          item.queued ? 'You · steering (queued for the running turn)' : 'You · steering'
        );
        break;
      default:
        w = new TextWidget('jp-agent-note', item.text);
    }
    this.itemWidgets.set(item, w);
    return w;
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

  private readonly itemWidgets = new Map<RunItem, Widget>();
  private readonly user: TextWidget;
  private readonly streaming: TextWidget;
  private readonly retry: TextWidget;
  private readonly reply: MarkdownWidget;
  private readonly footer: Widget;
  private recall: RecallWidget | null = null;
  private _footerKey = '';
}
