/**
 * The main-area view of one chat: a header (title, connection, demo label, export), the
 * runs (rendered from the chat's `ChatState` whenever its `changed` signal fires: live over
 * the event stream; after a reload from the chat's records and its runs' steps) and the
 * composer (Enter sends, Shift+Enter breaks the line; attachments; Stop / Stop now).
 * The message list follows the conversation (`FollowScroller`): the newest message is in
 * view on open, on send and after a reload, unless the person scrolled up; then a "Jump
 * to latest" control brings it back.
 */
import { linkIcon } from '@jupyterlab/ui-components';
import { Signal } from '@lumino/signaling';
import { Panel, Widget } from '@lumino/widgets';

import { AgentApiError, IView } from '../api';
import { ChatState, IAgentEvent, IRunState } from '../model';
import type { IApprovalItem, IProposalItem } from '../proposals';
import type { IChatsService } from '../service';
import { EventStream, StreamState } from '../stream';
import { FollowScroller } from './follow';
import { button, IItemContext } from './items';
import { IRunActions, RunWidget } from './run';

/** What the chat view needs from the application. */
export interface IChatViewOptions {
  /** The chats service (REST, status, event streams). */
  service: IChatsService;
  chatId: string;
  title: string;
  ctx: IItemContext;
  /** What the person has open (path, active cell, selection), or null. */
  getView: () => IView | null;
  /** The path of the document the person has open, or null. */
  currentPath: () => string | null;
  /** Open a path in JupyterLab (a notebook opens in the notebook editor). */
  openPath: (path: string) => Promise<void>;
  /** Open the Memory view (the header's "Memory" button shows when given). */
  openMemory?: () => void;
  /**
   * A proposal was applied to (or undone in) the notebook at `path`: show the change where
   * the notebook is open (with RTC the shared model has it already). Returns a remark for
   * the person when it could not (unsaved changes), else null.
   */
  refreshNotebook?: (path: string) => Promise<string | null>;
}

/** How many ended runs a view rebuilds from their steps when it opens (newest). */
const STEP_RUNS = 20;

export class ChatView extends Panel {
  constructor(private readonly options: IChatViewOptions) {
    super();
    this.addClass('jp-agent-chat');
    this.id = `jp-agent-chat-${options.chatId}`;
    this.state = new ChatState(options.chatId);
    this.state.changed.connect(this.scheduleSync, this);
    options.service.statusChanged.connect(this.refreshDemo, this);
    this.title.label = options.title || 'Agent chat';
    this.title.caption = `Agent chat ${options.chatId}`;

    this.header = new Widget();
    this.header.addClass('jp-agent-chat-header');
    this.connection = document.createElement('span');
    this.connection.className = 'jp-agent-connection';
    this.connection.setAttribute('role', 'status');
    this.demo = document.createElement('span');
    this.demo.className = 'jp-agent-demo-badge';
    this.demo.textContent = 'Demo model — offline, no API key';
    this.demo.hidden = true;
    const spacer = document.createElement('span');
    spacer.className = 'jp-agent-spacer';
    this.header.node.append(this.demo, spacer, this.connection);
    const openMemory = options.openMemory;
    if (openMemory) {
      this.header.node.appendChild(
        button('Memory', 'Open the agent’s memory: what it keeps across chats', () => openMemory(), 'jp-agent-open-memory')
      );
    }
    this.header.node.appendChild(
      button('Export chat as notebook', 'Export this chat as a notebook', () => void this.exportChat(), 'jp-agent-export')
    );
    this.addWidget(this.header);

    this.messages = new Panel();
    this.messages.addClass('jp-agent-messages');
    this.messages.node.setAttribute('role', 'log');
    this.messages.node.setAttribute('aria-live', 'polite');
    this.messages.node.tabIndex = 0;
    this.addWidget(this.messages);
    this.addWidget(this.buildJump());

    this.composer = new Widget();
    this.composer.addClass('jp-agent-composer');
    this.buildComposer(this.composer.node);
    this.addWidget(this.composer);
    this.refreshDemo();
    void this.load();
  }

  readonly state: ChatState;

  get chatId(): string {
    return this.options.chatId;
  }

  /** Add a contents path to the message being written. */
  attach(path: string): void {
    if (path && !this.attachments.includes(path)) {
      this.attachments.push(path);
      this.renderAttachments();
    }
  }

  /** Focus the message box. */
  focusInput(): void {
    this.input.focus();
  }

  /** The run in progress, if any. */
  get activeRunId(): string | null {
    return this.state.activeRunId;
  }

