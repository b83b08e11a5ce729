/**
 * The documents service: what the chats need of the documents the person works in. The
 * document they last worked in (a chat view takes the focus, so "current" is the last
 * document widget), what they have open when they send (path, active cell, selection),
 * a cell inserted into the open notebook, a notebook shown again after a proposal
 * changed it on disk, and a path opened in JupyterLab.
 *
 * Provided under the `IAgentDocuments` token by the `jupyter-agent:documents` plugin; the
 * chat views require it.
 */
import type { ILabShell, JupyterFrontEnd } from '@jupyterlab/application';
import { INotebookTracker, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { InputDialog } from '@jupyterlab/apputils';
import type { IDocumentManager } from '@jupyterlab/docmanager';
import { Token } from '@lumino/coreutils';
import type { Widget } from '@lumino/widgets';

import type { IView } from '../api/types';
import { isAgentNotebook } from './records';

/** The choice of a new notebook in the "Insert the cell into" dialog. */
const NEW_NOTEBOOK = 'A new notebook';

/** What the chats need of the person's documents (see the module comment). */
export interface IAgentDocuments {
  /** The path of the document the person works in, if any. */
  docPath(): string | null;
  /** What the person has open: path, active cell (index and id), selection; or null. */
  getView(): IView | null;
  /** The cells of the notebook the person works in (its model ids and sources); none
   * when the document is not a notebook. */
  cells(): { id?: string; source: string }[];
  /** The entries of a contents folder (`` the root): paths, and which are folders. */
  listFolder(path: string): Promise<{ path: string; folder: boolean }[]>;
  /**
   * Insert code as a new cell below the active cell of the person's open notebook (never
   * a trace or an export of the agent's; with none current, the person picks one of the
   * open notebooks or a new one). Resolves true when the cell was inserted.
   */
  insertCell(code: string): Promise<boolean>;
  /**
   * Show a change a proposal wrote to the notebook at `path` where it is open; returns a
   * remark for the person when it could not (unsaved changes), else null.
   */
  refreshNotebook(path: string): Promise<string | null>;
  /**
   * Open one of the agent's records (a run's trace, a chat's export) in JupyterLab: a
   * notebook opens in the notebook editor with no kernel started (one starts when the
   * person runs a cell), so reading a record costs no kernel.
   */
  openPath(path: string): Promise<void>;
}

/** The token of the documents service. */
export const IAgentDocuments = new Token<IAgentDocuments>(
  'jupyter-agent:IAgentDocuments',
  'The documents the person works in, as the agent chats see and change them.'
);

/** The documents service of one JupyterLab. */
export class DocumentsService implements IAgentDocuments {
  constructor(
    private readonly app: JupyterFrontEnd,
    private readonly notebooks: INotebookTracker | null,
    labShell: ILabShell | null,
    private readonly docManager: IDocumentManager | null = null
  ) {
    labShell?.currentChanged.connect((_, args) => {
      const w = args.newValue as any;
      if (w && w.context && typeof w.context.path === 'string') {
        this.lastDoc = w;
      }
    });
  }

  docPath(): string | null {
    return this.doc()?.context?.path ?? null;
  }

  getView(): IView | null {
    const path = this.docPath();
    if (!path) {
      return null;
    }
    const view: IView = { path };
    const w = this.doc();
    if (w instanceof NotebookPanel) {
      view.cell = w.content.activeCellIndex;
      const cellId = w.content.activeCell?.model.id;
      if (cellId) {
        view.cell_id = cellId;
      }
      const editor = w.content.activeCell?.editor;
      if (editor) {
        const sel = editor.getSelection();
        const from = editor.getOffsetAt(sel.start);
        const to = editor.getOffsetAt(sel.end);
        if (from !== to) {
          view.selection = editor.model.sharedModel
            .getSource()
            .slice(Math.min(from, to), Math.max(from, to));
        }
      }
    }
    return view;
  }

  cells(): { id?: string; source: string }[] {
    const w = this.doc();
    if (!(w instanceof NotebookPanel)) {
      return [];
    }
    return w.content.widgets.map(cell => ({
      id: cell.model.id || undefined,
      source: cell.model.sharedModel.getSource()
    }));
  }

  async listFolder(path: string): Promise<{ path: string; folder: boolean }[]> {
    const model = await this.app.serviceManager.contents.get(path, { content: true });
    const entries = Array.isArray(model.content) ? model.content : [];
    return entries.map((e: { path: string; type: string }) => ({
      path: e.path,
      folder: e.type === 'directory'
    }));
  }

  async insertCell(code: string): Promise<boolean> {
    const panel = await this.insertTarget();
    if (!panel) {
      return false;
    }
    NotebookActions.insertBelow(panel.content);
    panel.content.activeCell?.model.sharedModel.setSource(code);
    this.app.shell.activateById(panel.id);
    return true;
  }

  /** The notebook a cell goes into (see `insertCell`), or null when the person declined. */
  private async insertTarget(): Promise<NotebookPanel | null> {
    // A notebook's metadata is known once its file is loaded (a record just opened may
    // not be yet): wait, then look.
    const panels: NotebookPanel[] = [];
    this.notebooks?.forEach(p => {
      if (!p.isDisposed) {
        panels.push(p);
      }
    });
    await Promise.all(panels.map(p => p.context.ready));
    const mine = (p: NotebookPanel): boolean =>
      !p.isDisposed && !isAgentNotebook(p.model?.getMetadata('jupyter_agent'));
    const current = this.notebooks?.currentWidget ?? null;
    if (current && mine(current)) {
      return current;
    }
    const open = panels.filter(mine);
    const choice = await InputDialog.getItem({
      title: 'Insert the cell into',
      label: current
        ? `${current.context.path} is a record of the agent's; insert the cell into:`
        : 'No notebook is open; insert the cell into:',
      items: [NEW_NOTEBOOK, ...open.map(p => p.context.path)],
      current: open.length ? 1 : 0
    });
    if (!choice.button.accept || !choice.value) {
      return null;
    }
    if (choice.value !== NEW_NOTEBOOK) {
      return open.find(p => p.context.path === choice.value) ?? null;
    }
    // The server's default kernel (the person's Python), so no kernel picker pops up.
    const kernelName = this.app.serviceManager.kernelspecs.specs?.default;
    const created = (await this.app.commands.execute(
      'notebook:create-new',
      kernelName ? { kernelName } : {}
    )) as NotebookPanel;
    await created.context.ready;
    return created;
  }

  async refreshNotebook(path: string): Promise<string | null> {
    // A proposal applied through the contents manager changed the file, not the open
    // view: reload it from disk unless the person has unsaved changes. With real-time
    // collaboration the server edited the shared model: the view shows it already.
    const panel = this.notebooks?.find(p => p.context.path === path);
    if (!panel || panel.isDisposed) {
      return null;
    }
    const context = panel.context;
    if (context.model.collaborative) {
      return null;
    }
    if (context.model.dirty) {
      return (
        `${path} has unsaved changes, so it was not reloaded: the edit is on disk ` +
        '(File › Reload Notebook from Disk shows it; saving first would ask which to keep).'
      );
    }
    await context.revert();
    return null;
  }

  async openPath(path: string): Promise<void> {
    const notebook = path.endsWith('.ipynb');
    if (notebook && this.docManager) {
      const widget = this.docManager.openOrReveal(path, 'Notebook', undefined, {}, {
        shouldStart: false
      });
      if (widget) {
        return;
      }
    }
    await this.app.commands.execute('docmanager:open', {
      path,
      factory: notebook ? 'Notebook' : undefined
    });
  }

  /** The document the person last worked in, else the current notebook. */
  private doc(): any {
    return this.lastDoc && !this.lastDoc.isDisposed ? this.lastDoc : this.notebooks?.currentWidget;
  }

  private lastDoc: Widget | null = null;
}
