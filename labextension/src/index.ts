/**
 * The JupyterLab plugins of jupyter-agent (plugins only: logic lives in api.ts,
 * model.ts and widgets/).
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';

import { fetchStatus } from './api';

/** The plugin id, also the settings and command namespace of the extension. */
const PLUGIN_ID = 'jupyter-agent:plugin';

/**
 * Ask the server extension for its status once on activation and log it to the
 * console; nothing is shown to the person yet (the panel comes with widgets/).
 */
const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'An AI agent that lives inside Jupyter.',
  autoStart: true,
  activate: (app: JupyterFrontEnd): void => {
    const settings = app.serviceManager.serverSettings;
    fetchStatus(settings)
      .then(status => {
        console.log(
          `jupyter-agent ${status.version}: ${
            status.demo ? 'demo model (no tier is ready)' : 'ready'
          }`
        );
      })
      .catch(reason => {
        console.warn('jupyter-agent: the server extension did not answer', reason);
      });
  }
};

export default [plugin];
