/**
 * Where the `@` popup's candidates come from (`mentions.ts` ranks them): the files of the
 * folder being typed (the contents API, through the documents service), the cells of the
 * notebook the person works in, and its kernel's variables (`GET agent/variables`, kept a
 * couple of seconds so typing does not ask at each key; a failure is not kept). A source
 * that fails (no kernel, a busy one, a folder that is not there) gives nothing: the others
 * still show.
 */
import type { IKernelVariable } from '../api/types';
import {
  cellItem,
  fileItem,
  type IMentionItem,
  queryFolder,
  rankMentions,
  splitQuery,
  variableItem
} from './mentions';

/** What the sources read from the application. */
export interface IMentionSources {
  /** The path of the document the person works in, or null. */
  docPath(): string | null;
  /** The cells of the notebook the person works in (none when it is not a notebook). */
  cells(): { id?: string; source: string }[];
  /** The entries of a contents folder (`` the root). */
  listFolder(path: string): Promise<{ path: string; folder: boolean }[]>;
  /** The variables of the kernel of the notebook at `path`. */
  variables(path: string): Promise<IKernelVariable[]>;
}

const KEEP_MS = 2000;

/** The `@` candidates for one chat view (see the module comment). */
export function mentionCandidates(
  sources: IMentionSources
): (query: string) => Promise<IMentionItem[]> {
  let kept: { path: string; at: number; items: IMentionItem[] } | null = null;
  const variables = async (path: string): Promise<IMentionItem[]> => {
    if (kept && kept.path === path && Date.now() - kept.at < KEEP_MS) {
      return kept.items;
    }
    let found: IKernelVariable[];
    try {
      found = await sources.variables(path);
    } catch {
      return []; // no kernel, or a busy one: the next key asks again
    }
    const items = found.map(variableItem);
    kept = { path, at: Date.now(), items };
    return items;
  };
  return async (query: string) => {
    const { kind } = splitQuery(query);
    const path = sources.docPath();
    const notebook = path?.endsWith('.ipynb') ? path : null;
    const [vars, files] = await Promise.all([
      notebook && (kind === null || kind === 'variable') ? variables(notebook) : [],
      kind === null || kind === 'file'
        ? sources.listFolder(queryFolder(query)).catch(() => [])
        : []
    ]);
    const cells =
      notebook && (kind === null || kind === 'cell')
        ? sources.cells().map((c, index) => cellItem(index, c.id, c.source, notebook))
        : [];
    const entries = files
      .filter(f => !f.path.split('/').pop()?.startsWith('.'))
      .map(f => fileItem(f.path, f.folder));
    return rankMentions(query, [...vars, ...cells, ...entries]);
  };
}
