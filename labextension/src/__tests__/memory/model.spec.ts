import {
  categoryCounts,
  checkMemory,
  errorMessage,
  groupByCategory,
  IMemory,
  IMemoryApi,
  IMemoryList,
  IMemoryQuery,
  memoryMeta,
  MemoryModel,
  refusal
} from '../../memory/model';

function mem(id: string, category: string, text: string, updated: string, fields: Partial<IMemory> = {}): IMemory {
  return {
    id,
    text,
    category,
    chat_id: null,
    turn_id: null,
    author: 'person',
    created: updated,
    updated,
    run_id: null,
    ...fields
  };
}

/** An error as `AgentApi` raises it (`AgentApiError`: status, message, reason). */
class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly reason: string | null
  ) {
    super(message);
  }
}

/**
 * A stand-in for the server's memory routes with their documented answers: newest change
 * first; `q` ranks by the share of query words a fact holds (with a `score`); a text that
 * looks like a credential is refused with 400 `credential`; an unknown id is 404.
 */
class Server implements IMemoryApi {
  facts: IMemory[] = [];
  calls: string[] = [];
  private clock = 10; // after the seeded facts

  private now(): string {
    this.clock += 1;
    return `2025-01-01T00:00:${String(this.clock).padStart(2, '0')}Z`;
  }

  async listMemories(query: IMemoryQuery = {}): Promise<IMemoryList> {
    return { memories: await this.select(query), categories: this.countsAnswer ? categoryCounts(this.facts) : undefined };
  }

  /** Whether the answer carries `categories` (the server does; an older one may not). */
  countsAnswer = true;

  private async select(query: IMemoryQuery): Promise<IMemory[]> {
    this.calls.push(`GET ${JSON.stringify(query)}`);
    let facts = [...this.facts].sort((a, b) => b.updated.localeCompare(a.updated));
    if (query.category) {
      facts = facts.filter(f => f.category === query.category);
    }
    if (query.q) {
      const words = query.q.toLowerCase().split(/\W+/).filter(Boolean);
      facts = facts
        .map(f => ({
          ...f,
          score: words.filter(w => f.text.toLowerCase().includes(w)).length / words.length
        }))
        .filter(f => f.score > 0)
        .sort((a, b) => b.score - a.score);
    }
    return facts;
  }

  async addMemory(text: string, category?: string): Promise<IMemory> {
    this.calls.push(`POST ${text}`);
    if (/sk-[A-Za-z0-9]{10,}/.test(text)) {
      throw new ApiError(400, 'Not saved: the text looks like an API key.', 'credential');
    }
    const at = this.now();
    const m = mem(`mem_${this.facts.length + 1}`, category ?? 'general', text, at);
    this.facts.push(m);
    return m;
  }

  async updateMemory(id: string, change: { text?: string; category?: string }): Promise<IMemory> {
    this.calls.push(`PATCH ${id} ${JSON.stringify(change)}`);
    const i = this.facts.findIndex(f => f.id === id);
    if (i < 0) {
      throw new ApiError(404, 'no such memory', null);
    }
    if (change.text && /password\s*=/.test(change.text)) {
      throw new ApiError(400, 'Not saved: the text holds a password.', 'credential');
    }
    this.facts[i] = { ...this.facts[i], ...change, updated: this.now() };
    return this.facts[i];
  }

  async deleteMemory(id: string): Promise<void> {
    this.calls.push(`DELETE ${id}`);
    const i = this.facts.findIndex(f => f.id === id);
    if (i < 0) {
      throw new ApiError(404, 'no such memory', null);
    }
    this.facts.splice(i, 1);
  }
}

function seeded(): Server {
  const s = new Server();
  s.facts = [
    mem('mem_a', 'project', 'The data lives in s3://acme-raw', '2025-01-01T00:00:01Z'),
    mem('mem_b', 'preferences', 'Plots use seaborn, dark theme', '2025-01-01T00:00:03Z', { author: 'agent', chat_id: 'chat_1' }),
    mem('mem_c', 'project', 'Fiscal year starts in April', '2025-01-01T00:00:02Z')
  ];
  return s;
}

