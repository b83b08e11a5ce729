/**
 * The Memory view's state: the person's facts as `GET agent/memories` lists
 * them, their categories with counts, a category filter and a search (`?q=`, ranked by
 * the server), and the changes the person makes (add, edit, delete) through the REST
 * routes `POST agent/memories`, `PATCH/DELETE agent/memories/{id}`.
 *
 * A change the server refuses (400 `bad_memory`, 400 `credential`: the text looks like a
 * secret) is answered with the server's message and changes nothing here, so the view
 * keeps what the person typed. Answers to an older search that arrive after a newer one
 * are dropped.
 *
 * Pure logic: no `@jupyterlab/*` or DOM import (jest tests it with a stand-in server).
 * Views connect to `changed` (a Lumino signal, emitted once per change).
 */
import { ISignal, Signal } from '@lumino/signaling';

/** One fact as REST JSON (`jupyter_agent.core.memory.Memory.to_json`). */
export interface IMemory {
  id: string;
  text: string;
  category: string;
  chat_id: string | null;
  turn_id: string | null;
  author: 'agent' | 'person' | string;
  created: string;
  updated: string;
  run_id: string | null;
  /** How well it matches the search (`GET agent/memories?q=` only), in [0, 1]. */
  score?: number;
}

/** What `GET agent/memories` takes. */
export interface IMemoryQuery {
  q?: string;
  category?: string;
  limit?: number;
}

/**
 * The answer of `GET agent/memories`: the facts, and every category of the person's facts
 * with its count (whatever the filter; older servers may leave it out).
 */
export interface IMemoryList {
  memories: IMemory[];
  categories?: ICategoryCount[];
}

/** The routes the Memory view uses (`AgentApi` has them). */
export interface IMemoryApi {
  listMemories(query?: IMemoryQuery): Promise<IMemoryList>;
  addMemory(text: string, category?: string): Promise<IMemory>;
  updateMemory(id: string, change: { text?: string; category?: string }): Promise<IMemory>;
  deleteMemory(id: string): Promise<void>;
}

/** A category and how many facts it holds. */
export interface ICategoryCount {
  category: string;
  count: number;
}

/** A category's facts, newest change first. */
export interface IMemoryGroup {
  category: string;
  memories: IMemory[];
}

/** The server's limits (`jupyter_agent.core.memory`): checked here too, for a quick answer. */
export const MAX_MEMORY_CHARS = 2000;
export const MAX_CATEGORY_CHARS = 40;
export const DEFAULT_CATEGORY = 'general';

/** A category as the server stores it: trimmed, lower case. */
export function normaliseCategory(raw: string): string {
  return raw.trim().toLowerCase();
}

/**
 * Why a fact would be refused before asking the server (empty or too long text, a bad
 * category), or null. The server checks the same and more (credentials).
 */
export function checkMemory(text: string, category: string): string | null {
  const t = text.trim();
  if (!t) {
    return 'Write the fact to remember.';
  }
  if (t.length > MAX_MEMORY_CHARS) {
    return `A fact is at most ${MAX_MEMORY_CHARS} characters (this one has ${t.length}).`;
  }
  const c = normaliseCategory(category);
  if (c.length > MAX_CATEGORY_CHARS) {
    return `A category is at most ${MAX_CATEGORY_CHARS} characters.`;
  }
  if (c && !/^[a-z0-9 _-]+$/.test(c)) {
    return 'A category uses letters a–z, digits, spaces, “_” and “-” only.';
  }
  return null;
}

/** The categories of these facts with their counts, by name. */
export function categoryCounts(memories: ReadonlyArray<IMemory>): ICategoryCount[] {
  const counts = new Map<string, number>();
  for (const m of memories) {
    counts.set(m.category, (counts.get(m.category) ?? 0) + 1);
  }
  return [...counts]
    .map(([category, count]) => ({ category, count }))
    .sort((a, b) => a.category.localeCompare(b.category));
}

/** Newest change first (then newest created, then id: a stable order). */
function byUpdated(a: IMemory, b: IMemory): number {
  return (
    (b.updated || '').localeCompare(a.updated || '') ||
    (b.created || '').localeCompare(a.created || '') ||
    a.id.localeCompare(b.id)
  );
}

