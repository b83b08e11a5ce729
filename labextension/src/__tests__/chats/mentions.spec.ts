import {
  applyMention,
  cellItem,
  fileItem,
  keptMentions,
  mentionAt,
  queryFolder,
  rankMentions,
  variableItem
} from '../../chats/mentions';
import { mentionCandidates } from '../../chats/mentionsources';

const DF = variableItem({ name: 'df', type: 'DataFrame', summary: 'DataFrame 3 x 2 (a: int64)' });
const DATA = fileItem('data', true);
const SALES = fileItem('data/sales.csv', false);
const CELL = cellItem(2, 'c2', '\n\ndf.plot()\nmore');

describe('@ mentions', () => {
  it('finds the @word at the caret, only at a word start', () => {
    expect(mentionAt('compare @d', 10)).toEqual({ start: 8, query: 'd' });
    expect(mentionAt('@', 1)).toEqual({ start: 0, query: '' });
    expect(mentionAt('mail me@example.com', 19)).toBeNull();
    expect(mentionAt('compare @df with', 16)).toBeNull();
    expect(mentionAt('@data/sa', 8)).toEqual({ start: 0, query: 'data/sa' });
  });

  it('ranks prefix matches first, variables before cells before files', () => {
    expect(rankMentions('d', [DATA, SALES, CELL, DF]).map(i => i.label)).toEqual([
      'df',
      'data/',
      'data/sales.csv'
    ]);
    expect(rankMentions('', [SALES, CELL, DF]).map(i => i.kind)).toEqual(['variable', 'cell', 'file']);
    expect(rankMentions('sales', [SALES, DF]).map(i => i.label)).toEqual(['data/sales.csv']);
    expect(rankMentions('ales', [SALES]).map(i => i.label)).toEqual(['data/sales.csv']);
    expect(rankMentions('cell:', [SALES, CELL, DF]).map(i => i.label)).toEqual(['cell:2']);
    expect(rankMentions('var:d', [SALES, CELL, DF]).map(i => i.label)).toEqual(['df']);
    expect(rankMentions('file:data/s', [SALES, DATA, DF]).map(i => i.label)).toEqual([
      'data/sales.csv'
    ]);
    expect(rankMentions('zz', [SALES, CELL, DF])).toEqual([]);
  });

  it('describes cells, variables and files', () => {
    expect(CELL).toMatchObject({ detail: 'df.plot()', token: '@cell:2' });
    expect(CELL.mention).toEqual({ kind: 'cell', cell: 2, cell_id: 'c2' });
    expect(DF.mention).toEqual({ kind: 'variable', name: 'df', summary: 'DataFrame 3 x 2 (a: int64)' });
    expect(SALES).toMatchObject({ attach: 'data/sales.csv', token: '@data/sales.csv' });
    expect(DATA).toMatchObject({ folder: true, token: '@data/' });
    expect(queryFolder('data/sa')).toBe('data');
    expect(queryFolder('file:a/b/c')).toBe('a/b');
    expect(queryFolder('sa')).toBe('');
  });

  it('puts the token in the text, a folder without a space', () => {
    expect(applyMention('compare @d now', 8, 10, '@df')).toEqual({ text: 'compare @df now', caret: 11 });
    expect(applyMention('plot @da', 5, 8, '@data/', true)).toEqual({ text: 'plot @data/', caret: 11 });
    expect(applyMention('@x', 0, 2, '@df')).toEqual({ text: '@df ', caret: 4 });
  });

  it('keeps the mentions whose token is still in the text', () => {
    const mentions = [CELL.mention!, DF.mention!, DF.mention!];
    expect(keptMentions('plot @df, then @cell:2.', mentions)).toEqual([CELL.mention, DF.mention]);
    expect(keptMentions('plot @dfx', mentions)).toEqual([]);
    expect(keptMentions('nothing', mentions)).toEqual([]);
  });

  it('gathers candidates from every source, a failing one giving none', async () => {
    let asked = 0;
    const candidates = mentionCandidates({
      docPath: () => 'work/a.ipynb',
      cells: () => [{ id: 'c0', source: 'import pandas' }],
      listFolder: async path => (path === '' ? [{ path: 'data', folder: true }, { path: '.hidden', folder: false }] : Promise.reject(new Error('no'))),
      variables: async () => {
        asked += 1;
        return [{ name: 'df', type: 'DataFrame', summary: 'DataFrame 3 x 2' }];
      }
    });
    const all = await candidates('');
    expect(all.map(i => i.label)).toEqual(['df', 'cell:0', 'data/']);
    // A cell's mention keeps its notebook: another may be open by the time it is sent.
    expect(all[1].mention).toEqual({ kind: 'cell', cell: 0, cell_id: 'c0', path: 'work/a.ipynb' });
    expect((await candidates('nope/x')).map(i => i.label)).toEqual([]);
    expect(asked).toBe(1); // kept between two keys
  });
});

describe('@ mention sources', () => {
  it('does not keep a failed variables answer', async () => {
    let calls = 0;
    const candidates = mentionCandidates({
      docPath: () => 'a.ipynb',
      cells: () => [],
      listFolder: async () => [],
      variables: async () => {
        calls += 1;
        if (calls === 1) {
          throw new Error('kernel_busy');
        }
        return [{ name: 'df', type: 'DataFrame', summary: '' }];
      }
    });
    expect(await candidates('d')).toEqual([]);
    expect((await candidates('d')).map(i => i.label)).toEqual(['df']);
  });
});