  /** Break the run in progress: soft first, hard when `hard` (or on a second call). */
  async stop(hard = this.stopStage > 0): Promise<void> {
    const runId = this.state.activeRunId;
    if (!runId) {
      return;
    }
    this.stopStage = hard ? 2 : 1;
    this.syncControls();
    try {
      await this.options.service.api.breakRun(runId, hard);
    } catch (err) {
      this.state.addNote(runId, `Could not stop the run: ${errorText(err)}`);
    }
  }

  /** Send the composer's text (and attachments, and the person's view). */
  async send(): Promise<void> {
    const text = this.input.value.trim();
    if (!text && this.attachments.length === 0) {
      return;
    }
    const attachments = [...this.attachments];
    this.input.value = '';
    this.attachments = [];
    this.renderAttachments();
    try {
      const view = this.options.getView();
      const result = await this.options.service.send(this.chatId, text, view, attachments);
      this.state.addUserMessage(text, result.run_id, result.routed, result.message_id ?? null);
      this.follow.pin();
      this.options.service.notifyChanged();
    } catch (err) {
      this.input.value = text;
      this.error.textContent = `Could not send: ${errorText(err)}`;
      this.error.hidden = false;
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.stream?.dispose();
    this.stream = null;
    Signal.clearData(this.state);
    this.options.service.statusChanged.disconnect(this.refreshDemo, this);
    this.follow.dispose();
    if (this.frame !== null) {
      cancelAnimationFrame(this.frame);
    }
    super.dispose();
  }

  // --- following the conversation ------------------------------------------------------

  private buildJump(): Widget {
    // A zero-height bar between the list and the composer; the button floats above it.
    // The container's ResizeObserver also catches the tab being shown (0 to full size).
    const bar = new Widget();
    bar.addClass('jp-agent-jump-bar');
    this.jump = button('Jump to latest ↓', 'Scroll to the newest message', () => this.follow.pin(), 'jp-agent-jump');
    this.jump.hidden = true;
    bar.node.appendChild(this.jump);
    this.follow = new FollowScroller(this.messages.node, {
      onPinnedChanged: pinned => {
        this.jump.hidden = pinned;
      }
    });
    return bar;
  }

  // --- loading and the live stream ------------------------------------------------------

  private async load(): Promise<void> {
    const service = this.options.service;
    try {
      const chat = await service.getChat(this.chatId);
      this.title.label = chat.title || this.title.label;
      this.state.loadTurns(chat.turns || [], chat.active_run_id ?? null);
    } catch (err) {
      this.error.textContent = `Could not load the chat: ${errorText(err)}`;
      this.error.hidden = false;
    }
    // The proposals with their edits (the turns name them; a decided one may have been
    // applied or undone since), before the steps, which keep them in place.
    await this.loadProposals();
    this.stream = service.openEvents(this.chatId, {
      // From 0 the first time: the server's kept events build the run in progress.
      since: () => this.state.lastSeq,
      onEvent: event => this.onEvent(event),
      onState: state => this.onStreamState(state)
    });
    // Ended runs come from their steps (the events of a run before a server restart are
    // gone; those the server still holds are not needed): no notebook, no waiting.
    for (const runId of this.state.runsToLoad().slice(-STEP_RUNS).reverse()) {
      try {
        this.state.loadSteps(runId, await service.runSteps(runId));
      } catch {
        // The trace may be gone (pruned): the record still shows the turn.
      }
      if (this.isDisposed) {
        return;
      }
    }
  }

  /** Read the chat's proposals again (a server without the route has none). */
  private async loadProposals(): Promise<void> {
    try {
      this.state.loadProposals(await this.options.service.listProposals(this.chatId));
    } catch {
      // Older servers have no proposals; the turns' entries show what they can.
    }
  }

  // --- the person's decisions (proposals, approvals) --------------------------------------

  private readonly actions: IRunActions = {
    openTrace: id => void this.openTrace(id),
    decideProposal: (item, apply, cells) => void this.decideProposal(item, apply, cells),
    undoProposal: item => void this.undoProposal(item),
    answerApproval: (item, approve, rest) => void this.answerApproval(item, approve, rest)
  };

  private async decideProposal(
    item: IProposalItem,
    apply: boolean,
    cells: string[] | null
  ): Promise<void> {
    const id = item.proposalId;
    this.state.setProposalBusy(id, true);
    let outcome: string;
    try {
      ({ outcome } = await this.options.service.decideProposal(item.runId, id, apply, cells));
    } catch (err) {
      if (err instanceof AgentApiError && err.reason === 'proposal_conflict') {
        // Finished as a conflict: nothing was written; the server's message names the cells.
        this.state.proposalOutcome(id, 'conflict', null, err.message);
      } else {
        const verb = apply ? 'apply' : 'discard';
        this.state.setProposalBusy(id, false, `Could not ${verb} the proposal: ${errorText(err)}`);
        if (err instanceof AgentApiError && err.reason === 'proposal_decided') {
          await this.loadProposals(); // decided elsewhere: show how
        }
      }
      return;
    }
    this.state.proposalOutcome(id, outcome, cells);
    if (outcome === 'applied' || outcome === 'partly') {
      await this.showInNotebook(item);
    }
  }

  private async undoProposal(item: IProposalItem): Promise<void> {
    const id = item.proposalId;
    this.state.setProposalBusy(id, true);
    try {
      const { outcome } = await this.options.service.undoProposal(id);
      this.state.proposalOutcome(id, outcome);
    } catch (err) {
      // A conflict leaves it applied: the notebook changed since, nothing was written.
      const words =
        err instanceof AgentApiError && err.reason === 'proposal_conflict'
          ? `Could not undo: ${err.message}`
          : `Could not undo: ${errorText(err)}`;
      this.state.setProposalBusy(id, false, words);
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
    try {
      const remark = await refresh(item.path);
      if (remark) {
        this.state.setProposalBusy(item.proposalId, false, remark);
      }
    } catch (err) {
      this.state.setProposalBusy(
        item.proposalId,
        false,
        `The notebook could not be reloaded: ${errorText(err)}`
      );
    }
  }

  private async answerApproval(item: IApprovalItem, approve: boolean, rest: boolean): Promise<void> {
    const { runId, approvalId } = item;
    this.state.setApprovalBusy(runId, approvalId, true);
    try {
      await this.options.service.answerApproval(runId, approvalId, approve, rest);
    } catch (err) {
      this.state.setApprovalBusy(runId, approvalId, false, `Could not answer: ${errorText(err)}`);
      return;
    }
    // Its `approval_end` closes the card; until then the buttons stay disabled.
    this.state.setApprovalBusy(runId, approvalId, false, null, { approve, rest });
  }

  private onEvent(event: IAgentEvent): void {
    if (this.state.applyEvent(event)) {
      if (event.type === 'run_end' || event.type === 'run_start') {
        this.stopStage = 0;
        this.options.service.notifyChanged();
      }
    }
  }

  private onStreamState(state: StreamState): void {
    const labels: { [k in StreamState]: string } = {
      connecting: 'Connecting…',
      open: 'Live',
      reconnecting: 'Reconnecting…',
      closed: 'Offline'
    };
    this.connection.textContent = labels[state];
    this.connection.dataset.state = state;
  }

  // --- rendering --------------------------------------------------------------------------

  private scheduleSync(): void {
    if (this.frame === null) {
      this.frame = requestAnimationFrame(() => {
        this.frame = null;
        this.sync();
      });
    }
  }

  private sync(): void {
    if (this.isDisposed) {
      return;
    }
    const seen = new Set<IRunState>();
    this.state.runs.forEach((run, i) => {
      seen.add(run);
      let w = this.runWidgets.get(run);
      if (!w) {
        w = new RunWidget(this.options.ctx, this.actions, run);
        this.runWidgets.set(run, w);
      } else {
        w.sync(run);
      }
      if (this.messages.widgets[i] !== w) {
        this.messages.insertWidget(i, w);
      }
    });
    for (const [run, w] of [...this.runWidgets]) {
      if (!seen.has(run)) {
        this.runWidgets.delete(run);
        w.dispose();
      }
    }
    this.empty.hidden = this.state.runs.length > 0;
    this.syncControls();
    this.follow.contentChanged();
  }

  private syncControls(): void {
    const running = this.state.running;
    this.stopButton.hidden = !running;
    this.stopButton.textContent = this.stopStage === 0 ? 'Stop' : 'Stop now';
    this.stopButton.title =
      this.stopStage === 0
        ? 'Stop the run at its next step (click again to stop at once)'
        : 'Stop the run at once (hard stop)';
    this.stopButton.setAttribute('aria-label', this.stopButton.title);
    this.stopButton.disabled = this.stopStage === 2;
    this.sendButton.textContent = running ? 'Steer' : 'Send';
    this.sendButton.title = running
      ? 'Send to the running turn (it steers the agent)'
      : 'Send (Enter)';
    this.input.placeholder = running
      ? 'The agent is working: what you send steers it (Enter sends)'
      : 'Ask the agent (Enter sends, Shift+Enter breaks the line)';
    this.toggleClass('jp-mod-running', running);
  }

  private refreshDemo(): void {
    const status = this.options.service.status;
    if (status) {
      this.demo.hidden = !status.demo;
      return;
    }
    // Not known yet (a tab the layout restorer reopens before the sidebar read the
    // status): ask the server (statusChanged then calls this again).
    void this.options.service.refreshStatus();
  }

  // --- composer ---------------------------------------------------------------------------

  private buildComposer(node: HTMLElement): void {
    this.empty = document.createElement('div');
    this.empty.className = 'jp-agent-empty';
    this.empty.textContent =
      'Ask the agent something. It writes Python, runs it in its own kernel and replies; ' +
      'every cell it runs shows here.';
    this.messages.node.appendChild(this.empty);

    this.error = document.createElement('div');
    this.error.className = 'jp-agent-error';
    this.error.setAttribute('role', 'alert');
    this.error.hidden = true;

    this.attachList = document.createElement('div');
    this.attachList.className = 'jp-agent-attachments';

    this.input = document.createElement('textarea');
    this.input.className = 'jp-agent-input';
    this.input.rows = 3;
    this.input.setAttribute('aria-label', 'Message to the agent');
    this.input.addEventListener('keydown', ev => {
      if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        ev.stopPropagation();
        void this.send();
      }
    });
    this.input.addEventListener('input', () => {
      this.error.hidden = true;
    });

    const row = document.createElement('div');
    row.className = 'jp-agent-composer-buttons';
    const clip = button('Attach', 'Attach the open document', () => {
      const path = this.options.currentPath();
      if (path) {
        this.attach(path);
      } else {
        this.error.textContent = 'No document is open to attach.';
        this.error.hidden = false;
      }
    }, 'jp-agent-attach', linkIcon);
    this.sendButton = button('Send', 'Send (Enter)', () => void this.send(), 'jp-agent-send jp-mod-accept');
    this.stopButton = button('Stop', 'Stop the run', () => void this.stop(), 'jp-agent-stop jp-mod-warn');
    this.stopButton.hidden = true;
    row.append(clip, this.stopButton, this.sendButton);
    node.append(this.error, this.attachList, this.input, row);
  }

  private renderAttachments(): void {
    this.attachList.textContent = '';
    for (const path of this.attachments) {
      const chip = document.createElement('span');
      chip.className = 'jp-agent-chip';
      chip.textContent = path;
      chip.appendChild(
        button('×', `Remove the attachment ${path}`, () => {
          this.attachments = this.attachments.filter(p => p !== path);
          this.renderAttachments();
        }, 'jp-agent-chip-remove')
      );
      this.attachList.appendChild(chip);
    }
  }

  // --- traces and export ------------------------------------------------------------------

  private async openTrace(runId: string): Promise<void> {
    try {
      const { path } = await this.options.service.api.writeRunNotebook(runId);
      await this.options.openPath(path);
    } catch (err) {
      this.error.textContent = `Could not open the trace: ${errorText(err)}`;
      this.error.hidden = false;
    }
  }

  async exportChat(): Promise<void> {
    try {
      // The server names the file (from the title) in its trace folder, never over a file.
      const { path } = await this.options.service.api.writeChatNotebook(this.chatId);
      await this.options.openPath(path);
    } catch (err) {
      this.error.textContent = `Could not export the chat: ${errorText(err)}`;
      this.error.hidden = false;
    }
  }

  private readonly header: Widget;
  private readonly messages: Panel;
  private readonly composer: Widget;
  private readonly connection: HTMLSpanElement;
  private readonly demo: HTMLSpanElement;
  private readonly runWidgets = new Map<IRunState, RunWidget>();
  private empty!: HTMLDivElement;
  private error!: HTMLDivElement;
  private attachList!: HTMLDivElement;
  private input!: HTMLTextAreaElement;
  private sendButton!: HTMLButtonElement;
  private stopButton!: HTMLButtonElement;
  private attachments: string[] = [];
  private stream: EventStream | null = null;
  private frame: number | null = null;
  private stopStage = 0;
  private follow!: FollowScroller;
  private jump!: HTMLButtonElement;
}

function errorText(err: unknown): string {
  if (err instanceof AgentApiError) {
    return `${err.message} (${err.status})`;
  }
  return err instanceof Error ? err.message : String(err);
}