describe('memory helpers', () => {
  it('counts and groups by category, newest change first', () => {
    const s = seeded();
    expect(categoryCounts(s.facts)).toEqual([
      { category: 'preferences', count: 1 },
      { category: 'project', count: 2 }
    ]);
    const groups = groupByCategory(s.facts);
    expect(groups.map(g => g.category)).toEqual(['preferences', 'project']);
    expect(groups[1].memories.map(m => m.id)).toEqual(['mem_c', 'mem_a']);
  });

  it('checks a fact as the server does (text and category)', () => {
    expect(checkMemory('  ', 'x')).toMatch(/Write the fact/);
    expect(checkMemory('a'.repeat(2001), '')).toMatch(/at most 2000/);
    expect(checkMemory('ok', 'Data Sets')).toBeNull(); // lower-cased by the server
    expect(checkMemory('ok', 'a/b')).toMatch(/letters/);
    expect(checkMemory('ok', 'x'.repeat(41))).toMatch(/at most 40/);
    expect(checkMemory('ok', '')).toBeNull(); // the default category
  });

  it('says who wrote a fact, when, and whether it was edited', () => {
    const m = mem('m', 'c', 't', '2025-02-03T04:05:06Z', { author: 'agent' });
    expect(memoryMeta(m)).toBe('saved by the agent · 2025-02-03 04:05');
    expect(memoryMeta({ ...m, author: 'person', updated: '2025-02-04T00:00:00Z' })).toBe(
      'added by you · 2025-02-04 00:00 (edited)'
    );
  });

  it('shows the server message of an error, once prefixed', () => {
    expect(errorMessage(new ApiError(400, 'looks like an API key', 'credential'))).toBe(
      'looks like an API key'
    );
    expect(errorMessage(new ApiError(403, 'Forbidden', null))).toBe('Forbidden (403)');
    expect(errorMessage('boom')).toBe('boom');
    expect(refusal('Not saved', 'looks like an API key')).toBe('Not saved: looks like an API key');
    expect(refusal('Not saved', 'Not saved: the text looks like an API key.')).toBe(
      'Not saved: the text looks like an API key.'
    );
  });
});

