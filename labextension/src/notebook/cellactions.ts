/**
 * Cell actions (pure logic: no `@jupyterlab/*` or DOM import, so jest tests it alone):
 * what each action sends, when Fix applies, and which chat a notebook's actions use.
 *
 * - **Explain**: the cell and its outputs explained;
 * - **Fix** (a cell whose last output is an error): the agent reads the traceback and the
 *   person's kernel state and proposes the fix as an edit of the notebook (a proposal the
 *   person applies or not);
 * - **Ask about this cell**: the message box focused, the cell named, nothing sent;
 * - **Edit with the agent**: an instruction, the result proposed as an edit.
 *
 * Each goes to the notebook's chat (one per notebook, `NotebookChats`), with the view
 * naming the cell (`{path, cell, cell_id}`).
 */

/** The cell actions. */
export type CellAction = 'explain' | 'fix' | 'ask' | 'edit';

/** What the cell action sends (or, for `ask`, drafts) about cell `index`. */
export function cellMessage(action: CellAction, index: number, instruction = ''): string {
  switch (action) {
    case 'explain':
      return `Explain cell ${index} of my notebook and its outputs.`;
    case 'fix':
      return (
        `Cell ${index} of my notebook fails. Read its traceback (and my kernel's state if it ` +
        'helps), then propose the fix as an edit of the notebook with notebook.propose; do ' +
        'not apply it.'
      );
    case 'edit':
      return (
        `Edit cell ${index} of my notebook: ${instruction.trim()}\n` +
        'Propose the change as an edit of the notebook with notebook.propose; do not apply it.'
      );
    case 'ask':
      return `About cell ${index}: `;
  }
}

/** Whether a cell's outputs (nbformat JSON) end with an error: Fix applies to it. */
export function endsWithError(outputs: ReadonlyArray<{ output_type?: string }>): boolean {
  const last = outputs[outputs.length - 1];
  return last?.output_type === 'error';
}

/** Where the chats of notebooks are remembered (the browser's storage in the panel). */
export interface IChatStore {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

const KEY = 'jupyter-agent:notebook-chats';

/** The chat each notebook's cell actions use (one per notebook path). */
export class NotebookChats {
  constructor(private readonly store: IChatStore | null) {}

  /** The notebook's chat, if it has one. */
  get(path: string): string | null {
    return this.all()[path] ?? null;
  }

  /** The notebook's chat is now `chatId`. */
  set(path: string, chatId: string): void {
    const all = this.all();
    all[path] = chatId;
    this.store?.setItem(KEY, JSON.stringify(all));
  }

  private all(): { [path: string]: string } {
    try {
      const raw = JSON.parse(this.store?.getItem(KEY) ?? '{}');
      return raw && typeof raw === 'object' && !Array.isArray(raw) ? raw : {};
    } catch {
      return {};
    }
  }
}
