/**
 * The panel's small shared widgets: a labelled button, a markdown block (rendered by
 * JupyterLab's rendermime, untrusted) and a text block; and what item widgets need from
 * the application (`IItemContext`, made by `notebook/documents.ts`).
 */
import type { IEditorLanguageRegistry } from '@jupyterlab/codemirror';
import { IRenderMimeRegistry, MimeModel } from '@jupyterlab/rendermime';
import type { LabIcon } from '@jupyterlab/ui-components';
import { Panel, Widget } from '@lumino/widgets';

/** What item widgets need from the application. */
export interface IItemContext {
  rendermime: IRenderMimeRegistry;
  languages: IEditorLanguageRegistry | null;
  /** Insert code as a new cell below the active cell of the open notebook. */
  insertCell: (code: string) => Promise<boolean>;
}

/** A small button with a label, an accessible name and a click handler. */
export function button(
  label: string,
  title: string,
  onClick: () => void,
  className = '',
  icon?: LabIcon
): HTMLButtonElement {
  const b = document.createElement('button');
  b.type = 'button';
  b.className = `jp-agent-button ${className}`.trim();
  if (icon) {
    // An icon (JupyterLab's, themed); the label stays as the accessible name.
    icon.element({ container: b, tag: 'span', elementSize: 'normal' });
    b.classList.add('jp-agent-icon-button');
  } else {
    b.textContent = label;
  }
  b.title = title;
  b.setAttribute('aria-label', title);
  b.addEventListener('click', ev => {
    ev.preventDefault();
    onClick();
  });
  return b;
}

/** Markdown rendered by JupyterLab's rendermime (sanitized: untrusted). */
export class MarkdownWidget extends Panel {
  constructor(
    private readonly rendermime: IRenderMimeRegistry,
    className: string,
    text: string
  ) {
    super();
    this.addClass(className);
    this.setText(text);
  }

  setText(text: string): void {
    if (text === this._text) {
      return;
    }
    this._text = text;
    const renderer = this.rendermime.createRenderer('text/markdown');
    const model = new MimeModel({ data: { 'text/markdown': text }, trusted: false });
    void renderer.renderModel(model).then(() => {
      if (this.isDisposed || this._text !== text) {
        renderer.dispose();
        return;
      }
      for (const w of [...this.widgets]) {
        w.dispose();
      }
      this.addWidget(renderer);
    });
  }

  private _text: string | null = null;
}

/** A text block (`<div>` with pre-wrapped text): steering messages, notes, streaming. */
export class TextWidget extends Widget {
  constructor(className: string, text: string, label?: string) {
    super();
    this.addClass(className);
    if (label) {
      const l = document.createElement('div');
      l.className = 'jp-agent-label';
      l.textContent = label;
      this.node.appendChild(l);
    }
    this.body = document.createElement('div');
    this.body.className = 'jp-agent-text';
    this.node.appendChild(this.body);
    this.setText(text);
  }

  setText(text: string): void {
    if (this.body.textContent !== text) {
      this.body.textContent = text;
    }
  }

  setLabel(label: string): void {
    const l = this.node.querySelector('.jp-agent-label');
    if (l) {
      l.textContent = label;
    }
  }

  readonly body: HTMLDivElement;
}
