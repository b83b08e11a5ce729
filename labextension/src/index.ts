/**
 * The JupyterLab plugins of jupyter-agent (plugins only: logic lives in api.ts,
 * model.ts, stream.ts and widgets/).
 *
 * One plugin: the chats sidebar, one main-area chat view per chat (restored after a
 * reload), the settings dialog, and the commands (palette, file-browser context menu).
 */
import {
  ILabShell,
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget, WidgetTracker } from '@jupyterlab/apputils';
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { INotebookTracker, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import { AgentApi, IChatSummary, IView } from './api';
import { ChatListPanel } from './widgets/chatlist';
import { ChatView } from './widgets/chatview';
import { IItemContext } from './widgets/items';
import { openSettings } from './widgets/settings';

/** The plugin id, also the settings and command namespace of the extension. */
const PLUGIN_ID = 'jupyter-agent:plugin';

/** Command ids. */
export const CommandIds = {
  newChat: 'jupyter-agent:new-chat',
  openPanel: 'jupyter-agent:open-panel',
  openChat: 'jupyter-agent:open-chat',
  stop: 'jupyter-agent:stop',
  stopNow: 'jupyter-agent:stop-now',
  settings: 'jupyter-agent:settings',
  attach: 'jupyter-agent:attach-to-chat',
  exportChat: 'jupyter-agent:export-chat'
};

const agentIcon = new LabIcon({
  name: 'jupyter-agent:icon',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="16"><path class="jp-icon3" fill="#616161" d="M12 2a2 2 0 0 1 2 2c0 .74-.4 1.39-1 1.73V7h4a3 3 0 0 1 3 3v8a3 3 0 0 1-3 3H7a3 3 0 0 1-3-3v-8a3 3 0 0 1 3-3h4V5.73A2 2 0 0 1 12 2zM9 12a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3zm6 0a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3z"/></svg>'
});

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'An AI agent that lives inside Jupyter: the chat panel.',
  autoStart: true,
  requires: [IRenderMimeRegistry],
  optional: [
    ILabShell,
    INotebookTracker,
    IEditorLanguageRegistry,
    ICommandPalette,
    ILayoutRestorer,
    IFileBrowserFactory
  ],
  activate: (
    app: JupyterFrontEnd,
    rendermime: IRenderMimeRegistry,
    labShell: ILabShell | null,
    notebooks: INotebookTracker | null,
    languages: IEditorLanguageRegistry | null,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null,
    browsers: IFileBrowserFactory | null
  ): void => {
    const api = new AgentApi(app.serviceManager.serverSettings);
    const tracker = new WidgetTracker<MainAreaWidget<ChatView>>({
      namespace: 'jupyter-agent-chat'
    });

    // The document the person last worked in (the chat view itself takes the focus).
    let lastDoc: Widget | null = null;
    labShell?.currentChanged.connect((_, args) => {
      const w = args.newValue as any;
      if (w && w.context && typeof w.context.path === 'string') {
        lastDoc = w;
      }
    });
    const docPath = (): string | null => {
      const w = (lastDoc && !lastDoc.isDisposed ? lastDoc : notebooks?.currentWidget) as any;
      return w?.context?.path ?? null;
    };
    const getView = (): IView | null => {
      const path = docPath();
      if (!path) {
        return null;
      }
      const view: IView = { path };
      const w = (lastDoc && !lastDoc.isDisposed ? lastDoc : notebooks?.currentWidget) as any;
      if (w instanceof NotebookPanel) {
        view.cell = w.content.activeCellIndex;
        const editor = w.content.activeCell?.editor;
        if (editor) {
          const sel = editor.getSelection();
          const from = editor.getOffsetAt(sel.start);
          const to = editor.getOffsetAt(sel.end);
          if (from !== to) {
            view.selection = editor.model.sharedModel
              .getSource()
              .slice(Math.min(from, to), Math.max(from, to));
          }
        }
      }
      return view;
    };

    const ctx: IItemContext = {
      rendermime,
      languages,
      insertCell: (code: string): boolean => {
        const panel = notebooks?.currentWidget;
        if (!panel) {
          void app.commands.execute('apputils:notify', {
            message: 'Open a notebook to insert the cell into.',
            type: 'warning',
            options: { autoClose: 4000 }
          });
          return false;
        }
        NotebookActions.insertBelow(panel.content);
        panel.content.activeCell?.model.sharedModel.setSource(code);
        app.shell.activateById(panel.id);
        return true;
      }
    };

    const openPath = async (path: string): Promise<void> => {
      await app.commands.execute('docmanager:open', {
        path,
        factory: path.endsWith('.ipynb') ? 'Notebook' : undefined
      });
    };

    let sidebar: ChatListPanel;
    const refreshList = (): void => {
      void sidebar.refresh();
    };

    const openChat = async (chat: { id: string; title?: string }): Promise<ChatView> => {
      const existing = tracker.find(w => w.content.chatId === chat.id);
      if (existing) {
        app.shell.activateById(existing.id);
        return existing.content;
      }
      const content = new ChatView({
        api,
        chatId: chat.id,
        title: chat.title || '',
        ctx,
        getView,
        currentPath: docPath,
        openPath,
        status: () => sidebar.status,
        onChanged: refreshList
      });
      const widget = new MainAreaWidget({ content });
      widget.id = `jp-agent-chat-tab-${chat.id}`;
      widget.title.icon = agentIcon;
      widget.title.closable = true;
      content.title.changed.connect(() => {
        widget.title.label = content.title.label;
      });
      widget.title.label = content.title.label;
      await tracker.add(widget);
      app.shell.add(widget, 'main');
      app.shell.activateById(widget.id);
      content.focusInput();
      return content;
    };

    const newChat = async (): Promise<ChatView> => {
      const chat = await api.createChat();
      refreshList();
      return openChat(chat);
    };

    const currentChat = (): ChatView | null => {
      const w = tracker.currentWidget;
      return w ? w.content : null;
    };

    sidebar = new ChatListPanel({
      api,
      openChat: (chat: IChatSummary) => void openChat(chat),
      newChat: () => void newChat(),
      openSettings: () => void app.commands.execute(CommandIds.settings),
      onRenamed: chat => {
        const w = tracker.find(v => v.content.chatId === chat.id);
        if (w) {
          w.content.title.label = chat.title;
        }
      },
      onDeleted: id => {
        tracker.find(v => v.content.chatId === id)?.dispose();
      },
      onStatus: () => tracker.forEach(w => w.content.statusChanged()),
      onRefreshed: chats => {
        for (const chat of chats) {
          const w = tracker.find(v => v.content.chatId === chat.id);
          if (w && chat.title && w.content.title.label !== chat.title) {
            w.content.title.label = chat.title;
          }
        }
      }
    });
    sidebar.title.icon = agentIcon;
    app.shell.add(sidebar, 'left', { rank: 900 });
    restorer?.add(sidebar, 'jupyter-agent-sidebar');
    void app.restored.then(() => sidebar.refresh());

    app.commands.addCommand(CommandIds.newChat, {
      label: 'Agent: New Chat',
      caption: 'Start a new chat with the agent',
      execute: () => newChat()
    });
    app.commands.addCommand(CommandIds.openPanel, {
      label: 'Agent: Open Chat Panel',
      execute: () => {
        app.shell.activateById(sidebar.id);
        refreshList();
      }
    });
    app.commands.addCommand(CommandIds.openChat, {
      label: 'Agent: Open Chat',
      execute: args => openChat({ id: String(args.id), title: String(args.title ?? '') })
    });
    app.commands.addCommand(CommandIds.stop, {
      label: 'Agent: Stop the Running Turn',
      isEnabled: () => !!currentChat()?.activeRunId,
      execute: () => currentChat()?.stop(false)
    });
    app.commands.addCommand(CommandIds.stopNow, {
      label: 'Agent: Stop the Running Turn Now (hard)',
      isEnabled: () => !!currentChat()?.activeRunId,
      execute: () => currentChat()?.stop(true)
    });
    app.commands.addCommand(CommandIds.exportChat, {
      label: 'Agent: Export Chat as Notebook',
      isEnabled: () => !!currentChat(),
      execute: () => currentChat()?.exportChat()
    });
    app.commands.addCommand(CommandIds.settings, {
      label: 'Agent: Settings',
      execute: async () => {
        if (await openSettings(api)) {
          await sidebar.refresh();
          tracker.forEach(w => w.content.statusChanged());
        }
      }
    });
    app.commands.addCommand(CommandIds.attach, {
      label: 'Attach to Agent Chat',
      execute: async () => {
        const browser = browsers?.tracker.currentWidget;
        const paths = browser ? [...browser.selectedItems()].map(i => i.path) : [];
        const fallback = docPath();
        if (paths.length === 0 && fallback) {
          paths.push(fallback);
        }
        const view = currentChat() ?? tracker.find(() => true)?.content ?? (await newChat());
        paths.forEach(p => view.attach(p));
        const w = tracker.find(v => v.content === view);
        if (w) {
          app.shell.activateById(w.id);
        }
        view.focusInput();
      }
    });
    app.contextMenu.addItem({
      command: CommandIds.attach,
      selector: '.jp-DirListing-item[data-isdir="false"]',
      rank: 20
    });
    for (const id of [
      CommandIds.newChat,
      CommandIds.openPanel,
      CommandIds.stop,
      CommandIds.stopNow,
      CommandIds.exportChat,
      CommandIds.settings
    ]) {
      palette?.addItem({ command: id, category: 'Agent' });
    }

    if (restorer) {
      void restorer.restore(tracker, {
        command: CommandIds.openChat,
        args: w => ({ id: w.content.chatId, title: w.content.title.label }),
        name: w => w.content.chatId
      });
    }
  }
};

export default [plugin];
