/**
 * The composer of a chat view: the message box (Enter sends, Shift+Enter breaks the
 * line), the attachments (contents paths, each removable), Attach / Stop / Send (Steer
 * while a run goes; Stop, then Stop now), the line where errors show and the one where
 * notes show (what `/help` and `/model` answer), and the slash commands' popup (`slash.ts`:
 * typing `/` lists the commands; Up/Down pick, Tab completes, Enter completes or, on a
 * whole command name, runs it; Escape closes). The same popup lists what `@` can mention
 * (`mentions.ts`: files, the open notebook's cells, its kernel's variables); Tab or Enter
 * puts the picked one in the text (a file is attached, a folder lists its entries).
 */
import { linkIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import { button } from '../ui/widgets';
import {
  applyMention,
  type IMention,
  type IMentionItem,
  keptMentions,
  mentionAt,
  mentionToken
} from './mentions';
import { type ISlashCommand, slashMatches } from './slash';

/** What the composer asks of its chat view. */
export interface IComposerOptions {
  /** Send the box's text and attachments. */
  send: () => void;
  /** Break the run in progress (soft first, then hard). */
  stop: () => void;
  /** The path of the document the person has open, or null. */
  currentPath: () => string | null;
  /** What an `@` query can mention, best first (none given: `@` lists nothing). */
  mentionCandidates?: (query: string) => Promise<IMentionItem[]>;
}

/** A message taken from the composer. */
export interface IDraft {
  text: string;
  attachments: string[];
  /** The cells and variables it mentions (their tokens still in the text). */
  mentions: IMention[];
}

/** One line of the popup: a slash command, or something `@` can mention. */
type PopupItem = { slash: ISlashCommand } | { mention: IMentionItem };

/** The composer (see the module comment). */
export class Composer extends Widget {
  constructor(options: IComposerOptions) {
    super();
    this.addClass('jp-agent-composer');

    this.stopping = document.createElement('div');
    this.stopping.className = 'jp-agent-stopping';
    this.stopping.setAttribute('role', 'status');
    this.stopping.hidden = true;

    this.error = document.createElement('div');
    this.error.className = 'jp-agent-error';
    this.error.setAttribute('role', 'alert');
    this.error.hidden = true;

    this.attachList = document.createElement('div');
    this.attachList.className = 'jp-agent-attachments';

    this.input = document.createElement('textarea');
    this.input.className = 'jp-agent-input';
    this.input.rows = 3;
    this.input.setAttribute('aria-label', 'Message to the agent');
    this.note = document.createElement('div');
    this.note.className = 'jp-agent-note';
    this.note.setAttribute('role', 'status');
    this.note.hidden = true;

    this.popup = document.createElement('div');
    this.popup.className = 'jp-agent-slash';
    this.popup.setAttribute('role', 'listbox');
    this.popup.setAttribute('aria-label', 'Commands');
    this.popup.hidden = true;

    this.input.addEventListener('keydown', ev => {
      if (ev.isComposing) {
        return;
      }
      if (!this.popup.hidden && this.onPopupKey(ev)) {
        ev.preventDefault();
        ev.stopPropagation();
        return;
      }
      if (ev.key === 'Enter' && !ev.shiftKey) {
        ev.preventDefault();
        ev.stopPropagation();
        options.send();
      }
    });
    this.input.addEventListener('input', () => {
      this.error.hidden = true;
      this.note.hidden = true;
      this.renderPopup();
    });
    this.candidates = options.mentionCandidates ?? null;

    const row = document.createElement('div');
    row.className = 'jp-agent-composer-buttons';
    const clip = button('Attach', 'Attach the open document', () => {
      const path = options.currentPath();
      if (path) {
        this.attach(path);
      } else {
        this.showError('No document is open to attach.');
      }
    }, 'jp-agent-attach', linkIcon);
    this.sendButton = button('Send', 'Send (Enter)', () => options.send(), 'jp-agent-send jp-mod-accept');
    this.stopButton = button('Stop', 'Stop the run', () => options.stop(), 'jp-agent-stop jp-mod-warn');
    this.stopButton.hidden = true;
    row.append(clip, this.stopButton, this.sendButton);
    this.node.append(
      this.stopping,
      this.error,
      this.note,
      this.attachList,
      this.popup,
      this.input,
      row
    );
  }

  /** The box's text as written (nothing taken). */
  get text(): string {
    return this.input.value;
  }

  /** Empty the box (a command ran); the attachments stay. */
  clearText(): void {
    this.input.value = '';
    this.renderPopup();
  }

  /** Show a note above the box (what a command answered); it hides when the person types. */
  showNote(text: string): void {
    this.note.textContent = text;
    this.note.hidden = false;
  }

  /** Add a contents path to the message being written. */
  attach(path: string): void {
    if (path && !this.attachments.includes(path)) {
      this.attachments.push(path);
      this.renderAttachments();
    }
  }

  /** Focus the message box. */
  focusInput(): void {
    this.input.focus();
  }

  /** Take the message written (the box and attachments empty), or null when there is none. */
  take(): IDraft | null {
    const text = this.input.value.trim();
    if (!text && this.attachments.length === 0) {
      return null;
    }
    const draft = { text, attachments: [...this.attachments], mentions: keptMentions(text, this.mentions) };
    this.input.value = '';
    this.popup.hidden = true;
    this.attachments = [];
    this.mentions = [];
    this.renderAttachments();
    return draft;
  }

  /** Give back a message that could not be sent: its text, and its attachments and
   * mentions when given (a failed send loses nothing the person had put in). */
  restore(text: string, attachments: string[] = [], mentions: IMention[] = []): void {
    this.input.value = text;
    if (attachments.length || mentions.length) {
      this.attachments = [...attachments];
      this.mentions = [...mentions];
      this.renderAttachments();
    }
  }

  /** Show an error above the box (it hides when the person types). */
  showError(text: string): void {
    this.error.textContent = text;
    this.error.hidden = false;
  }

  /**
   * Show the controls for a run going or not; `stopStage`: 0 nothing asked, 1 a soft
   * stop asked (the button offers the hard one), 2 a hard stop asked; `note` says what
   * the stop asked will do (see `stopping.ts`).
   */
  setRunning(running: boolean, stopStage: number, note = ''): void {
    this.stopping.textContent = running ? note : '';
    this.stopping.hidden = !(running && note);
    this.stopButton.hidden = !running;
    this.stopButton.textContent = stopStage === 0 ? 'Stop' : 'Stop now';
    this.stopButton.title =
      stopStage === 0
        ? 'Stop the run at its next step (click again to stop at once)'
        : 'Stop the run at once (hard stop)';
    this.stopButton.setAttribute('aria-label', this.stopButton.title);
    this.stopButton.disabled = stopStage === 2;
    this.sendButton.textContent = running ? 'Steer' : 'Send';
    this.sendButton.title = running
      ? 'Send to the running turn (it steers the agent)'
      : 'Send (Enter)';
    this.input.placeholder = running
      ? 'The agent is working: what you send steers it (Enter sends)'
      : 'Ask the agent (Enter sends, Shift+Enter breaks the line)';
  }

  /** Handle a key while the popup shows; true when the popup took it. */
  private onPopupKey(ev: KeyboardEvent): boolean {
    const count = this.items.length;
    if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
      this.picked = (this.picked + (ev.key === 'ArrowDown' ? 1 : count - 1)) % count;
      this.showItems(this.items, false);
      return true;
    }
    if (ev.key === 'Escape') {
      this.popup.hidden = true;
      return true;
    }
    if (ev.key === 'Tab' || (ev.key === 'Enter' && !ev.shiftKey)) {
      const typed = this.input.value.slice(1).toLowerCase();
      const whole = this.items.some(i => 'slash' in i && i.slash.name === typed);
      if (ev.key === 'Enter' && whole) {
        return false; // a whole command: Enter runs it
      }
      this.pick(this.items[this.picked]);
      return true;
    }
    return false;
  }

  private pick(item: PopupItem | undefined): void {
    if (!item) {
      return;
    }
    if ('slash' in item) {
      this.input.value = `/${item.slash.name}`;
      this.popup.hidden = true;
      this.input.focus();
      return;
    }
    const at = mentionAt(this.input.value, this.input.selectionStart ?? this.input.value.length);
    if (!at) {
      return;
    }
    const { mention } = item;
    const next = applyMention(this.input.value, at.start, this.input.selectionStart ?? 0, mention.token, !!mention.folder);
    this.input.value = next.text;
    this.input.setSelectionRange(next.caret, next.caret);
    this.input.focus();
    if (mention.attach) {
      this.attach(mention.attach);
    }
    if (mention.mention) {
      const token = mentionToken(mention.mention);
      this.mentions = [...this.mentions.filter(m => mentionToken(m) !== token), mention.mention];
    }
    if (mention.folder) {
      this.renderPopup();
    } else {
      this.popup.hidden = true;
    }
  }

  /** Show what the text can complete to: slash commands, or what its `@word` can mention. */
  private renderPopup(): void {
    const slash = slashMatches(this.input.value);
    const asked = ++this.asked;
    if (slash.length) {
      this.showItems(slash.map(c => ({ slash: c })));
      return;
    }
    const at = mentionAt(this.input.value, this.input.selectionStart ?? this.input.value.length);
    if (!at || !this.candidates) {
      this.showItems([]);
      return;
    }
    void this.candidates(at.query).then(
      found => {
        if (asked === this.asked) { // nothing typed since
          this.showItems(found.map(m => ({ mention: m })));
        }
      },
      () => this.showItems([])
    );
  }

  /** Show `items` in the popup (`fresh`: the pick goes back to the first). */
  private showItems(items: PopupItem[], fresh = true): void {
    if (fresh) {
      this.picked = 0;
    }
    this.items = items;
    this.popup.textContent = '';
    this.popup.hidden = items.length === 0;
    items.forEach((entry, index) => {
      const item = document.createElement('div');
      item.className = 'slash' in entry ? 'jp-agent-slash-item' : 'jp-agent-slash-item jp-agent-mention-item';
      item.setAttribute('role', 'option');
      item.setAttribute('aria-selected', String(index === this.picked));
      item.classList.toggle('jp-mod-selected', index === this.picked);
      const name = document.createElement('span');
      name.className = 'jp-agent-slash-name';
      name.textContent = 'slash' in entry ? `/${entry.slash.name}` : `@${entry.mention.label}`;
      const help = document.createElement('span');
      help.className = 'jp-agent-slash-help';
      help.textContent = 'slash' in entry ? entry.slash.help : entry.mention.detail;
      item.append(name, help);
      item.addEventListener('mousedown', ev => {
        ev.preventDefault(); // the box keeps the focus
        this.pick(entry);
      });
      this.popup.appendChild(item);
    });
  }

  private renderAttachments(): void {
    this.attachList.textContent = '';
    for (const path of this.attachments) {
      const chip = document.createElement('span');
      chip.className = 'jp-agent-chip';
      chip.textContent = path;
      chip.appendChild(
        button('×', `Remove the attachment ${path}`, () => {
          this.attachments = this.attachments.filter(p => p !== path);
          this.renderAttachments();
        }, 'jp-agent-chip-remove')
      );
      this.attachList.appendChild(chip);
    }
  }

  private readonly stopping: HTMLDivElement;
  private readonly error: HTMLDivElement;
  private readonly note: HTMLDivElement;
  private readonly popup: HTMLDivElement;
  private items: PopupItem[] = [];
  private picked = 0;
  private asked = 0;
  private readonly candidates: ((query: string) => Promise<IMentionItem[]>) | null;
  private mentions: IMention[] = [];
  private readonly attachList: HTMLDivElement;
  private readonly input: HTMLTextAreaElement;
  private readonly sendButton: HTMLButtonElement;
  private readonly stopButton: HTMLButtonElement;
  private attachments: string[] = [];
}
