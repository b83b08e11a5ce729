/**
 * The plugins of the chats: the chats service (`IChatsService`), the chat views
 * (`IChatViews`, restored after a reload) and the chats sidebar.
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';

import type { IPickStore } from '../agents/agents';
import { AgentApi } from '../api/client';
import { CommandIds } from '../commands';
import { IAgentDocuments } from '../notebook/documents';
import { agentIcon } from '../ui/icons';
import { ChatsService, IChatsService } from './service';
import { ChatListPanel } from './sidebar';
import { ChatViews, IChatViews } from './views';

/** The browser's local storage (null where it is refused). */
function browserStorage(): IPickStore | null {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

/** The chats service over this server's REST API. */
export const chatsPlugin: JupyterFrontEndPlugin<IChatsService> = {
  id: 'jupyter-agent:chats',
  description: 'The agent chats service: chats, run steps, status and event streams.',
  autoStart: true,
  provides: IChatsService,
  activate: (app: JupyterFrontEnd): IChatsService =>
    new ChatsService(new AgentApi(app.serviceManager.serverSettings))
};

/** The chat views, and the restorer of the chat tabs. */
export const viewsPlugin: JupyterFrontEndPlugin<IChatViews> = {
  id: 'jupyter-agent:chat-views',
  description: 'One main-area view per agent chat.',
  autoStart: true,
  requires: [IChatsService, IRenderMimeRegistry, IAgentDocuments],
  optional: [IEditorLanguageRegistry, ILayoutRestorer],
  provides: IChatViews,
  activate: (
    app: JupyterFrontEnd,
    service: IChatsService,
    rendermime: IRenderMimeRegistry,
    documents: IAgentDocuments,
    languages: IEditorLanguageRegistry | null,
    restorer: ILayoutRestorer | null
  ): IChatViews => {
    const views = new ChatViews({
      app,
      service,
      documents,
      ctx: { rendermime, languages, insertCell: code => documents.insertCell(code) },
      openMemory: () => void app.commands.execute(CommandIds.memory),
      pickStore: browserStorage()
    });
    app.commands.addCommand(CommandIds.openChat, {
      label: 'Agent: Open Chat',
      execute: args => views.open({ id: String(args.id), title: String(args.title ?? '') })
    });
    void restorer?.restore(views.tracker, {
      command: CommandIds.openChat,
      args: w => ({ id: w.content.chatId, title: w.content.title.label }),
      name: w => w.content.chatId
    });
    return views;
  }
};

/** The left sidebar: status and chats. */
export const sidebarPlugin: JupyterFrontEndPlugin<void> = {
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
      openChat: chat => void views.open(chat),
      newChat: () => void views.create(),
      openSettings: () => void app.commands.execute(CommandIds.settings),
      openMemory: () => void app.commands.execute(CommandIds.memory),
      onRenamed: chat => views.retitle(chat),
      onDeleted: id => views.close(id),
      onRefreshed: chats => chats.forEach(chat => views.retitle(chat))
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
