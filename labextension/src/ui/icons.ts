/** The panel's icons (JupyterLab `LabIcon`s, themed like its own). */
import { LabIcon } from '@jupyterlab/ui-components';

/** The agent's icon (sidebar and chat tabs). */
export const agentIcon = new LabIcon({
  name: 'jupyter-agent:icon',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="16"><path class="jp-icon3" fill="#616161" d="M12 2a2 2 0 0 1 2 2c0 .74-.4 1.39-1 1.73V7h4a3 3 0 0 1 3 3v8a3 3 0 0 1-3 3H7a3 3 0 0 1-3-3v-8a3 3 0 0 1 3-3h4V5.73A2 2 0 0 1 12 2zM9 12a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3zm6 0a1.5 1.5 0 1 0 0 3 1.5 1.5 0 0 0 0-3z"/></svg>'
});

/** The Memory view's icon (a bookmark: kept across chats). */
export const memoryIcon = new LabIcon({
  name: 'jupyter-agent:memory',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="16"><path class="jp-icon3" fill="#616161" d="M6 3h12a1 1 0 0 1 1 1v17l-7-4-7 4V4a1 1 0 0 1 1-1zm2 4v2h8V7H8zm0 4v2h5v-2H8z"/></svg>'
});
