/**
 * Continue an exported chat: "Agent: Continue This Exported Chat" (the palette, on the
 * open notebook) and "Continue as an Agent Chat" (the file browser's menu on a notebook).
 * The notebook's JSON goes to `POST agent/chats/import`; the new chat opens. A notebook
 * that is no export is refused by the server, and the notification says so.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { INotebookTracker } from '@jupyterlab/notebook';

import { CommandIds } from '../commands';
import { isExport } from './exported';
import { IChatsService } from './service';
import { IChatViews } from './views';

async function importNotebook(
  service: IChatsService,
  views: IChatViews,
  notebook: unknown,
  path: string
): Promise<void> {
  try {
    const chat = await service.api.importChat(notebook);
    service.notifyChanged();
    await views.open(chat);
  } catch (err) {
    const said = err instanceof Error ? err.message : String(err);
    Notification.error(`Could not continue ${path} as a chat: ${said}`, { autoClose: 8000 });
  }
}

/** Add the two commands (see the module comment). */
export function addImportCommands(
  app: JupyterFrontEnd,
  service: IChatsService,
  views: IChatViews,
  notebooks: INotebookTracker | null,
  browsers: IFileBrowserFactory | null
): void {
  app.commands.addCommand(CommandIds.importChat, {
    label: 'Agent: Continue This Exported Chat',
    caption: 'A new chat whose history is this exported chat: go on with the conversation',
    isEnabled: () => isExport(notebooks?.currentWidget?.model?.metadata),
    execute: async () => {
      const panel = notebooks?.currentWidget;
      if (panel?.model) {
        await importNotebook(service, views, panel.model.toJSON(), panel.context.path);
      }
    }
  });
  app.commands.addCommand(CommandIds.importSelected, {
    label: 'Continue as an Agent Chat',
    execute: async () => {
      const item = browsers?.tracker.currentWidget?.selectedItems().next();
      if (item && !item.done) {
        const file = await app.serviceManager.contents.get(item.value.path, { content: true });
        await importNotebook(service, views, file.content, item.value.path);
      }
    }
  });
  app.contextMenu.addItem({
    command: CommandIds.importSelected,
    selector: '.jp-DirListing-item[data-file-type="notebook"]',
    rank: 61
  });
}
