/**
 * The JupyterLab plugins of jupyter-agent, one concern per folder (the server's names):
 *
 * - `jupyter-agent:chats` (chats/): provides `IChatsService` (chats, runs' steps,
 *   status, events);
 * - `jupyter-agent:documents` (notebook/): provides `IAgentDocuments` (what the person
 *   has open, cells inserted, notebooks shown again after a proposal);
 * - `jupyter-agent:chat-views` (chats/): provides `IChatViews`: one main-area chat view
 *   per chat, restored after a reload;
 * - `jupyter-agent:sidebar` (chats/): the chats sidebar;
 * - `jupyter-agent:commands` (chats/): new chat, stop, export, attach;
 * - `jupyter-agent:settings` (settings/): the settings dialog;
 * - `jupyter-agent:memory` (memory/): the Memory view;
 * - `jupyter-agent:cell-actions` (notebook/): Explain, Fix, Ask about and Edit a cell;
 * - `jupyter-agent:inline-completion` (complete/): ghost text from the agent's model;
 * - `jupyter-agent:evals` (evals/): evaluate a notebook's (or a folder's) cases.
 *
 * Shared base: `api/` (the REST client), `ui/` (small widgets, icons), `events.ts`
 * (generated from the server's definitions), `commands.ts` (command ids).
 */
import type { JupyterFrontEndPlugin } from '@jupyterlab/application';

import { commandsPlugin } from './chats/commands';
import { inlineCompletionPlugin } from './complete/plugin';
import { evalsPlugin } from './evals/plugin';
import { chatsPlugin, sidebarPlugin, viewsPlugin } from './chats/plugins';
import { memoryPlugin } from './memory/plugin';
import { cellActionsPlugin } from './notebook/cellplugin';
import { documentsPlugin } from './notebook/plugin';
import { settingsPlugin } from './settings/plugin';

export { IChatsService } from './chats/service';
export { IChatViews } from './chats/views';
export { CommandIds } from './commands';
export { IAgentDocuments } from './notebook/documents';

const plugins: JupyterFrontEndPlugin<any>[] = [
  chatsPlugin,
  documentsPlugin,
  viewsPlugin,
  sidebarPlugin,
  commandsPlugin,
  settingsPlugin,
  memoryPlugin,
  cellActionsPlugin,
  inlineCompletionPlugin,
  evalsPlugin
];

export default plugins;
