/**
 * The chat commands: new chat, stop (soft and hard), export, attach, continue an exported
 * chat (palette and the file browser's context menu).
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { INotebookTracker } from '@jupyterlab/notebook';

import { CommandIds } from '../commands';
import { addImportCommands } from './imports';
import { IChatsService } from './service';
import { IChatViews } from './views';

/** Attach the file browser's selection (else the open document) to the current chat. */
async function attachSelection(
  app: JupyterFrontEnd,
  views: IChatViews,
  browsers: IFileBrowserFactory | null
): Promise<void> {
  const browser = browsers?.tracker.currentWidget;
  const paths = browser ? [...browser.selectedItems()].map(i => i.path) : [];
  const fallback = views.docPath();
  if (paths.length === 0 && fallback) {
    paths.push(fallback);
  }
  const view = views.current ?? views.tracker.find(() => true)?.content ?? (await views.create());
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

/** The commands of the chats (see the module comment). */
export const commandsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-agent:commands',
  description: 'The agent commands.',
  autoStart: true,
  requires: [IChatViews, IChatsService],
  optional: [ICommandPalette, IFileBrowserFactory, INotebookTracker],
  activate: (
    app: JupyterFrontEnd,
    views: IChatViews,
    service: IChatsService,
    palette: ICommandPalette | null,
    browsers: IFileBrowserFactory | null,
    notebooks: INotebookTracker | null
  ): void => {
    addImportCommands(app, service, views, notebooks, browsers);
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
      execute: () => attachSelection(app, views, browsers)
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
      CommandIds.importChat
    ]) {
      palette?.addItem({ command: id, category: 'Agent' });
    }
  }
};