/** The facts grouped by category (categories by name, facts newest change first). */
export function groupByCategory(memories: ReadonlyArray<IMemory>): IMemoryGroup[] {
  const groups = new Map<string, IMemory[]>();
  for (const m of memories) {
    const list = groups.get(m.category);
    if (list) {
      list.push(m);
    } else {
      groups.set(m.category, [m]);
    }
  }
  return [...groups]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([category, list]) => ({ category, memories: [...list].sort(byUpdated) }));
}

/** Who wrote a fact and where, as the view shows it: "saved by the agent · 2025-01-02 10:30". */
export function memoryMeta(m: IMemory): string {
  const who =
    m.author === 'agent' ? 'saved by the agent' : m.author === 'person' ? 'added by you' : m.author;
  const when = (m.updated || m.created || '').replace('T', ' ').slice(0, 16);
  const edited = m.updated && m.created && m.updated !== m.created ? ' (edited)' : '';
  return [who, when ? `${when}${edited}` : ''].filter(Boolean).join(' · ');
}

/**
 * The message of a failed request, for the person: the server's own words when it gave
 * some (with the HTTP status, except for a plain 400: a refusal that says why).
 */
export function errorMessage(err: unknown): string {
  if (err && typeof err === 'object') {
    const e = err as { message?: unknown; status?: unknown; reason?: unknown };
    if (typeof e.message === 'string' && e.message) {
      return typeof e.status === 'number' && e.status !== 400
        ? `${e.message} (${e.status})`
        : e.message;
    }
  }
  return String(err);
}

/** `Not saved: why`, unless the message already says so (the server's refusals do). */
export function refusal(what: string, message: string): string {
  return message.toLowerCase().startsWith(what.toLowerCase()) ? message : `${what}: ${message}`;
}

/** The outcome of a change: the fact the server answered, or why it refused. */
export type ChangeResult = { ok: true; memory: IMemory | null } | { ok: false; error: string };

/** The Memory view's state (see the module comment). */
export class MemoryModel {
  constructor(private readonly api: IMemoryApi) {}

  /** Every fact (newest change first): what categories and counts are made of. */
  get all(): ReadonlyArray<IMemory> {
    return this._all;
  }

  /** The facts the list shows: the search's hits (ranked), else the category's or all. */
  get shown(): ReadonlyArray<IMemory> {
    if (this._query) {
      return this._hits;
    }
    return this._category === null ? this._all : this._all.filter(m => m.category === this._category);
  }

  /** The shown facts grouped by category (a search keeps its ranking: see `searching`). */
  get groups(): IMemoryGroup[] {
    return groupByCategory(this.shown);
  }

  /**
   * The categories in use with their counts: the server's (which counts every fact, past
   * the list's limit), kept up to date with the changes made here.
   */
  get categories(): ICategoryCount[] {
    if (this._counts === null) {
      return categoryCounts(this._all);
    }
    return [...this._counts]
      .filter(([, count]) => count > 0)
      .map(([category, count]) => ({ category, count }))
      .sort((a, b) => a.category.localeCompare(b.category));
  }

  /** How many facts there are in all (the "All" count). */
  get total(): number {
    return this.categories.reduce((n, c) => n + c.count, 0);
  }

  /** The search text ('' when not searching). */
  get query(): string {
    return this._query;
  }

  /** True while a search is in force (the list is ranked by score, not grouped). */
  get searching(): boolean {
    return this._query !== '';
  }

  /** The category filter (null: all). */
  get category(): string | null {
    return this._category;
  }

  /** True while a read is on its way. */
  get loading(): boolean {
    return this._loading > 0;
  }

  /** Why the last read failed, or null. */
  get loadError(): string | null {
    return this._loadError;
  }

  /** True once a read answered. */
  get loaded(): boolean {
    return this._loaded;
  }

  /** Emitted after every change of the state. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /** Search (`''` ends the search); the server ranks the hits. */
  setQuery(query: string): Promise<void> {
    const q = query.trim();
    if (q === this._query) {
      return Promise.resolve();
    }
    this._query = q;
    this._hits = [];
    this._changed.emit();
    return this.refresh();
  }

  /** Show one category (null: all). A search is narrowed to it too. */
  setCategory(category: string | null): Promise<void> {
    if (category === this._category) {
      return Promise.resolve();
    }
    this._category = category;
    this._changed.emit();
    return this._query ? this.refresh() : Promise.resolve();
  }

