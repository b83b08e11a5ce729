/**
 * The Memory view's list of facts: grouped by category (or the search's best matches),
 * each row with Edit and Delete, an editor open in place (kept, with its focus, across
 * re-renders: rows are kept by id) and the server's refusal beside what was typed.
 * It draws `MemoryModel` (model.ts) and sends the person's changes through it.
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { el, field, syncChildren } from '../ui/dom';
import { button } from '../ui/widgets';
import { IMemory, MAX_MEMORY_CHARS, memoryMeta, MemoryModel, refusal } from './model';

let nextGroup = 0;

/** The editor of one fact, open in its row (kept across re-renders). */
interface IEditor {
  node: HTMLElement;
  text: HTMLTextAreaElement;
  category: HTMLInputElement;
  error: HTMLElement;
  save: HTMLButtonElement;
}

/** What the list needs from its view. */
export interface IMemoryListOptions {
  /** The id of the view's category `<datalist>` (the editors suggest from it). */
  datalistId: string;
  /** Open the chat a fact was saved in. */
  openChat?: (chatId: string) => void;
}

/** The list of facts (see the module comment); `node` goes into the view. */
export class MemoryList {
  constructor(
    private readonly model: MemoryModel,
    private readonly options: IMemoryListOptions
  ) {
    this.list = el('div', 'jp-agent-memory-list');
    this.list.setAttribute('aria-label', 'Facts in memory');
  }

  /** The list's element. */
  get node(): HTMLDivElement {
    return this.list;
  }

