/**
 * The Memory view (issue 15): the facts the agent keeps across chats, which the person
 * owns. Categories with their counts (a filter), a search box (the server ranks the
 * hits), the facts grouped by category, each editable in place and deletable (after a
 * confirmation), and a form to add one. A change the server refuses (a credential-like
 * text, a bad category) is shown inline where it was made, and what the person typed
 * stays. State lives in `MemoryModel` (memory.ts); this widget renders it.
 *
 * Opened by the command "Agent: Memory" (the sidebar and each chat's header have a
 * button for it). It reads the facts again when shown and when a chat had activity (the
 * agent may have saved some).
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { LabIcon } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import {
  DEFAULT_CATEGORY,
  IMemory,
  IMemoryApi,
  MAX_MEMORY_CHARS,
  memoryMeta,
  MemoryModel,
  refusal
} from '../memory';
import { button } from './items';

/** The Memory view's icon (a bookmark: kept across chats). */
export const memoryIcon = new LabIcon({
  name: 'jupyter-agent:memory',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="16"><path class="jp-icon3" fill="#616161" d="M6 3h12a1 1 0 0 1 1 1v17l-7-4-7 4V4a1 1 0 0 1 1-1zm2 4v2h8V7H8zm0 4v2h5v-2H8z"/></svg>'
});

/** What the Memory view needs from the application. */
export interface IMemoryViewOptions {
  api: IMemoryApi;
  /** Open the chat a fact was saved in. */
  openChat?: (chatId: string) => void;
}

/** How long the search box waits for more typing before it asks the server. */
const SEARCH_DELAY_MS = 250;

