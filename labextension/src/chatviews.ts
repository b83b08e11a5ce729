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
import { LabIcon } from '@jupyterlab/ui-components';
import { Token } from '@lumino/coreutils';

import { AgentChoice, IPickStore } from './agents';
import type { IView } from './api';
import type { IChatsService } from './service';
import { ChatView } from './widgets/chatview';
import type { IItemContext } from './widgets/items';

/** The agent's icon (sidebar and chat tabs). */
export const agentIcon = new LabIcon({
  name: 'jupyter-agent:icon',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="16"><path class="jp-icon3" fill="#616161" d="M12 2a2 2 0 0 1 2 2c0 .74-.4 1.39-1 1.73V7h4a3 3 0 0 1 3 3v8a3 3 0 0 1-3 3H7a3 3 0 0 1-3-3v-8a3 3 0 0 1 3-3h4V5.73A2 2 0 0 1 12 2zM9 12a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3zm6 0a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3z"/></svg>'
});

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
  getView: () => IView | null;
  docPath: () => string | null;
  /** Open the Memory view (each chat's header has a button for it). */
  openMemory?: () => void;
  /** Show a proposal's change in the open notebook (see `IChatViewOptions`). */
  refreshNotebook?: (path: string) => Promise<string | null>;
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
    return this.options.docPath();
  }

  async open(chat: { id: string; title?: string }): Promise<ChatView> {
    const { app, service, ctx, getView, docPath, openMemory, refreshNotebook } = this.options;
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
      getView,
      currentPath: docPath,
      openMemory,
      refreshNotebook,
      openPath: async (path: string) => {
        await app.commands.execute('docmanager:open', {
          path,
          factory: path.endsWith('.ipynb') ? 'Notebook' : undefined
        });
      }
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