  /** Open the editor of a fact in its row (or focus it when open). */
  startEdit(m: IMemory): void {
    if (this.editors.has(m.id)) {
      this.editors.get(m.id)!.text.focus();
      return;
    }
    const node = el('div', 'jp-agent-memory-editor');
    const text = el('textarea', 'jp-agent-memory-edit-text');
    text.value = m.text;
    text.rows = Math.min(8, Math.max(2, Math.ceil(m.text.length / 80)));
    text.maxLength = MAX_MEMORY_CHARS;
    const category = el('input', 'jp-agent-memory-edit-category');
    category.value = m.category;
    category.setAttribute('list', this.options.datalistId);
    const error = el('div', 'jp-agent-error jp-agent-memory-edit-error');
    error.setAttribute('role', 'alert');
    error.hidden = true;
    const save = button('Save', 'Save the changed fact', () => void this.saveEdit(m.id), 'jp-agent-memory-save jp-mod-accept');
    const cancel = button('Cancel', 'Leave the fact as it was', () => this.endEdit(m.id), 'jp-agent-memory-cancel');
    const row = el('div', 'jp-agent-memory-editor-buttons');
    row.append(save, cancel);
    node.append(
      field('Fact', text, 'jp-agent-memory-field jp-agent-memory-field-text'),
      field('Category', category, 'jp-agent-memory-field'),
      row,
      error
    );
    node.addEventListener('keydown', ev => {
      if (ev.key === 'Escape') {
        ev.preventDefault();
        ev.stopPropagation();
        this.endEdit(m.id);
      } else if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
        ev.preventDefault();
        void this.saveEdit(m.id);
      }
    });
    for (const input of [text, category]) {
      input.addEventListener('input', () => (error.hidden = true));
    }
    this.editors.set(m.id, { node, text, category, error, save });
    this.render();
    text.focus();
  }

  private endEdit(id: string): void {
    this.editors.delete(id);
    this.render();
    this.rows.get(id)?.querySelector<HTMLButtonElement>('.jp-agent-memory-edit')?.focus();
  }

  private async saveEdit(id: string): Promise<void> {
    const editor = this.editors.get(id);
    if (!editor || editor.save.disabled) {
      return;
    }
    editor.save.disabled = true;
    try {
      const result = await this.model.update(id, editor.text.value, editor.category.value);
      if (result.ok) {
        this.endEdit(id);
      } else {
        editor.error.textContent = refusal('Not saved', result.error);
        editor.error.hidden = false;
      }
    } finally {
      editor.save.disabled = false;
    }
  }

  /** Delete a fact, once the person confirmed. */
  async remove(m: IMemory): Promise<void> {
    const body = el('div', 'jp-agent-memory-confirm');
    body.append(
      el('p', '', 'Delete this fact from memory? The agent will no longer recall it.'),
      el('blockquote', 'jp-agent-memory-confirm-text', m.text)
    );
    const answer = await showDialog({
      title: 'Delete fact',
      body: new Widget({ node: body }),
      buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Delete' })]
    });
    if (!answer.button.accept) {
      return;
    }
    const result = await this.model.remove(m.id);
    if (!result.ok) {
      this.rowErrors.set(m.id, refusal('Not deleted', result.error));
      this.render();
    } else {
      this.editors.delete(m.id);
      this.rowErrors.delete(m.id);
    }
  }

  /** Draw the model's facts (rows kept by id). */
  render(): void {
    const model = this.model;
    const shown = model.shown;
    this.list.setAttribute('aria-busy', String(model.loading));
    // Rows are kept by id, so an open editor (and its focus) survives a re-render.
    const sections: HTMLElement[] = [];
    const seen = new Set<string>();
    const groups = model.searching
      ? shown.length
        ? [{ category: null as string | null, memories: [...shown] }]
        : []
      : model.groups;
    for (const group of groups) {
      const key = group.category === null ? '\u0000search' : group.category;
      let section = this.sections.get(key);
      if (!section) {
        section = el('section', 'jp-agent-memory-group');
        const title = el('h3', 'jp-agent-memory-group-title');
        title.id = `jp-agent-memory-group-${nextGroup++}`;
        section.setAttribute('aria-labelledby', title.id);
        section.append(title, el('ul', 'jp-agent-memory-items'));
        this.sections.set(key, section);
      }
      if (group.category !== null) {
        section.dataset.category = group.category;
      } else {
        delete section.dataset.category;
      }
      const title = section.querySelector('h3')!;
      title.textContent =
        group.category === null
          ? 'Best matches'
          : `${group.category} (${group.memories.length})`;
      const ul = section.querySelector('ul')!;
      const rows = group.memories.map(m => {
        seen.add(m.id);
        return this.row(m, group.category === null);
      });
      syncChildren(ul, rows);
      sections.push(section);
    }
    syncChildren(this.list, sections);
    for (const [key, section] of [...this.sections]) {
      if (!sections.includes(section)) {
        this.sections.delete(key);
      }
    }
    for (const id of [...this.rows.keys()]) {
      if (!seen.has(id)) {
        this.rows.delete(id);
        this.rowKeys.delete(id);
      }
    }
    // A fact gone from the server (deleted elsewhere) takes its editor and error along;
    // one only outside the search's hits keeps them for when it shows again.
    const known = new Set(model.all.map(m => m.id));
    for (const id of [...this.editors.keys(), ...this.rowErrors.keys()]) {
      if (model.loaded && !known.has(id) && !seen.has(id)) {
        this.editors.delete(id);
        this.rowErrors.delete(id);
      }
    }
  }

  /** The row of one fact (reused by id; rebuilt only when the fact or its editor changed). */
  private row(m: IMemory, ranked: boolean): HTMLLIElement {
    const editor = this.editors.get(m.id);
    const error = this.rowErrors.get(m.id) ?? '';
    const key = JSON.stringify([m, ranked, !!editor, error]);
    let li = this.rows.get(m.id);
    if (li && this.rowKeys.get(m.id) === key) {
      return li;
    }
    if (!li) {
      li = el('li', 'jp-agent-memory-item');
      li.dataset.memoryId = m.id;
      this.rows.set(m.id, li);
    }
    this.rowKeys.set(m.id, key);
    li.textContent = '';
    li.classList.toggle('jp-mod-editing', !!editor);
    if (editor) {
      li.appendChild(editor.node);
      return li;
    }
    const text = el('div', 'jp-agent-memory-text jp-agent-text', m.text);
    const meta = el('div', 'jp-agent-memory-meta');
    meta.append(memoryMeta(m));
    if (ranked) {
      meta.append(' · ', el('span', 'jp-agent-memory-item-category', m.category));
      if (typeof m.score === 'number') {
        meta.append(' · ', el('span', 'jp-agent-memory-score', `score ${m.score.toFixed(2)}`));
      }
    }
    const chatId = m.chat_id;
    if (chatId && this.options.openChat) {
      meta.append(
        ' · ',
        button('from a chat', 'Open the chat this fact was saved in', () => this.options.openChat!(chatId), 'jp-agent-memory-open-chat jp-agent-link')
      );
    }
    const actions = el('div', 'jp-agent-memory-actions');
    const short = m.text.length > 40 ? `${m.text.slice(0, 40)}…` : m.text;
    actions.append(
      button('Edit', `Edit the fact “${short}”`, () => this.startEdit(m), 'jp-agent-memory-edit'),
      button('Delete', `Delete the fact “${short}”`, () => void this.remove(m), 'jp-agent-memory-delete')
    );
    li.append(text, meta, actions);
    if (error) {
      const e = el('div', 'jp-agent-error jp-agent-memory-row-error', error);
      e.setAttribute('role', 'alert');
      li.appendChild(e);
    }
    return li;
  }

  private readonly list: HTMLDivElement;
  private readonly sections = new Map<string, HTMLElement>();
  private readonly rows = new Map<string, HTMLLIElement>();
  private readonly rowKeys = new Map<string, string>();
  private readonly editors = new Map<string, IEditor>();
  private readonly rowErrors = new Map<string, string>();
}
