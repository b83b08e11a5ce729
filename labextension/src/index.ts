/**
 * The JupyterLab plugins of jupyter-agent (plugins only: logic lives in api.ts,
 * service.ts, chatviews.ts, model.ts, stream.ts and widgets/).
 *
 * - `jupyter-agent:chats` provides `IChatsService` (chats, runs' steps, status, events);
 * - `jupyter-agent:chat-views` provides `IChatViews`: one main-area chat view per chat,
 *   restored after a reload;
 * - `jupyter-agent:sidebar`: the chats sidebar;
 * - `jupyter-agent:commands`: new chat, stop, export, attach (palette, file browser);
 * - `jupyter-agent:settings`: the settings dialog;
 * - `jupyter-agent:memory`: the Memory view (command "Agent: Memory"; the sidebar and each
 *   chat's header have a button for it).
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
import { Widget } from '@lumino/widgets';

import type { IPickStore } from './agents';
import { AgentApi, IChatSummary, IView } from './api';
import { agentIcon, ChatViews, IChatViews } from './chatviews';
import { ChatsService, IChatsService } from './service';
import { ChatListPanel } from './widgets/chatlist';
import { IItemContext } from './widgets/items';
import { memoryIcon, MemoryView } from './widgets/memoryview';
import { openSettings } from './widgets/settings';

/** Command ids. */
export const CommandIds = {
  newChat: 'jupyter-agent:new-chat',
  openPanel: 'jupyter-agent:open-panel',
  openChat: 'jupyter-agent:open-chat',
  stop: 'jupyter-agent:stop',
  stopNow: 'jupyter-agent:stop-now',
  settings: 'jupyter-agent:settings',
  attach: 'jupyter-agent:attach-to-chat',
  exportChat: 'jupyter-agent:export-chat',
  memory: 'jupyter-agent:memory'
};

