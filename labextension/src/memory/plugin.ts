/**
 * The plugin of the Memory view: one main-area tab (command "Agent: Memory"; the sidebar
 * and each chat's header have a button for it), restored after a reload.
 */
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, MainAreaWidget, WidgetTracker } from '@jupyterlab/apputils';

import { IChatsService } from '../chats/service';
import { CommandIds } from '../commands';
import { memoryIcon } from '../ui/icons';
import { MemoryView } from './view';

/** The Memory tab, made on first use; it reads the facts again after a chat's activity. */
function memoryTab(app: JupyterFrontEnd, service: IChatsService): MainAreaWidget<MemoryView> {
  const content = new MemoryView({
    api: service.api,
    openChat: id => void app.commands.execute(CommandIds.openChat, { id })
  });
  // The agent may have saved (or forgotten) a fact in a run.
  service.chatsChanged.connect(() => content.refreshSoon(), content);
  const widget = new MainAreaWidget({ content });
  widget.id = 'jp-agent-memory-tab';
  widget.title.icon = memoryIcon;
  widget.title.label = content.title.label;
  widget.title.caption = content.title.caption;
  widget.title.closable = true;
  return widget;
}

/** The Memory view: one main-area tab, restored after a reload. */
export const memoryPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-agent:memory',
  description: 'The agent Memory view: list, search, add, edit and delete remembered facts.',
  autoStart: true,
  requires: [IChatsService],
  optional: [ICommandPalette, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    service: IChatsService,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null
  ): void => {
    const tracker = new WidgetTracker<MainAreaWidget<MemoryView>>({
      namespace: 'jupyter-agent-memory'
    });
    app.commands.addCommand(CommandIds.memory, {
      label: 'Agent: Memory',
      caption: 'What the agent remembers across chats: list, search, add, edit, delete',
      icon: memoryIcon,
      execute: async () => {
        let widget = tracker.currentWidget;
        if (!widget || widget.isDisposed) {
          widget = memoryTab(app, service);
          await tracker.add(widget);
          app.shell.add(widget, 'main');
        }
        app.shell.activateById(widget.id);
        return widget;
      }
    });
    palette?.addItem({ command: CommandIds.memory, category: 'Agent' });
    void restorer?.restore(tracker, { command: CommandIds.memory, name: () => 'memory' });
  }
};
