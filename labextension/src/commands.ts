/** The command ids of jupyter-agent (the plugins add them; the palette lists most). */
export const CommandIds = {
  newChat: 'jupyter-agent:new-chat',
  openPanel: 'jupyter-agent:open-panel',
  openChat: 'jupyter-agent:open-chat',
  stop: 'jupyter-agent:stop',
  stopNow: 'jupyter-agent:stop-now',
  settings: 'jupyter-agent:settings',
  attach: 'jupyter-agent:attach-to-chat',
  exportChat: 'jupyter-agent:export-chat',
  memory: 'jupyter-agent:memory',
  importChat: 'jupyter-agent:import-chat',
  importSelected: 'jupyter-agent:import-selected',
  evalNotebook: 'jupyter-agent:eval-notebook',
  evalSelected: 'jupyter-agent:eval-selected'
};
