/**
 * The cell actions' plugin (`cellactions.ts` says what each does): commands with keyboard
 * shortcuts, in the notebook's cell toolbar (`schema/cell-actions.json`) and its cell
 * context menu. Each opens (or reuses) the notebook's chat and sends, with the view naming
 * the cell, what the action asks.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { InputDialog } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

import { errorText } from '../api/client';
import type { IView } from '../api/types';
import { IChatsService } from '../chats/service';
import type { ChatView } from '../chats/view';
import { IChatViews } from '../chats/views';
import { CellAction, cellMessage, endsWithError, NotebookChats } from './cellactions';

const ACTIONS: { action: CellAction; label: string; keys: string[] }[] = [
  { action: 'explain', label: 'Explain this cell (agent)', keys: ['Accel Alt E'] },
  { action: 'fix', label: 'Fix this cell (agent)', keys: ['Accel Alt F'] },
  { action: 'ask', label: 'Ask the agent about this cell', keys: ['Accel Alt A'] },
  { action: 'edit', label: 'Edit this cell with the agent…', keys: ['Accel Alt K'] }
];

/** The command id of a cell action. */
export const cellCommand = (action: CellAction): string => `jupyter-agent:${action}-cell`;

function storage(): Storage | null {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}

export const cellActionsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-agent:cell-actions',
  description: 'Explain, Fix, Ask about and Edit a notebook cell with the agent.',
  autoStart: true,
  requires: [INotebookTracker, IChatViews, IChatsService],
  activate: (
    app: JupyterFrontEnd,
    notebooks: INotebookTracker,
    views: IChatViews,
    service: IChatsService
  ): void => {
    const chats = new NotebookChats(storage());

    const chatOf = async (panel: NotebookPanel): Promise<ChatView> => {
      const path = panel.context.path;
      const known = chats.get(path);
      if (known) {
        try {
          const chat = await service.api.getChat(known);
          return await views.open({ id: chat.id, title: chat.title });
        } catch {
          // deleted since: a new one below
        }
      }
      const name = path.split('/').pop() ?? path;
      const chat = await service.createChat(name.replace(/\.ipynb$/, ''));
      chats.set(path, chat.id);
      return views.open(chat);
    };

    const run = async (action: CellAction): Promise<void> => {
      const panel = notebooks.currentWidget;
      const cell = panel?.content.activeCell;
      if (!panel || !cell) {
        return;
      }
      const index = panel.content.activeCellIndex;
      let instruction = '';
      if (action === 'edit') {
        const asked = await InputDialog.getText({
          title: 'Edit this cell with the agent',
          label: `What should change in cell ${index}? The agent proposes the edit; you apply it or not.`,
          okLabel: 'Ask'
        });
        instruction = asked.button.accept ? (asked.value ?? '').trim() : '';
        if (!instruction) {
          return;
        }
      }
      const view: IView = { path: panel.context.path, cell: index, cell_id: cell.model.id };
      const chat = await chatOf(panel);
      const text = cellMessage(action, index, instruction);
      if (action === 'ask') {
        chat.draft(text);
        return;
      }
      try {
        await chat.sendText(text, view);
      } catch (err) {
        chat.draft(text);
        throw new Error(`Could not send: ${errorText(err)}`);
      }
    };

    const failing = (): boolean => {
      const cell = notebooks.currentWidget?.content.activeCell;
      const outputs = (cell?.model.toJSON() as { outputs?: { output_type?: string }[] })?.outputs;
      return endsWithError(outputs ?? []);
    };

    for (const { action, label, keys } of ACTIONS) {
      const command = cellCommand(action);
      app.commands.addCommand(command, {
        label,
        caption: label,
        isEnabled: () => notebooks.currentWidget !== null && (action !== 'fix' || failing()),
        isVisible: () => action !== 'fix' || failing(),
        execute: () => run(action)
      });
      app.commands.addKeyBinding({ command, keys, selector: '.jp-Notebook' });
      app.contextMenu.addItem({ command, selector: '.jp-Notebook .jp-Cell', rank: 30 });
    }
  }
};
