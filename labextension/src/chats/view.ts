/**
 * The main-area view of one chat: a header (title, connection, demo label, Memory,
 * export), the runs (rendered from the chat's `ChatState` whenever its `changed` signal
 * fires: live over the event stream; after a reload from the chat's records and its runs'
 * steps, read by `ChatHydration`) and the composer (`composer.ts`). The person's
 * decisions on proposals and approvals are `ChatDecisions`' (`decisions.ts`).
 * The message list follows the conversation (`FollowScroller`): the newest message is in
 * view on open, on send and after a reload, unless the person scrolled up; then a "Jump
 * to latest" control brings it back.
 */
import { Signal } from '@lumino/signaling';
import { Panel, Widget } from '@lumino/widgets';

import { errorText } from '../api/client';
import type { IChatSummary, IView } from '../api/types';
import { IRunActions, RunWidget } from '../runs/runwidget';
import type { IAgentEvent } from '../runs/state';
import { button, IItemContext } from '../ui/widgets';
import { Composer } from './composer';
import { ContextGauge } from './gaugeview';
import { chatHeader } from './header';
import { ChatDecisions } from './decisions';
import { FollowScroller } from './follow';
import { forkFrom, IForkContext, originText } from './forks';
import type { IMentionItem } from './mentions';
import { IRerunContext, rerunFrom } from './reruns';
import { ChatHydration } from './hydration';
import type { IChatsService } from './service';
import { parseSlash, unknownSlash } from './slash';
import { ISlashHost, runSlash } from './slashrun';
import { ChatState } from './state';
import { runningCell, stopNote } from './stopping';
import type { EventStream, StreamState } from './stream';

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
  /** What an `@` query can mention (files, the open notebook's cells and variables). */
  mentionCandidates?: (query: string) => Promise<IMentionItem[]>;
  /** Open a path in JupyterLab (a notebook opens in the notebook editor). */
  openPath: (path: string) => Promise<void>;
  /** Open the Memory view (the header's "Memory" button shows when given). */
  openMemory?: () => void;
  /** Start a new chat (the `/new` command). */
  newChat?: () => Promise<unknown>;
  /** Open a widget beside this chat (the diff of a turn and its rerun). */
  openBeside?: (widget: Widget, label: string) => void;
  /** Open a chat in its tab (a fork just made). */
  openChat?: (chat: IChatSummary) => Promise<unknown>;
  /**
   * A proposal was applied to (or undone in) the notebook at `path`: show the change where
   * the notebook is open (with RTC the shared model has it already). Returns a remark for
   * the person when it could not (unsaved changes), else null.
   */
  refreshNotebook?: (path: string) => Promise<string | null>;
}

/** The view of one chat (see the module comment). */
export class ChatView extends Panel {
  constructor(private readonly options: IChatViewOptions) {
    super();
    this.addClass('jp-agent-chat');
    this.id = `jp-agent-chat-${options.chatId}`;
    this.state = new ChatState(options.chatId);
    this.state.changed.connect(this.scheduleSync, this);
    this.hydration = new ChatHydration(options.service, this.state);
    const decisions = new ChatDecisions({
      service: options.service,
      state: this.state,
      hydration: this.hydration,
      refreshNotebook: options.refreshNotebook
    });
    this.actions = {
      openTrace: id => void this.openTrace(id),
      decideProposal: (item, apply, cells) => decisions.decideProposal(item, apply, cells),
      undoProposal: item => decisions.undoProposal(item),
      answerApproval: (item, approve, rest) => decisions.answerApproval(item, approve, rest),
      forkFrom: (runId, edit) =>
        void this.act('fork the chat', () => forkFrom(this.forkContext(), runId, edit)),
      rerun: runId => void this.act('re-run the turn', () => rerunFrom(this.rerunContext(), runId))
    };
    options.service.statusChanged.connect(this.refreshDemo, this);
    this.title.label = options.title || 'Agent chat';
    this.title.caption = `Agent chat ${options.chatId}`;

    this.gauge = new ContextGauge(options.service.api);
    const head = chatHeader(() => void this.exportChat(), options.openMemory, this.gauge.node);
    [this.header, this.connection, this.demo] = [head.widget, head.connection, head.demo];
    this.addWidget(this.header);

    this.messages = new Panel();
    this.messages.addClass('jp-agent-messages');
    this.messages.node.setAttribute('role', 'log');
    this.messages.node.setAttribute('aria-live', 'polite');
    this.messages.node.tabIndex = 0;
    this.empty = document.createElement('div');
    this.empty.className = 'jp-agent-empty';
    this.empty.textContent =
      'Ask the agent something. It writes Python, runs it in its own kernel and replies; ' +
      'every cell it runs shows here.';
    this.messages.node.appendChild(this.empty);
    this.addWidget(this.messages);
    this.addWidget(this.buildJump());

    this.composer = new Composer({
      send: () => void this.send(),
      stop: () => void this.stop(),
      currentPath: options.currentPath,
      mentionCandidates: options.mentionCandidates
    });
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
    this.composer.attach(path);
  }

