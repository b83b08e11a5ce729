import { cellMessage, endsWithError, NotebookChats } from '../../notebook/cellactions';

class Store {
  items: { [key: string]: string } = {};
  getItem(key: string): string | null {
    return this.items[key] ?? null;
  }
  setItem(key: string, value: string): void {
    this.items[key] = value;
  }
}

describe('cell actions', () => {
  it('says what each action asks about the cell', () => {
    expect(cellMessage('explain', 2)).toBe('Explain cell 2 of my notebook and its outputs.');
    expect(cellMessage('fix', 0)).toContain('Cell 0 of my notebook fails. Read its traceback');
    expect(cellMessage('fix', 0)).toContain('notebook.propose');
    expect(cellMessage('edit', 3, '  use polars  ')).toMatch(/^Edit cell 3 of my notebook: use polars\n/);
    expect(cellMessage('ask', 1)).toBe('About cell 1: ');
  });

  it('offers Fix on a cell whose last output is an error only', () => {
    expect(endsWithError([{ output_type: 'stream' }, { output_type: 'error' }])).toBe(true);
    expect(endsWithError([{ output_type: 'error' }, { output_type: 'stream' }])).toBe(false);
    expect(endsWithError([])).toBe(false);
  });

  it('keeps one chat per notebook', () => {
    const store = new Store();
    const chats = new NotebookChats(store);
    expect(chats.get('a.ipynb')).toBeNull();
    chats.set('a.ipynb', 'chat_1');
    chats.set('b/c.ipynb', 'chat_2');
    expect(new NotebookChats(store).get('a.ipynb')).toBe('chat_1');
    expect(new NotebookChats(store).get('b/c.ipynb')).toBe('chat_2');
    store.items['jupyter-agent:notebook-chats'] = 'not json';
    expect(new NotebookChats(store).get('a.ipynb')).toBeNull();
    expect(new NotebookChats(null).get('a.ipynb')).toBeNull();
  });
});
