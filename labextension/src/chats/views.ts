/**
 * The chat views: one main-area `ChatView` per chat, tracked (and restored by the layout
 * restorer), opened and created through the chats service. Provided under the
 * `IChatViews` token by the `jupyter-agent:chat-views` plugin; the sidebar and the
 * commands plugins require it.
 *
 * Creating a chat asks which agent answers it when the server hosts more than one
 * (`agents.ts`: the last pick preselected, else the default agent).
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { InputDialog, MainAreaWidget, WidgetTracker } from '@jupyterlab/apputils';
import { Token } from '@lumino/coreutils';
import type { Widget } from '@lumino/widgets';

import { AgentChoice, IPickStore } from '../agents/agents';
import type { IAgentDocuments } from '../notebook/documents';
import { agentIcon } from '../ui/icons';
import type { IItemContext } from '../ui/widgets';
import type { IChatsService } from './service';
import { mentionCandidates } from './mentionsources';
import { ChatView } from './view';


/** The open chat views. */
export interface IChatViews {
  readonly tracker: WidgetTracker<MainAreaWidget<ChatView>>;
  /** The chat view of the current tab, if any. */
  readonly current: ChatView | null;
  /** The open view of a chat, if any. */
  find(chatId: string): ChatView | null;
  /** Open (or activate) a chat's view. */
  open(chat: { id: string; title?: string }): Promise<ChatView>;
  /**
   * Create a chat on the server and open it. Without `agent`, the person picks one when
   * the server hosts several; null when they cancel the pick (nothing is created).
   */
  create(agent?: string): Promise<ChatView | null>;
  /** The path of the document the person works in, if any. */
  docPath(): string | null;
  /** A chat's open view takes its title (renamed, or read again from the server). */
  retitle(chat: { id: string; title: string }): void;
  /** Close a chat's open view (the chat was deleted). */
  close(chatId: string): void;
}

/** The token of the chat views. */
export const IChatViews = new Token<IChatViews>(
  'jupyter-agent:IChatViews',
  'The open agent chat views: open, create, the current one.'
);

export interface IChatViewsOptions {
  app: JupyterFrontEnd;
  service: IChatsService;
  ctx: IItemContext;
  /** The person's documents: what they have open, notebooks shown again, paths opened. */
  documents: IAgentDocuments;
  /** Open the Memory view (each chat's header has a button for it). */
  openMemory?: () => void;
  /** Where the last agent picked for a new chat is remembered (the browser's storage). */
  pickStore?: IPickStore | null;
}

/** The chat views of one JupyterLab. */
export class ChatViews implements IChatViews {
  constructor(private readonly options: IChatViewsOptions) {}

  readonly tracker = new WidgetTracker<MainAreaWidget<ChatView>>({
    namespace: 'jupyter-agent-chat'
  });

  get current(): ChatView | null {
    return this.tracker.currentWidget?.content ?? null;
  }

  find(chatId: string): ChatView | null {
    return this.tracker.find(w => w.content.chatId === chatId)?.content ?? null;
  }

  docPath(): string | null {
    return this.options.documents.docPath();
  }

  retitle(chat: { id: string; title: string }): void {
    const view = this.find(chat.id);
    if (view && chat.title && view.title.label !== chat.title) {
      view.title.label = chat.title;
    }
  }

  close(chatId: string): void {
    this.tracker.find(w => w.content.chatId === chatId)?.dispose();
  }

  async open(chat: { id: string; title?: string }): Promise<ChatView> {
    const { app, service, ctx, documents, openMemory } = this.options;
    const existing = this.tracker.find(w => w.content.chatId === chat.id);
    if (existing) {
      app.shell.activateById(existing.id);
      return existing.content;
    }
    const content = new ChatView({
      service,
      chatId: chat.id,
      title: chat.title || '',
      ctx,
      getView: () => documents.getView(),
      currentPath: () => documents.docPath(),
      mentionCandidates: mentionCandidates({
        docPath: () => documents.docPath(),
        cells: () => documents.cells(),
        listFolder: path => documents.listFolder(path),
        variables: path => service.api.variables(path)
      }),
      openMemory,
      newChat: () => this.create(),
      openChat: chat => this.open(chat),
      openBeside: (widget, label) => this.openBeside(chat.id, widget, label),
      refreshNotebook: path => documents.refreshNotebook(path),
      openPath: path => documents.openPath(path)
    });
    const widget = new MainAreaWidget({ content });
    widget.id = `jp-agent-chat-tab-${chat.id}`;
    widget.title.icon = agentIcon;
    widget.title.closable = true;
    content.title.changed.connect(() => {
      widget.title.label = content.title.label;
    });
    widget.title.label = content.title.label;
    await this.tracker.add(widget);
    app.shell.add(widget, 'main');
    app.shell.activateById(widget.id);
    content.focusInput();
    return content;
  }

  /** Open `widget` in the main area to the right of the chat's tab. */
  private openBeside(chatId: string, widget: Widget, label: string): void {
    const beside = new MainAreaWidget({ content: widget });
    beside.title.label = label;
    beside.title.closable = true;
    const ref = this.tracker.find(w => w.content.chatId === chatId)?.id;
    this.options.app.shell.add(beside, 'main', { mode: 'split-right', ref });
    this.options.app.shell.activateById(beside.id);
  }

  async create(agent?: string): Promise<ChatView | null> {
    const chosen = agent ?? (await this.pickAgent());
    if (chosen === null) {
      return null;
    }
    const chat = await this.options.service.createChat(undefined, chosen);
    return this.open(chat);
  }

  /**
   * The agent for a new chat: undefined (the server's default) when it hosts one agent
   * or cannot list them, the one picked, or null when the person cancelled.
   */
  private async pickAgent(): Promise<string | undefined | null> {
    let choice: AgentChoice;
    try {
      choice = new AgentChoice(await this.options.service.listAgents(), this.options.pickStore);
    } catch {
      return undefined; // a server without agents: its default answers
    }
    if (!choice.needsPick) {
      return undefined;
    }
    const labels = choice.labels;
    const result = await InputDialog.getItem({
      title: 'New chat',
      label: 'Which agent answers this chat?',
      items: labels,
      current: Math.max(0, choice.agents.findIndex(a => a.name === choice.preselected)),
      okLabel: 'Start chat'
    });
    const name = result.button.accept && result.value !== null ? choice.fromLabel(result.value) : null;
    if (name === null) {
      return null;
    }
    choice.remember(name);
    return name;
  }
}
