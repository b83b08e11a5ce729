/** The plugin of the settings dialog (model tiers): the command "Agent: Settings". */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';

import { IChatsService } from '../chats/service';
import { CommandIds } from '../commands';
import { openSettings } from './dialog';

/** The settings dialog (model tiers). */
export const settingsPlugin: JupyterFrontEndPlugin<void> = {
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
