/**
 * `@` mentions in the composer (pure logic: no `@jupyterlab/*` or DOM import, so jest tests
 * it alone). Typing `@` at a word's start lists what can be mentioned:
 *
 * - a **file** (`@data/sales.csv`): it is attached to the message, as the Attach button does
 *   (a contents path the server reads and sends to the model);
 * - a **cell** of the open notebook (`@cell:3`): named in the message's view, so the agent
 *   reads it (`notebook.read()`);
 * - a **variable** of the open notebook's kernel (`@df`): its summary (`DataFrame 1,000 x
 *   12 (...)`, from `GET agent/variables`) travels in the message's view.
 *
 * `mentionAt` finds the `@word` being typed at the caret; `rankMentions` picks the
 * candidates it matches (`file:`, `cell:` and `var:` narrow to one kind); `applyMention`
 * puts the picked one's token in the text; `keptMentions` drops, at send time, a mention
 * whose token the person deleted from the text.
 */

/** A mention the message's view carries (the server's `view.mentions` items). */
export type IMention =
  | { kind: 'cell'; cell: number; cell_id?: string; path?: string }
  | { kind: 'variable'; name: string; summary?: string };

/** One line of the `@` popup. */
export interface IMentionItem {
  kind: 'file' | 'cell' | 'variable';
  /** What the popup shows, and what the query matches. */
  label: string;
  /** The line's help text (a cell's first line, a variable's summary, "folder"). */
  detail: string;
  /** What replaces the `@word` in the text (with its `@`). */
  token: string;
  /** For a cell or a variable: what the view carries. */
  mention?: IMention;
  /** For a file: the contents path attached. */
  attach?: string;
  /** A folder: picking it lists its entries (the token ends with `/`). */
  folder?: boolean;
}

/** The `@word` being typed at `caret`: where its `@` is and what follows it; or null. */
export function mentionAt(text: string, caret: number): { start: number; query: string } | null {
  const before = text.slice(0, caret);
  const match = /(^|\s)@([^\s@]*)$/.exec(before);
  if (!match) {
    return null;
  }
  const start = before.length - match[2].length - 1;
  return { start, query: match[2] };
}

const KINDS: { [prefix: string]: IMentionItem['kind'] } = {
  'file:': 'file',
  'cell:': 'cell',
  'var:': 'variable'
};

/** The query without its kind prefix, and the kind it narrows to (if any). */
export function splitQuery(query: string): { kind: IMentionItem['kind'] | null; text: string } {
  for (const [prefix, kind] of Object.entries(KINDS)) {
    if (query.toLowerCase().startsWith(prefix)) {
      return { kind, text: query.slice(prefix.length) };
    }
  }
  return { kind: null, text: query };
}

/**
 * The candidates `query` matches, best first, at most `limit`: a label that starts with
 * the text before one that contains it; variables, then cells, then files, in their order.
 */
export function rankMentions(
  query: string,
  candidates: readonly IMentionItem[],
  limit = 12
): IMentionItem[] {
  const { kind, text } = splitQuery(query);
  const want = text.toLowerCase();
  const order = { variable: 0, cell: 1, file: 2 };
  const scored: { item: IMentionItem; score: number; index: number }[] = [];
  candidates.forEach((item, index) => {
    if (kind && item.kind !== kind) {
      return;
    }
    const label = item.label.toLowerCase();
    const base = label.slice(label.lastIndexOf('/', label.length - 2) + 1);
    let score: number;
    if (!want || label.startsWith(want) || base.startsWith(want)) {
      score = 0;
    } else if (label.includes(want)) {
      score = 1;
    } else {
      return;
    }
    scored.push({ item, score: score * 10 + order[item.kind], index });
  });
  scored.sort((a, b) => a.score - b.score || a.index - b.index);
  return scored.slice(0, limit).map(s => s.item);
}

/** `text` with the `@word` from `start` to `caret` replaced by `token` (and a space). */
export function applyMention(
  text: string,
  start: number,
  caret: number,
  token: string,
  folder = false
): { text: string; caret: number } {
  const tail = folder ? '' : ' ';
  const after = text.slice(caret).replace(/^\S*/, '');
  const inserted = token + (after.startsWith(' ') ? '' : tail);
  return { text: text.slice(0, start) + inserted + after, caret: start + inserted.length };
}

/** The token a mention shows in the text. */
export function mentionToken(mention: IMention): string {
  return mention.kind === 'cell' ? `@cell:${mention.cell}` : `@${mention.name}`;
}

/** The mentions whose token is still in `text` (once each, in their order). */
export function keptMentions(text: string, mentions: readonly IMention[]): IMention[] {
  const seen = new Set<string>();
  return mentions.filter(m => {
    const token = mentionToken(m);
    const at = new RegExp(`(^|\\s)${token.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?=$|[\\s.,;:!?)])`);
    if (seen.has(token) || !at.test(text)) {
      return false;
    }
    seen.add(token);
    return true;
  });
}

/** A cell's popup line: its index, its first non-blank line; `path` its notebook (the
 * mention keeps it: the person may open another notebook before sending). */
export function cellItem(
  index: number,
  id: string | undefined,
  source: string,
  path?: string
): IMentionItem {
  const first = source.split('\n').find(line => line.trim()) ?? '(empty)';
  const mention: IMention = { kind: 'cell', cell: index };
  if (id) {
    mention.cell_id = id;
  }
  if (path) {
    mention.path = path;
  }
  return {
    kind: 'cell',
    label: `cell:${index}`,
    detail: first.length > 60 ? `${first.slice(0, 59)}…` : first,
    token: `@cell:${index}`,
    mention
  };
}

/** A variable's popup line (from `GET agent/variables`). */
export function variableItem(v: { name: string; type?: string; summary?: string }): IMentionItem {
  const summary = v.summary || v.type || '';
  return {
    kind: 'variable',
    label: v.name,
    detail: summary,
    token: `@${v.name}`,
    mention: summary ? { kind: 'variable', name: v.name, summary } : { kind: 'variable', name: v.name }
  };
}

/** A file's or folder's popup line (a contents entry). */
export function fileItem(path: string, folder: boolean): IMentionItem {
  return folder
    ? { kind: 'file', label: `${path}/`, detail: 'folder', token: `@${path}/`, folder: true }
    : { kind: 'file', label: path, detail: 'attach this file', token: `@${path}`, attach: path };
}

/** The folder whose entries a file query lists (`data/sa` lists `data`; `` the root). */
export function queryFolder(query: string): string {
  const { text } = splitQuery(query);
  const cut = text.lastIndexOf('/');
  return cut < 0 ? '' : text.slice(0, cut);
}
