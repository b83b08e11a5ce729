/** The inline completion plugin (`provider.ts`): the agent's provider, registered with
 * JupyterLab's completion provider manager. */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICompletionProviderManager } from '@jupyterlab/completer';

import { AgentInlineProvider } from './provider';

export const inlineCompletionPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-agent:inline-completion',
  description: 'Inline completion (ghost text) from the agent’s completion model.',
  autoStart: true,
  requires: [ICompletionProviderManager],
  activate: (app: JupyterFrontEnd, manager: ICompletionProviderManager): void => {
    manager.registerInlineProvider(new AgentInlineProvider(app.serviceManager.serverSettings));
  }
};
