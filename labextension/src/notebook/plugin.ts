/** The plugin of the documents service (`IAgentDocuments`, see `documents.ts`). */
import {
  ILabShell,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { INotebookTracker } from '@jupyterlab/notebook';

import { DocumentsService, IAgentDocuments } from './documents';

/** The documents the person works in, as the chats see and change them. */
export const documentsPlugin: JupyterFrontEndPlugin<IAgentDocuments> = {
  id: 'jupyter-agent:documents',
  description: 'The documents the person works in, as the agent chats see and change them.',
  autoStart: true,
  optional: [INotebookTracker, ILabShell, IDocumentManager],
  provides: IAgentDocuments,
  activate: (
    app: JupyterFrontEnd,
    notebooks: INotebookTracker | null,
    labShell: ILabShell | null,
    docManager: IDocumentManager | null
  ): IAgentDocuments => new DocumentsService(app, notebooks, labShell, docManager)
};
