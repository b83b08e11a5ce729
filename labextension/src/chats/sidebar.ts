/**
 * The left sidebar: the server's status (the demo label, a first-run note saying what
 * to configure, the agent's version), and the chats, newest first (open, rename, delete, new; a chat's agent
 * is named when it is not the default one). It follows the
 * chats service: the list is read again when `chatsChanged` fires.
 */
import { Dialog, InputDialog, showDialog } from '@jupyterlab/apputils';
import { deleteIcon, editIcon, settingsIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import { chatAgentLabel } from '../agents/agents';
import type { IAgentStatus, IChatSummary } from '../api/types';
import { unreadySummary } from '../settings/tierchoices';
import { memoryIcon } from '../ui/icons';
import { button } from '../ui/widgets';
import type { IChatsService } from './service';

export interface IChatListOptions {
  service: IChatsService;
  openChat: (chat: IChatSummary) => void;
  newChat: () => void;
  openSettings: () => void;
  /** Open the Memory view (the header's button shows when given). */
  openMemory?: () => void;
  /** A chat was renamed or deleted (open views follow). */
  onRenamed: (chat: IChatSummary) => void;
  onDeleted: (chatId: string) => void;
  /** The list was re-read (open views take the server's titles). */
  onRefreshed?: (chats: IChatSummary[]) => void;
}

export class ChatListPanel extends Widget {
  constructor(private readonly options: IChatListOptions) {
    super();
    this.id = 'jp-agent-sidebar';
    this.addClass('jp-agent-sidebar');
    this.title.caption = 'Agent chats';

    const head = document.createElement('div');
    head.className = 'jp-agent-sidebar-header';
    const h = document.createElement('h2');
    h.textContent = 'Agent';
    head.append(
      h,
      button('+ New chat', 'Start a new chat with the agent', () => options.newChat(), 'jp-agent-new-chat jp-mod-accept')
    );
    const openMemory = options.openMemory;
    if (openMemory) {
      head.appendChild(
        button('Memory', 'Open the agent’s memory: what it keeps across chats', () => openMemory(), 'jp-agent-memory-button', memoryIcon)
      );
    }
    head.appendChild(
      button('Settings', 'Agent settings: model tiers', () => options.openSettings(), 'jp-agent-settings-button', settingsIcon)
    );
    this.statusBox = document.createElement('div');
    this.statusBox.className = 'jp-agent-status';
    this.statusBox.setAttribute('role', 'status');
    this.list = document.createElement('ul');
    this.list.className = 'jp-agent-chat-list';
    this.list.setAttribute('aria-label', 'Agent chats, newest first');
    this.node.append(head, this.statusBox, this.list);
    options.service.chatsChanged.connect(() => void this.refresh(), this);
  }

  /** Re-read the status and the chats from the server. */
  async refresh(): Promise<void> {
    const service = this.options.service;
    const [status, chats] = await Promise.allSettled([service.refreshStatus(), service.listChats()]);
    if (status.status === 'fulfilled' && status.value) {
      this.renderStatus(status.value);
    } else {
      this.statusBox.textContent = 'The agent server extension does not answer.';
    }
    if (chats.status === 'fulfilled') {
      this.chats = [...chats.value].sort((a, b) =>
        (b.updated || b.created || '').localeCompare(a.updated || a.created || '')
      );
      this.renderList();
      this.options.onRefreshed?.(this.chats);
    }
  }

  private renderStatus(status: IAgentStatus): void {
    const box = this.statusBox;
    box.textContent = '';
    if (status.demo) {
      const badge = document.createElement('div');
      badge.className = 'jp-agent-demo-badge';
      badge.textContent = 'Demo model — offline, no API key';
      const help = document.createElement('p');
      help.className = 'jp-agent-first-run';
      const unready = unreadySummary(status.tiers || {});
      help.textContent =
        'No model tier can run, so a scripted demo model answers: it shows the whole flow ' +
        '(progress, cells with real outputs, a reply, a trace) without any key. To use a ' +
        'real model, put its API key in the server’s environment (for example ' +
        'ANTHROPIC_API_KEY) and restart, or choose a provider and key reference in Settings.' +
        (unready ? ` Not ready: ${unready}.` : '');
      box.append(badge, help, button('Open settings', 'Open the agent settings', () => this.options.openSettings(), 'jp-agent-open-settings'));
    } else {
      const tiers = Object.entries(status.tiers || {})
        .map(([name, t]) => `${name}: ${t.model}${t.ready ? '' : ` (not ready: ${t.reason || 'unknown'})`}`)
        .join(' · ');
      box.textContent = tiers;
    }
    // The about line: which release of the agent this server runs (`GET agent/status`).
    if (status.version) {
      const about = document.createElement('p');
      about.className = 'jp-agent-version';
      about.textContent = `jupyter-agent ${status.version}`;
      box.appendChild(about);
    }
  }

  private renderList(): void {
    this.list.textContent = '';
    if (this.chats.length === 0) {
      const li = document.createElement('li');
      li.className = 'jp-agent-chat-list-empty';
      li.textContent = 'No chats yet.';
      this.list.appendChild(li);
    }
    for (const chat of this.chats) {
      const li = document.createElement('li');
      li.className = 'jp-agent-chat-item';
      li.dataset.chatId = chat.id;
      const open = button(chat.title || 'Untitled chat', `Open the chat ${chat.title || chat.id}`, () => this.options.openChat(chat), 'jp-agent-chat-open');
      if (chat.active_run_id) {
        open.classList.add('jp-mod-running');
      }
      const when = document.createElement('span');
      when.className = 'jp-agent-chat-when';
      when.textContent = (chat.updated || chat.created || '').replace('T', ' ').slice(0, 16);
      open.appendChild(when);
      const agent = chatAgentLabel(chat);
      if (agent) {
        const badge = document.createElement('span');
        badge.className = 'jp-agent-chat-agent';
        badge.textContent = agent;
        badge.title = `This chat talks to the agent ${agent}`;
        open.appendChild(badge);
      }
      li.append(
        open,
        button('Rename', `Rename the chat ${chat.title}`, () => void this.rename(chat), 'jp-agent-chat-rename', editIcon),
        button('Delete', `Delete the chat ${chat.title}`, () => void this.remove(chat), 'jp-agent-chat-delete', deleteIcon)
      );
      this.list.appendChild(li);
    }
  }

  private async rename(chat: IChatSummary): Promise<void> {
    const result = await InputDialog.getText({ title: 'Rename chat', text: chat.title });
    if (!result.button.accept || !result.value) {
      return;
    }
    const renamed = await this.options.service.renameChat(chat.id, result.value);
    this.options.onRenamed(renamed);
  }

  private async remove(chat: IChatSummary): Promise<void> {
    const result = await showDialog({
      title: 'Delete chat',
      body: `Delete “${chat.title || chat.id}” and its turns?`,
      buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Delete' })]
    });
    if (!result.button.accept) {
      return;
    }
    await this.options.service.deleteChat(chat.id);
    this.options.onDeleted(chat.id);
  }

  private chats: IChatSummary[] = [];
  private readonly statusBox: HTMLDivElement;
  private readonly list: HTMLUListElement;
}