describe('MemoryModel', () => {
  it('lists the facts with their categories, and filters by category', async () => {
    const server = seeded();
    const model = new MemoryModel(server);
    let changes = 0;
    model.changed.connect(() => (changes += 1));
    expect(model.loaded).toBe(false);
    await model.refresh();
    expect(model.loaded).toBe(true);
    expect(changes).toBeGreaterThan(0);
    expect(model.all.map(m => m.id)).toEqual(['mem_b', 'mem_c', 'mem_a']);
    expect(model.categories).toEqual([
      { category: 'preferences', count: 1 },
      { category: 'project', count: 2 }
    ]);
    await model.setCategory('project');
    expect(model.shown.map(m => m.id)).toEqual(['mem_c', 'mem_a']);
    expect(model.categories).toHaveLength(2); // counts stay those of all facts
    await model.setCategory(null);
    expect(model.shown).toHaveLength(3);
  });

  it('searches through the server (ranked, with scores) and ends the search', async () => {
    const server = seeded();
    const model = new MemoryModel(server);
    await model.refresh();
    await model.setQuery('  fiscal april ');
    expect(model.query).toBe('fiscal april');
    expect(model.searching).toBe(true);
    expect(server.calls).toContain('GET {"q":"fiscal april"}');
    expect(model.shown.map(m => [m.id, m.score])).toEqual([['mem_c', 1]]);
    await model.setCategory('preferences');
    expect(server.calls).toContain('GET {"q":"fiscal april","category":"preferences"}');
    expect(model.shown).toHaveLength(0);
    await model.setQuery('');
    expect(model.searching).toBe(false);
    expect(model.shown.map(m => m.id)).toEqual(['mem_b']);
  });

  it('drops the answer of an older search that arrives after a newer one', async () => {
    const server = seeded();
    const slow: Array<() => void> = [];
    const api: IMemoryApi = {
      ...server,
      listMemories: async (q?: IMemoryQuery) => {
        const answer = await server.listMemories(q);
        if (q?.q === 'seaborn') {
          await new Promise<void>(resolve => slow.push(resolve));
        }
        return answer;
      },
      addMemory: server.addMemory.bind(server),
      updateMemory: server.updateMemory.bind(server),
      deleteMemory: server.deleteMemory.bind(server)
    };
    const model = new MemoryModel(api);
    const first = model.setQuery('seaborn');
    await new Promise(r => setTimeout(r, 0));
    await model.setQuery('april');
    expect(model.shown.map(m => m.id)).toEqual(['mem_c']);
    slow.forEach(resolve => resolve());
    await first;
    expect(model.shown.map(m => m.id)).toEqual(['mem_c']); // not the stale seaborn hits
  });

  it('adds a fact; a refused one (credential) changes nothing and says why', async () => {
    const server = seeded();
    const model = new MemoryModel(server);
    await model.refresh();
    const bad = await model.add('my key is sk-abcdefghijklmnop', 'secrets');
    expect(bad).toEqual({ ok: false, error: 'Not saved: the text looks like an API key.' });
    expect(model.all).toHaveLength(3);
    const empty = await model.add('   ', '');
    expect(empty.ok).toBe(false);
    expect(server.calls.filter(c => c.startsWith('POST'))).toHaveLength(1); // checked here
    const good = await model.add('  Reports go to Dana  ', ' People ');
    expect(good.ok).toBe(true);
    expect(server.calls).toContain('POST Reports go to Dana');
    expect(model.all[0]).toMatchObject({ text: 'Reports go to Dana', category: 'people' });
    expect(model.categories.map(c => c.category)).toEqual(['people', 'preferences', 'project']);
  });

  it('edits a fact in place (only what changed); a refused edit keeps the fact', async () => {
    const server = seeded();
    const model = new MemoryModel(server);
    await model.refresh();
    const same = await model.update('mem_a', 'The data lives in s3://acme-raw', 'project');
    expect(same.ok).toBe(true);
    expect(server.calls.some(c => c.startsWith('PATCH'))).toBe(false);
    const moved = await model.update('mem_a', 'The data lives in s3://acme-raw', 'data');
    expect(moved.ok).toBe(true);
    expect(server.calls).toContain('PATCH mem_a {"category":"data"}');
    expect(model.all.find(m => m.id === 'mem_a')!.category).toBe('data');
    expect(model.all[0].id).toBe('mem_a'); // newest change first
    const refused = await model.update('mem_a', 'db password = hunter2', 'data');
    expect(refused).toEqual({ ok: false, error: 'Not saved: the text holds a password.' });
    expect(model.all.find(m => m.id === 'mem_a')!.text).toBe('The data lives in s3://acme-raw');
  });

  it('keeps a search hit in place with its score when it is edited', async () => {
    const server = seeded();
    const model = new MemoryModel(server);
    await model.setQuery('seaborn');
    const r = await model.update('mem_b', 'Plots use seaborn, light theme', 'preferences');
    expect(r.ok).toBe(true);
    expect(model.shown.map(m => [m.text, m.score])).toEqual([['Plots use seaborn, light theme', 1]]);
  });

  it('deletes a fact; one already gone (404) is gone all the same', async () => {
    const server = seeded();
    const model = new MemoryModel(server);
    await model.refresh();
    expect((await model.remove('mem_c')).ok).toBe(true);
    expect(model.all.map(m => m.id)).toEqual(['mem_b', 'mem_a']);
    server.facts = server.facts.filter(f => f.id !== 'mem_b'); // deleted by the agent meanwhile
    expect((await model.remove('mem_b')).ok).toBe(true);
    expect(model.all.map(m => m.id)).toEqual(['mem_a']);
    const failing: IMemoryApi = {
      ...server,
      listMemories: server.listMemories.bind(server),
      addMemory: server.addMemory.bind(server),
      updateMemory: server.updateMemory.bind(server),
      deleteMemory: async () => {
        throw new ApiError(403, 'Forbidden', null);
      }
    };
    const m2 = new MemoryModel(failing);
    await m2.refresh();
    expect(await m2.remove('mem_a')).toEqual({ ok: false, error: 'Forbidden (403)' });
    expect(m2.all.map(m => m.id)).toEqual(['mem_a']);
  });

  it('counts categories as the server does, past the list, and follows changes', async () => {
    const server = seeded();
    const model = new MemoryModel(server);
    const truncated: IMemoryApi = {
      // The list is cut at its limit; the counts cover every fact.
      listMemories: async q => {
        const answer = await server.listMemories(q);
        return { memories: answer.memories.slice(0, 1), categories: answer.categories };
      },
      addMemory: server.addMemory.bind(server),
      updateMemory: server.updateMemory.bind(server),
      deleteMemory: server.deleteMemory.bind(server)
    };
    const cut = new MemoryModel(truncated);
    await cut.refresh();
    expect(cut.all).toHaveLength(1);
    expect(cut.total).toBe(3);
    expect(cut.categories).toEqual([
      { category: 'preferences', count: 1 },
      { category: 'project', count: 2 }
    ]);
    await cut.update('mem_b', 'Plots use seaborn, dark theme', 'project');
    expect(cut.categories).toEqual([{ category: 'project', count: 3 }]);
    await cut.add('Reports go to Dana', 'people');
    await cut.remove('mem_b');
    expect(cut.categories).toEqual([
      { category: 'people', count: 1 },
      { category: 'project', count: 2 }
    ]);
    // Without the server's counts, they are made from the list.
    server.countsAnswer = false;
    await model.refresh();
    expect(model.categories).toEqual(categoryCounts(server.facts));
  });

  it('reports a failed read and keeps what it showed', async () => {
    const server = seeded();
    let down = false;
    const api: IMemoryApi = {
      listMemories: async q => {
        if (down) {
          throw new Error('server unreachable');
        }
        return server.listMemories(q);
      },
      addMemory: server.addMemory.bind(server),
      updateMemory: server.updateMemory.bind(server),
      deleteMemory: server.deleteMemory.bind(server)
    };
    const model = new MemoryModel(api);
    await model.refresh();
    down = true;
    await model.refresh();
    expect(model.loadError).toBe('server unreachable');
    expect(model.all).toHaveLength(3);
    expect(model.loading).toBe(false);
  });
});