  /** Focus the message box. */
  focusInput(): void {
    this.composer.focusInput();
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

  /**
   * Send the composer's text (and attachments, and the person's view); a slash command
   * runs here instead, and an unknown one sends nothing (`slash.ts`).
   */
  async send(): Promise<void> {
    const parsed = parseSlash(this.composer.text);
    if (parsed.kind === 'unknown') {
      this.composer.showError(unknownSlash(parsed.name));
      return;
    }
    if (parsed.kind === 'command') {
      this.composer.clearText();
      await runSlash(this.slashHost(), parsed.command.name, parsed.arg);
      return;
    }
    const draft = this.composer.take();
    if (!draft) {
      return;
    }
    const { attachments, mentions } = draft;
    const text = parsed.text || draft.text;
    const open = this.options.getView();
    const view = mentions.length ? { ...(open ?? {}), mentions } : open;
    try {
      await this.sendText(text, view, attachments);
    } catch (err) {
      this.composer.restore(text, attachments, mentions);
      this.composer.showError(`Could not send: ${errorText(err)}`);
    }
  }

  /** Send `text` with `view` (a cell action's, or the composer's); throws a refusal. */
  async sendText(text: string, view: IView | null, attachments: string[] = []): Promise<void> {
    const result = await this.options.service.send(this.chatId, text, view, attachments);
    this.state.addUserMessage(text, result.run_id, result.routed, result.message_id ?? null);
    this.follow.pin();
    this.options.service.notifyChanged();
  }

  /** Put `text` in the message box and focus it (nothing sent). */
  draft(text: string): void {
    this.composer.restore(text);
    this.composer.focusInput();
  }

  /** What the slash commands act on (`slashrun.ts`). */
  private slashHost(): ISlashHost {
    const { service, newChat, openMemory } = this.options;
    return {
      showNote: text => this.composer.showNote(text),
      service,
      chatId: this.chatId,
      running: () => this.state.activeRunId !== null,
      newChat,
      openMemory,
      stop: hard => this.stop(hard),
      exportChat: () => this.exportChat(),
      forkContext: () => this.forkContext()
    };
  }

  /** Export the chat as a notebook (in the server's trace folder) and open it. */
  async exportChat(): Promise<void> {
    try {
      // The server names the file (from the title) in its trace folder, never over a file.
      const { path } = await this.options.service.api.writeChatNotebook(this.chatId);
      await this.options.openPath(path);
    } catch (err) {
      this.composer.showError(`Could not export the chat: ${errorText(err)}`);
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

  private buildJump(): Widget {
    // A zero-height bar between the list and the composer; the button floats above it.
    // The container's ResizeObserver also catches the tab being shown (0 to full size).
    const bar = new Widget();
    bar.addClass('jp-agent-jump-bar');
    const jump = button('Jump to latest ↓', 'Scroll to the newest message', () => this.follow.pin(), 'jp-agent-jump');
    jump.hidden = true;
    bar.node.appendChild(jump);
    this.follow = new FollowScroller(this.messages.node, {
      onPinnedChanged: pinned => {
        jump.hidden = pinned;
      }
    });
    return bar;
  }

  // --- loading and the live stream ------------------------------------------------------

  private async load(): Promise<void> {
    try {
      const chat = await this.hydration.loadChat();
      this.title.label = chat.title || this.title.label;
      if (chat.forked_from) {
        // Between the header and the messages (whose children are the runs only).
        const origin = new Widget();
        origin.addClass('jp-agent-origin');
        origin.node.textContent = originText(chat.forked_from);
        this.insertWidget(this.widgets.indexOf(this.messages), origin);
      }
    } catch (err) {
      this.composer.showError(`Could not load the chat: ${errorText(err)}`);
    }
    await this.hydration.loadProposals();
    this.stream = this.options.service.openEvents(this.chatId, {
      // From 0 the first time: the server's kept events build the run in progress.
      since: () => this.state.lastSeq,
      onEvent: event => this.onEvent(event),
      onState: state => this.onStreamState(state)
    });
    await this.hydration.loadSteps(() => this.isDisposed);
  }

  private onEvent(event: IAgentEvent): void {
    if (event.type === 'gap') {
      // Not an event: the server let go of some after our last seq. On the first
      // connection the opening read covered them; on a reconnection they are read again,
      // all but the runs this view saw end (see ChatHydration.afterGap).
      if (this.streamOpens > 1) {
        this.hydration.afterGap(this.state.endedRunIds(), () => this.isDisposed).catch(err => {
          this.composer.showError(`Could not catch up with the chat: ${errorText(err)}`);
        });
      }
      return;
    }
    if (event.type === 'title') {
      // Named after its first turn: the server's title now (a later rename wins, so the
      // event's own title is not taken as is: a catch-up replays it).
      this.options.service.notifyChanged();
    }
    if (this.state.applyEvent(event)) {
      if (event.type === 'run_end' || event.type === 'run_start') {
        this.stopStage = 0;
        this.options.service.notifyChanged();
      }
    }
  }

  private onStreamState(state: StreamState): void {
    if (state === 'open') {
      this.streamOpens += 1;
    }
    const labels: { [k in StreamState]: string } = {
      connecting: 'Connecting…',
      open: 'Live',
      reconnecting: 'Reconnecting…',
      closed: 'Offline'
    };
    this.connection.textContent = labels[state];
    this.connection.dataset.state = state;
  }

  private forkContext(): IForkContext {
    const { service, openChat, getView } = this.options;
    return {
      api: service.api,
      chatId: this.chatId,
      runs: this.state.runs,
      getView,
      openChat: chat => (openChat ? openChat(chat) : Promise.resolve()),
      notify: () => service.notifyChanged()
    };
  }

  private rerunContext(): IRerunContext {
    const openBeside = this.options.openBeside ?? (() => undefined);
    const showNote = (text: string) => this.composer.showNote(text);
    return { api: this.options.service.api, showNote, openBeside };
  }

  /** Do what the person asked from a turn; a refusal shows as an error. */
  private async act(what: string, action: () => Promise<void>): Promise<void> {
    try {
      await action();
    } catch (err) {
      this.composer.showError(`Could not ${what}: ${errorText(err)}`);
    }
  }

  private async openTrace(runId: string): Promise<void> {
    try {
      const { path } = await this.options.service.api.writeRunNotebook(runId);
      await this.options.openPath(path);
    } catch (err) {
      this.composer.showError(`Could not open the trace: ${errorText(err)}`);
    }
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

  /** Bring the run widgets in line with the state (kept by run id). */
  private sync(): void {
    if (this.isDisposed) {
      return;
    }
    const seen = new Set<string>();
    this.state.runs.forEach((run, i) => {
      seen.add(run.runId);
      let w = this.runWidgets.get(run.runId);
      if (!w) {
        w = new RunWidget(this.options.ctx, this.actions, this.state.proposals, run);
        this.runWidgets.set(run.runId, w);
      } else {
        w.sync(run);
      }
      if (this.messages.widgets[i] !== w) {
        this.messages.insertWidget(i, w);
      }
    });
    for (const [runId, w] of [...this.runWidgets]) {
      if (!seen.has(runId)) {
        this.runWidgets.delete(runId);
        w.dispose();
      }
    }
    this.empty.hidden = this.state.runs.length > 0;
    this.gauge.update(this.state.runs);
    this.syncControls();
    this.follow.contentChanged();
  }

  private syncControls(): void {
    const running = this.state.running;
    const active = this.state.runs.find(r => r.runId === this.state.activeRunId);
    const note = stopNote(this.stopStage, runningCell(active) !== null);
    this.composer.setRunning(running, this.stopStage, note);
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

  private readonly hydration: ChatHydration;
  /** How many times the events stream has opened (a gap after the first is a catch-up). */
  private streamOpens = 0;
  private readonly actions: IRunActions;
  private readonly header: Widget;
  private readonly messages: Panel;
  private readonly empty: HTMLDivElement;
  private readonly composer: Composer;
  private readonly runWidgets = new Map<string, RunWidget>();
  private readonly gauge: ContextGauge;
  private connection!: HTMLSpanElement;
  private demo!: HTMLSpanElement;
  private stream: EventStream | null = null;
  private frame: number | null = null;
  private stopStage = 0;
  private follow!: FollowScroller;
}