let nextId = 0;

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** A labelled text field (the label is visible; the field's accessible name is it). */
function field<T extends HTMLInputElement | HTMLTextAreaElement>(
  label: string,
  input: T,
  className: string
): HTMLLabelElement {
  const l = el('label', className);
  const span = el('span', 'jp-agent-field-label', label);
  l.append(span, input);
  return l;
}

/** The editor of one fact, open in its row (kept across re-renders). */
interface IEditor {
  node: HTMLElement;
  text: HTMLTextAreaElement;
  category: HTMLInputElement;
  error: HTMLElement;
  save: HTMLButtonElement;
}

export class MemoryView extends Widget {
  constructor(private readonly options: IMemoryViewOptions) {
    super();
    this.id = 'jp-agent-memory';
    this.addClass('jp-agent-memory');
    this.title.label = 'Agent Memory';
    this.title.caption = 'What the agent remembers across chats';
    this.model = new MemoryModel(options.api);
    this.model.changed.connect(this.render, this);
    const uid = ++nextId;

    // Header: what this is, and a refresh.
    const head = el('div', 'jp-agent-memory-header');
    const h = el('h2', 'jp-agent-memory-title', 'Memory');
    h.id = `jp-agent-memory-title-${uid}`;
    this.node.setAttribute('role', 'region');
    this.node.setAttribute('aria-labelledby', h.id);
    head.append(
      h,
      el('span', 'jp-agent-spacer'),
      button('Refresh', 'Read the facts again', () => void this.model.refresh(), 'jp-agent-memory-refresh')
    );
    const about = el(
      'p',
      'jp-agent-memory-about',
      'Facts the agent keeps across chats: it saves them with memory.save and recalls ' +
        'them when they matter. Add, edit or delete them here. Secrets (keys, passwords, ' +
        'tokens) are refused.'
    );

    // Search.
    this.search = el('input', 'jp-agent-memory-search');
    this.search.type = 'search';
    this.search.placeholder = 'Search memory…';
    this.search.setAttribute('aria-label', 'Search memory');
    this.search.addEventListener('input', () => this.scheduleSearch());
    this.search.addEventListener('keydown', ev => {
      if (ev.key === 'Enter') {
        ev.preventDefault();
        this.runSearch();
      } else if (ev.key === 'Escape' && this.search.value) {
        ev.preventDefault();
        ev.stopPropagation();
        this.search.value = '';
        this.runSearch();
      }
    });

    // Categories (a filter).
    this.cats = el('div', 'jp-agent-memory-categories');
    this.cats.setAttribute('role', 'toolbar');
    this.cats.setAttribute('aria-label', 'Memory categories');

    // The add form.
    this.addForm = el('form', 'jp-agent-memory-add');
    this.addForm.setAttribute('aria-label', 'Add a fact');
    this.addText = el('textarea', 'jp-agent-memory-add-text');
    this.addText.rows = 2;
    this.addText.maxLength = MAX_MEMORY_CHARS;
    this.addText.placeholder = 'A fact to remember, e.g. “Our fiscal year starts in April.”';
    this.addCategory = el('input', 'jp-agent-memory-add-category');
    this.addCategory.placeholder = DEFAULT_CATEGORY;
    this.datalist = el('datalist', '');
    this.datalist.id = `jp-agent-memory-categories-${uid}`;
    this.addCategory.setAttribute('list', this.datalist.id);
    this.addError = el('div', 'jp-agent-error jp-agent-memory-add-error');
    this.addError.setAttribute('role', 'alert');
    this.addError.hidden = true;
    const addButton = el('button', 'jp-agent-button jp-mod-accept jp-agent-memory-add-button', 'Add');
    addButton.type = 'submit';
    addButton.title = 'Add the fact to memory';
    this.addButton = addButton;
    this.addForm.append(
      field('New fact', this.addText, 'jp-agent-memory-field jp-agent-memory-field-text'),
      field('Category', this.addCategory, 'jp-agent-memory-field'),
      addButton,
      this.datalist,
      this.addError
    );
    this.addForm.addEventListener('submit', ev => {
      ev.preventDefault();
      void this.add();
    });
    this.addText.addEventListener('keydown', ev => {
      if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
        ev.preventDefault();
        void this.add();
      }
    });
    for (const input of [this.addText, this.addCategory]) {
      input.addEventListener('input', () => (this.addError.hidden = true));
    }

    // Status line and the list.
    this.status = el('div', 'jp-agent-memory-status');
    this.status.setAttribute('role', 'status');
    this.list = el('div', 'jp-agent-memory-list');
    this.list.setAttribute('aria-label', 'Facts in memory');

    this.node.append(head, about, this.search, this.cats, this.addForm, this.status, this.list);
    this.render();
  }

  readonly model: MemoryModel;

  /** Read the facts again (soon, once, however often it is asked). */
  refreshSoon(): void {
    if (!this.isVisible) {
      this.stale = true; // read when shown
      return;
    }
    if (this.refreshTimer === null) {
      this.refreshTimer = window.setTimeout(() => {
        this.refreshTimer = null;
        void this.model.refresh();
      }, 100);
    }
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    for (const t of [this.searchTimer, this.refreshTimer]) {
      if (t !== null) {
        window.clearTimeout(t);
      }
    }
    this.model.changed.disconnect(this.render, this);
    super.dispose();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    void this.model.refresh();
    this.stale = false;
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    void this.model.refresh();
    this.stale = false;
  }

  protected onActivateRequest(msg: Message): void {
    super.onActivateRequest(msg);
    if (this.stale) {
      this.stale = false;
      void this.model.refresh();
    }
    (this.model.all.length ? this.search : this.addText).focus();
  }

  // --- search and filter --------------------------------------------------------------

  private scheduleSearch(): void {
    if (this.searchTimer !== null) {
      window.clearTimeout(this.searchTimer);
    }
    this.searchTimer = window.setTimeout(() => this.runSearch(), SEARCH_DELAY_MS);
  }

  private runSearch(): void {
    if (this.searchTimer !== null) {
      window.clearTimeout(this.searchTimer);
      this.searchTimer = null;
    }
    void this.model.setQuery(this.search.value);
  }

  // --- changes ------------------------------------------------------------------------

  private async add(): Promise<void> {
    if (this.addButton.disabled) {
      return;
    }
    this.addButton.disabled = true;
    try {
      const result = await this.model.add(this.addText.value, this.addCategory.value);
      if (result.ok) {
        this.addText.value = '';
        this.addError.hidden = true;
        this.addText.focus();
      } else {
        // What the person typed stays, with the reason beside it.
        this.addError.textContent = refusal('Not saved', result.error);
        this.addError.hidden = false;
      }
    } finally {
      this.addButton.disabled = false;
    }
  }

  private startEdit(m: IMemory): void {
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
    category.setAttribute('list', this.datalist.id);
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

  private async remove(m: IMemory): Promise<void> {
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

  // --- rendering ----------------------------------------------------------------------

  private render(): void {
    if (this.isDisposed) {
      return;
    }
    const model = this.model;
    this.renderCategories();
    this.datalist.textContent = '';
    for (const { category } of model.categories) {
      const o = document.createElement('option');
      o.value = category;
      this.datalist.appendChild(o);
    }

    const shown = model.shown;
    let status: string;
    if (model.loadError) {
      status = `Could not read the memory: ${model.loadError}`;
    } else if (!model.loaded) {
      status = 'Loading…';
    } else if (model.searching) {
      status = model.loading
        ? `Searching for “${model.query}”…`
        : `${shown.length} match${shown.length === 1 ? '' : 'es'} for “${model.query}”` +
          (model.category !== null ? ` in ${model.category}` : '') +
          (shown.length ? ', best first' : '');
    } else if (model.all.length === 0) {
      status = 'Nothing in memory yet. The agent saves facts you tell it; you can add one above.';
    } else {
      const n = shown.length;
      status = `${n} fact${n === 1 ? '' : 's'}` + (model.category !== null ? ` in ${model.category}` : '');
    }
    this.status.textContent = status;
    this.status.classList.toggle('jp-agent-error', !!model.loadError);
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
        title.id = `jp-agent-memory-group-${nextId++}`;
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

  private renderCategories(): void {
    const model = this.model;
    const chips: HTMLButtonElement[] = [];
    const chip = (category: string | null, label: string, count: number): void => {
      const b = button(
        `${label} (${count})`,
        category === null ? `Show all facts (${count})` : `Show the ${count} fact${count === 1 ? '' : 's'} in ${category}`,
        () => void this.model.setCategory(category),
        'jp-agent-memory-category'
      );
      b.textContent = '';
      b.append(el('span', 'jp-agent-memory-category-name', label), el('span', 'jp-agent-memory-category-count', String(count)));
      b.setAttribute('aria-pressed', String(model.category === category));
      if (category !== null) {
        b.dataset.category = category;
      }
      chips.push(b);
    };
    chip(null, 'All', model.total);
    for (const { category, count } of model.categories) {
      chip(category, category, count);
    }
    // A filtered category that emptied (its last fact deleted) still shows, to go back.
    if (model.category !== null && !model.categories.some(c => c.category === model.category)) {
      chip(model.category, model.category, 0);
    }
    this.cats.textContent = '';
    this.cats.append(...chips);
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

  private readonly search: HTMLInputElement;
  private readonly cats: HTMLDivElement;
  private readonly addForm: HTMLFormElement;
  private readonly addText: HTMLTextAreaElement;
  private readonly addCategory: HTMLInputElement;
  private readonly addButton: HTMLButtonElement;
  private readonly addError: HTMLDivElement;
  private readonly datalist: HTMLDataListElement;
  private readonly status: HTMLDivElement;
  private readonly list: HTMLDivElement;
  private readonly sections = new Map<string, HTMLElement>();
  private readonly rows = new Map<string, HTMLLIElement>();
  private readonly rowKeys = new Map<string, string>();
  private readonly editors = new Map<string, IEditor>();
  private readonly rowErrors = new Map<string, string>();
  private searchTimer: number | null = null;
  private refreshTimer: number | null = null;
  private stale = false;
}

/** Make `parent`'s children exactly `children`, in order, moving as few nodes as it can. */
function syncChildren(parent: HTMLElement, children: HTMLElement[]): void {
  children.forEach((child, i) => {
    if (parent.children[i] !== child) {
      parent.insertBefore(child, parent.children[i] ?? null);
    }
  });
  while (parent.children.length > children.length) {
    parent.lastElementChild!.remove();
  }
}
