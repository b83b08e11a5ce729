/**
 * The Memory view: the facts the agent keeps across chats, which the person
 * owns. Categories with their counts (a filter), a search box (the server ranks the
 * hits), the facts grouped by category, each editable in place and deletable (after a
 * confirmation), and a form to add one. A change the server refuses (a credential-like
 * text, a bad category) is shown inline where it was made, and what the person typed
 * stays. State lives in `MemoryModel` (model.ts); this widget renders it, the list of
 * facts and their editors being `MemoryList`'s (list.ts).
 *
 * Opened by the command "Agent: Memory" (the sidebar and each chat's header have a
 * button for it). It reads the facts again when shown and when a chat had activity (the
 * agent may have saved some).
 */
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { el, field } from '../ui/dom';
import { button } from '../ui/widgets';
import { MemoryList } from './list';
import { DEFAULT_CATEGORY, IMemoryApi, MAX_MEMORY_CHARS, MemoryModel, refusal } from './model';

/** What the Memory view needs from the application. */
export interface IMemoryViewOptions {
  api: IMemoryApi;
  /** Open the chat a fact was saved in. */
  openChat?: (chatId: string) => void;
}

/** How long the search box waits for more typing before it asks the server. */
const SEARCH_DELAY_MS = 250;

let nextId = 0;

/** The Memory view (see the module comment). */export class MemoryView extends Widget {
  constructor(options: IMemoryViewOptions) {
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
    this.list = new MemoryList(this.model, {
      datalistId: this.datalist.id,
      openChat: options.openChat
    });

    this.node.append(
      head,
      about,
      this.search,
      this.cats,
      this.addForm,
      this.status,
      this.list.node
    );
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
    this.list.render();
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

  private readonly search: HTMLInputElement;
  private readonly cats: HTMLDivElement;
  private readonly addForm: HTMLFormElement;
  private readonly addText: HTMLTextAreaElement;
  private readonly addCategory: HTMLInputElement;
  private readonly addButton: HTMLButtonElement;
  private readonly addError: HTMLDivElement;
  private readonly datalist: HTMLDataListElement;
  private readonly status: HTMLDivElement;
  private readonly list: MemoryList;
  private searchTimer: number | null = null;
  private refreshTimer: number | null = null;
  private stale = false;
}
