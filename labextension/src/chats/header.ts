/**
 * The header of a chat view: the demo badge, the connection's state, and the Memory and
 * Export buttons (what they do is the view's).
 */
import { Widget } from '@lumino/widgets';

import { button } from '../ui/widgets';

/** The header and the two parts the view updates (the connection line, the demo badge). */
export interface IChatHeader {
  widget: Widget;
  connection: HTMLSpanElement;
  demo: HTMLSpanElement;
}

/** Build a chat view's header (`openMemory`: the Memory button shows when given; `gauge`:
 * the context and cost gauge, `gaugeview.ts`). */
export function chatHeader(
  exportChat: () => void,
  openMemory?: () => void,
  gauge?: HTMLElement
): IChatHeader {
  const widget = new Widget();
  widget.addClass('jp-agent-chat-header');
  const connection = document.createElement('span');
  connection.className = 'jp-agent-connection';
  connection.setAttribute('role', 'status');
  const demo = document.createElement('span');
  demo.className = 'jp-agent-demo-badge';
  demo.textContent = 'Demo model — offline, no API key';
  demo.hidden = true;
  const spacer = document.createElement('span');
  spacer.className = 'jp-agent-spacer';
  widget.node.append(demo, ...(gauge ? [gauge] : []), spacer, connection);
  if (openMemory) {
    widget.node.appendChild(
      button('Memory', 'Open the agent’s memory: what it keeps across chats', () => openMemory(), 'jp-agent-open-memory')
    );
  }
  widget.node.appendChild(
    button('Export chat as notebook', 'Export this chat as a notebook', () => exportChat(), 'jp-agent-export')
  );
  return { widget, connection, demo };
}