  /** Read the facts again (and the search's hits while searching). */
  async refresh(): Promise<void> {
    const gen = ++this._gen;
    const query = this._query;
    const category = this._category;
    this._loading += 1;
    this._changed.emit();
    try {
      const [all, hits] = await Promise.all([
        this.api.listMemories(),
        query
          ? this.api.listMemories(category === null ? { q: query } : { q: query, category })
          : Promise.resolve(null)
      ]);
      if (gen !== this._gen) {
        return; // a newer read is on its way (or answered)
      }
      this._all = [...(all.memories ?? [])].sort(byUpdated);
      this._hits = hits?.memories ?? [];
      const counts = Array.isArray(all.categories) ? all.categories : null;
      this._counts = counts ? new Map(counts.map(c => [c.category, c.count])) : null;
      this._loadError = null;
      this._loaded = true;
    } catch (err) {
      if (gen === this._gen) {
        this._loadError = errorMessage(err);
      }
    } finally {
      this._loading -= 1;
      this._changed.emit();
    }
  }

  /** Add a fact (author: the person). Refused: nothing changes, the error says why. */
  async add(text: string, category: string): Promise<ChangeResult> {
    const problem = checkMemory(text, category);
    if (problem) {
      return { ok: false, error: problem };
    }
    const c = normaliseCategory(category);
    let memory: IMemory;
    try {
      memory = await this.api.addMemory(text.trim(), c || undefined);
    } catch (err) {
      return { ok: false, error: errorMessage(err) };
    }
    this._all = [memory, ...this._all.filter(m => m.id !== memory.id)].sort(byUpdated);
    this.bump(memory.category, 1);
    this._changed.emit();
    if (this._query) {
      void this.refresh(); // whether the new fact matches is the server's to say
    }
    return { ok: true, memory };
  }

  /** Change a fact's text and/or category. Refused: nothing changes, the error says why. */
  async update(id: string, text: string, category: string): Promise<ChangeResult> {
    const before = this._all.find(m => m.id === id) ?? this._hits.find(m => m.id === id);
    const problem = checkMemory(text, category);
    if (problem) {
      return { ok: false, error: problem };
    }
    const change: { text?: string; category?: string } = {};
    const t = text.trim();
    const c = normaliseCategory(category) || DEFAULT_CATEGORY;
    if (!before || before.text !== t) {
      change.text = t;
    }
    if (!before || before.category !== c) {
      change.category = c;
    }
    if (before && change.text === undefined && change.category === undefined) {
      return { ok: true, memory: before }; // nothing to send
    }
    let memory: IMemory;
    try {
      memory = await this.api.updateMemory(id, change);
    } catch (err) {
      return { ok: false, error: errorMessage(err) };
    }
    this._all = this._all.map(m => (m.id === id ? memory : m)).sort(byUpdated);
    if (before && before.category !== memory.category) {
      this.bump(before.category, -1);
      this.bump(memory.category, 1);
    }
    // A hit keeps its place and score until the next search.
    this._hits = this._hits.map(m => (m.id === id ? { ...memory, score: m.score } : m));
    this._changed.emit();
    return { ok: true, memory };
  }

  /** Delete a fact. Refused (or gone already): the error says why. */
  async remove(id: string): Promise<ChangeResult> {
    const before = this._all.find(m => m.id === id) ?? this._hits.find(m => m.id === id);
    try {
      await this.api.deleteMemory(id);
    } catch (err) {
      const status = (err as { status?: unknown })?.status;
      if (status !== 404) {
        return { ok: false, error: errorMessage(err) };
      }
      // 404: deleted meanwhile (by the agent, the CLI): gone all the same.
    }
    this._all = this._all.filter(m => m.id !== id);
    this._hits = this._hits.filter(m => m.id !== id);
    if (before) {
      this.bump(before.category, -1);
    }
    this._changed.emit();
    return { ok: true, memory: null };
  }

  /** Follow a change in the server's counts (the next read brings them exact). */
  private bump(category: string, delta: number): void {
    if (this._counts !== null) {
      this._counts.set(category, Math.max(0, (this._counts.get(category) ?? 0) + delta));
    }
  }

  private _all: IMemory[] = [];
  private _hits: IMemory[] = [];
  private _counts: Map<string, number> | null = null;
  private _query = '';
  private _category: string | null = null;
  private _loading = 0;
  private _loadError: string | null = null;
  private _loaded = false;
  private _gen = 0;
  private readonly _changed = new Signal<this, void>(this);
}