/** The browser's local storage (null where it is refused). */
function browserStorage(): IPickStore | null {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

/** The chats service over this server's REST API. */
const chatsPlugin: JupyterFrontEndPlugin<IChatsService> = {
  id: 'jupyter-agent:chats',
  description: 'The agent chats service: chats, run steps, status and event streams.',
  autoStart: true,
  provides: IChatsService,
  activate: (app: JupyterFrontEnd): IChatsService =>
    new ChatsService(new AgentApi(app.serviceManager.serverSettings))
};

/** The chat views, what the person has open, and the restorer of the chat tabs. */
const viewsPlugin: JupyterFrontEndPlugin<IChatViews> = {
  id: 'jupyter-agent:chat-views',
  description: 'One main-area view per agent chat.',
  autoStart: true,
  requires: [IChatsService, IRenderMimeRegistry],
  optional: [ILabShell, INotebookTracker, IEditorLanguageRegistry, ILayoutRestorer],
  provides: IChatViews,
  activate: (
    app: JupyterFrontEnd,
    service: IChatsService,
    rendermime: IRenderMimeRegistry,
    labShell: ILabShell | null,
    notebooks: INotebookTracker | null,
    languages: IEditorLanguageRegistry | null,
    restorer: ILayoutRestorer | null
  ): IChatViews => {
    // The document the person last worked in (the chat view itself takes the focus).
    let lastDoc: Widget | null = null;
    labShell?.currentChanged.connect((_, args) => {
      const w = args.newValue as any;
      if (w && w.context && typeof w.context.path === 'string') {
        lastDoc = w;
      }
    });
    const doc = (): any => (lastDoc && !lastDoc.isDisposed ? lastDoc : notebooks?.currentWidget);
    const docPath = (): string | null => doc()?.context?.path ?? null;
    const getView = (): IView | null => {
      const path = docPath();
      if (!path) {
        return null;
      }
      const view: IView = { path };
      const w = doc();
      if (w instanceof NotebookPanel) {
        view.cell = w.content.activeCellIndex;
        const cellId = w.content.activeCell?.model.id;
        if (cellId) {
          view.cell_id = cellId;
        }
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
    // A proposal applied through the contents manager changed the file, not the open
    // view: reload it from disk unless the person has unsaved changes. With real-time
    // collaboration the server edited the shared model: the view shows it already.
    const refreshNotebook = async (path: string): Promise<string | null> => {
      const panel = notebooks?.find(p => p.context.path === path);
      if (!panel || panel.isDisposed) {
        return null;
      }
      const context = panel.context;
      if (context.model.collaborative) {
        return null;
      }
      if (context.model.dirty) {
        return (
          `${path} has unsaved changes, so it was not reloaded: the edit is on disk ` +
          '(File › Reload Notebook from Disk shows it; saving first would ask which to keep).'
        );
      }
      await context.revert();
      return null;
    };
    const views = new ChatViews({
      app,
      service,
      ctx,
      getView,
      docPath,
      openMemory: () => void app.commands.execute(CommandIds.memory),
      refreshNotebook,
      pickStore: browserStorage()
    });
    app.commands.addCommand(CommandIds.openChat, {
      label: 'Agent: Open Chat',
      execute: args => views.open({ id: String(args.id), title: String(args.title ?? '') })
    });
    if (restorer) {
      void restorer.restore(views.tracker, {
        command: CommandIds.openChat,
        args: w => ({ id: w.content.chatId, title: w.content.title.label }),
        name: w => w.content.chatId
      });
    }
    return views;
  }
};

/** The left sidebar: status and chats. */
const sidebarPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-agent:sidebar',
  description: 'The agent chats sidebar.',
  autoStart: true,
  requires: [IChatsService, IChatViews],
  optional: [ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    service: IChatsService,
    views: IChatViews,
    restorer: ILayoutRestorer | null
  ): void => {
    const sidebar = new ChatListPanel({
      service,
      openChat: (chat: IChatSummary) => void views.open(chat),
      newChat: () => void views.create(),
      openSettings: () => void app.commands.execute(CommandIds.settings),
      openMemory: () => void app.commands.execute(CommandIds.memory),
      onRenamed: chat => {
        const view = views.find(chat.id);
        if (view) {
          view.title.label = chat.title;
        }
      },
      onDeleted: id => {
        views.tracker.find(w => w.content.chatId === id)?.dispose();
      },
      onRefreshed: chats => {
        for (const chat of chats) {
          const view = views.find(chat.id);
          if (view && chat.title && view.title.label !== chat.title) {
            view.title.label = chat.title;
          }
        }
      }
    });
    sidebar.title.icon = agentIcon;
    app.shell.add(sidebar, 'left', { rank: 900 });
    restorer?.add(sidebar, 'jupyter-agent-sidebar');
    void app.restored.then(() => sidebar.refresh());
    app.commands.addCommand(CommandIds.openPanel, {
      label: 'Agent: Open Chat Panel',
      execute: () => {
        app.shell.activateById(sidebar.id);
        void sidebar.refresh();
      }
    });
  }
};

/** The commands: new chat, stop, export, attach (palette and file-browser menu). */
const commandsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-agent:commands',
  description: 'The agent commands.',
  autoStart: true,
  requires: [IChatViews],
  optional: [ICommandPalette, IFileBrowserFactory],
  activate: (
    app: JupyterFrontEnd,
    views: IChatViews,
    palette: ICommandPalette | null,
    browsers: IFileBrowserFactory | null
  ): void => {
    app.commands.addCommand(CommandIds.newChat, {
      label: 'Agent: New Chat',
      caption: 'Start a new chat with the agent',
      execute: () => views.create()
    });
    app.commands.addCommand(CommandIds.stop, {
      label: 'Agent: Stop the Running Turn',
      isEnabled: () => !!views.current?.activeRunId,
      execute: () => views.current?.stop(false)
    });
    app.commands.addCommand(CommandIds.stopNow, {
      label: 'Agent: Stop the Running Turn Now (hard)',
      isEnabled: () => !!views.current?.activeRunId,
      execute: () => views.current?.stop(true)
    });
    app.commands.addCommand(CommandIds.exportChat, {
      label: 'Agent: Export Chat as Notebook',
      isEnabled: () => !!views.current,
      execute: () => views.current?.exportChat()
    });
    app.commands.addCommand(CommandIds.attach, {
      label: 'Attach to Agent Chat',
      execute: async () => {
        const browser = browsers?.tracker.currentWidget;
        const paths = browser ? [...browser.selectedItems()].map(i => i.path) : [];
        const fallback = views.docPath();
        if (paths.length === 0 && fallback) {
          paths.push(fallback);
        }
        const view =
          views.current ?? views.tracker.find(() => true)?.content ?? (await views.create());
        if (!view) {
          return; // the person cancelled the agent pick
        }
        paths.forEach(p => view.attach(p));
        const w = views.tracker.find(v => v.content === view);
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
      CommandIds.exportChat
    ]) {
      palette?.addItem({ command: id, category: 'Agent' });
    }
  }
};

/** The settings dialog (model tiers). */
const settingsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-agent:settings',
  description: 'The agent settings dialog.',
  autoStart: true,
  requires: [IChatsService],
  optional: [ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    service: IChatsService,
    palette: ICommandPalette | null
  ): void => {
    app.commands.addCommand(CommandIds.settings, {
      label: 'Agent: Settings',
      execute: async () => {
        if (await openSettings(service.api)) {
          await service.refreshStatus(); // the views and the sidebar follow its signal
          service.notifyChanged();
        }
      }
    });
    palette?.addItem({ command: CommandIds.settings, category: 'Agent' });
  }
};

/** The Memory view: one main-area tab, restored after a reload. */
const memoryPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-agent:memory',
  description: 'The agent Memory view: list, search, add, edit and delete remembered facts.',
  autoStart: true,
  requires: [IChatsService],
  optional: [ICommandPalette, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    service: IChatsService,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null
  ): void => {
    const tracker = new WidgetTracker<MainAreaWidget<MemoryView>>({
      namespace: 'jupyter-agent-memory'
    });
    app.commands.addCommand(CommandIds.memory, {
      label: 'Agent: Memory',
      caption: 'What the agent remembers across chats: list, search, add, edit, delete',
      icon: memoryIcon,
      execute: async () => {
        let widget = tracker.currentWidget;
        if (!widget || widget.isDisposed) {
          const content = new MemoryView({
            api: service.api,
            openChat: id => void app.commands.execute(CommandIds.openChat, { id })
          });
          // The agent may have saved (or forgotten) a fact in a run.
          service.chatsChanged.connect(() => content.refreshSoon(), content);
          widget = new MainAreaWidget({ content });
          widget.id = 'jp-agent-memory-tab';
          widget.title.icon = memoryIcon;
          widget.title.label = content.title.label;
          widget.title.caption = content.title.caption;
          widget.title.closable = true;
          await tracker.add(widget);
          app.shell.add(widget, 'main');
        }
        app.shell.activateById(widget.id);
        return widget;
      }
    });
    palette?.addItem({ command: CommandIds.memory, category: 'Agent' });
    if (restorer) {
      void restorer.restore(tracker, { command: CommandIds.memory, name: () => 'memory' });
    }
  }
};

export { IChatsService } from './service';
export { IChatViews } from './chatviews';

export default [
  chatsPlugin,
  viewsPlugin,
  sidebarPlugin,
  commandsPlugin,
  settingsPlugin,
  memoryPlugin
];
