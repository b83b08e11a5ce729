/**
 * The plugin `jupyter-agent:evals`: "Agent: Evaluate this notebook's cases" (the palette,
 * for the current notebook) and "Evaluate with the agent" (the file browser's menu on a
 * notebook or a folder). It runs the suite's cases (`POST agent/evals`), says how far it
 * got in one notification, and offers the report notebook when done.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette, Notification } from '@jupyterlab/apputils';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { INotebookTracker } from '@jupyterlab/notebook';

import { IChatsService } from '../chats/service';
import { CommandIds } from '../commands';
import { progressLine, watchEval } from './watch';

/** Run the eval of `suite`, following it in one notification. */
async function evaluate(app: JupyterFrontEnd, service: IChatsService, suite: string): Promise<void> {
  const id = Notification.emit(`Eval of ${suite}: starting`, 'in-progress', { autoClose: false });
  try {
    const state = await watchEval(service.api, suite, s => {
      if (s.status !== 'done') {
        Notification.update({ id, message: progressLine(s) });
      }
    });
    const report = state.report;
    Notification.update({
      id,
      message: progressLine(state),
      type: state.passed === state.total && !state.error ? 'success' : 'warning',
      autoClose: false,
      actions: report
        ? [
            {
              label: 'Open the report',
              callback: () => void app.commands.execute('docmanager:open', { path: report })
            }
          ]
        : []
    });
  } catch (err) {
    const said = err instanceof Error ? err.message : String(err);
    Notification.update({ id, message: `Eval of ${suite}: ${said}`, type: 'error', autoClose: false });
  }
}

/** The evaluate commands. */
export const evalsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-agent:evals',
  description: "Run a notebook's cases against the agent and open the report.",
  autoStart: true,
  requires: [IChatsService],
  optional: [ICommandPalette, INotebookTracker, IFileBrowserFactory],
  activate: (
    app: JupyterFrontEnd,
    service: IChatsService,
    palette: ICommandPalette | null,
    notebooks: INotebookTracker | null,
    browsers: IFileBrowserFactory | null
  ): void => {
    app.commands.addCommand(CommandIds.evalNotebook, {
      label: "Agent: Evaluate this notebook's cases",
      caption: 'Each markdown cell followed by a code cell is a case: the message, then its checks',
      isEnabled: () => !!notebooks?.currentWidget,
      execute: async () => {
        const panel = notebooks?.currentWidget;
        if (panel) {
          await panel.context.save();
          await evaluate(app, service, panel.context.path);
        }
      }
    });
    palette?.addItem({ command: CommandIds.evalNotebook, category: 'Agent' });
    app.commands.addCommand(CommandIds.evalSelected, {
      // Shown by the menu's selector (a folder or a notebook): the selection is read
      // when it runs (the right-click selects the item as the menu opens).
      label: 'Evaluate with the Agent',
      execute: async () => {
        const item = browsers?.tracker.currentWidget?.selectedItems().next();
        if (item && !item.done) {
          await evaluate(app, service, item.value.path);
        }
      }
    });
    // One item per selector: a context menu's selector may not hold a comma.
    for (const selector of [
      '.jp-DirListing-item[data-isdir="true"]',
      '.jp-DirListing-item[data-file-type="notebook"]'
    ]) {
      app.contextMenu.addItem({ command: CommandIds.evalSelected, selector, rank: 60 });
    }
  }
};
