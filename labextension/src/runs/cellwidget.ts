/**
 * The widget of a cell the agent ran (python) or a command (bash): its header, its code,
 * its outputs and its digest on demand.
 */
import { Clipboard } from '@jupyterlab/apputils';
import { OutputArea, OutputAreaModel } from '@jupyterlab/outputarea';
import { Panel, Widget } from '@lumino/widgets';

import { button, IItemContext } from '../ui/widgets';
import type { ICellItem } from './state';

/**
 * A cell the agent ran: header (kind, id, status, duration, actions), highlighted code,
 * outputs (OutputArea: images and HTML as in a notebook), and the digest on demand.
 */
export class CellWidget extends Panel {
  constructor(
    private readonly ctx: IItemContext,
    item: ICellItem
  ) {
    super();
    this.addClass('jp-agent-cell');
    this.addClass(`jp-agent-cell-${item.lang}`);
    this.node.dataset.cellId = item.cellId;
    this.item = item;

    this.header = new Widget();
    this.header.addClass('jp-agent-cell-header');
    this.toggle = button('▾', 'Collapse the cell', () => this.setCollapsed(!this._collapsed), 'jp-agent-collapse');
    this.toggle.setAttribute('aria-expanded', 'true');
    this.titleEl = document.createElement('span');
    this.titleEl.className = 'jp-agent-cell-title';
    this.statusEl = document.createElement('span');
    this.statusEl.className = 'jp-agent-cell-status';
    const actions = document.createElement('span');
    actions.className = 'jp-agent-cell-actions';
    this.digestButton = button('Show digest', 'Show what the model saw', () => this.toggleDigest(), 'jp-agent-digest-toggle');
    actions.append(
      this.digestButton,
      button('Copy code', 'Copy the code', () => Clipboard.copyToSystem(this.item.code), 'jp-agent-copy'),
      button('Insert as cell', 'Insert the code as a new cell in the open notebook', () => {
        void this.ctx.insertCell(this.item.code);
      }, 'jp-agent-insert')
    );
    this.header.node.append(this.toggle, this.titleEl, this.statusEl, actions);
    this.addWidget(this.header);

    this.body = new Panel();
    this.body.addClass('jp-agent-cell-body');
    this.code = new Widget({ node: document.createElement('pre') });
    this.code.addClass('jp-agent-code');
    this.code.addClass('cm-s-jupyter');
    this.body.addWidget(this.code);

    if (item.lang === 'python') {
      this.outputModel = new OutputAreaModel({ trusted: false });
      this.outputArea = new OutputArea({ model: this.outputModel, rendermime: ctx.rendermime });
      this.outputArea.addClass('jp-agent-outputs');
      this.body.addWidget(this.outputArea);
    } else {
      this.bashOut = new Widget({ node: document.createElement('pre') });
      this.bashOut.addClass('jp-agent-bash-output');
      this.body.addWidget(this.bashOut);
    }
    this.digest = new Widget({ node: document.createElement('pre') });
    this.digest.addClass('jp-agent-digest');
    this.digest.hide();
    this.body.addWidget(this.digest);
    this.addWidget(this.body);
    this._rendered = '';
    this.render();
  }

  item: ICellItem;

  /** Show the item's current state (cheap when nothing changed). */
  setItem(item: ICellItem): void {
    this.item = item;
    this.render();
  }

  private render(): void {
    const it = this.item;
    const key = JSON.stringify([it.code, it.running, it.status, it.error, it.outputs.length, it.stdout, it.stderr, it.digest, it.durationS, it.executionCount]);
    if (key === this._rendered) {
      return;
    }
    this._rendered = key;
    this.titleEl.textContent =
      it.lang === 'bash' ? `bash · ${it.cellId}` : `${it.executionCount !== null ? `[${it.executionCount}] ` : ''}python · ${it.cellId}`;
    this.statusEl.textContent =
      statusText(it) + (it.durationS !== null && !it.running ? ` · ${it.durationS.toFixed(2)} s` : '');
    this.statusEl.dataset.status = it.status;
    this.toggleClass('jp-mod-running', it.running);
    this.toggleClass('jp-mod-error', it.error);
    this.toggleClass('jp-mod-cancelled', it.status === 'cancelled');
    this.toggleClass('jp-mod-timed-out', it.status === 'timed_out');
    this.renderCode(it);
    if (this.outputModel) {
      this.renderOutputs(it, this.outputModel);
    }
    if (this.bashOut) {
      const pre = this.bashOut.node;
      pre.textContent = '';
      if (it.stdout) {
        pre.appendChild(document.createTextNode(it.stdout));
      }
      if (it.stderr) {
        const err = document.createElement('span');
        err.className = 'jp-agent-stderr';
        err.textContent = it.stderr;
        pre.appendChild(err);
      }
      this.bashOut.setHidden(!it.stdout && !it.stderr);
    }
    this.digest.node.textContent = it.digest ?? '(no digest)';
    this.digestButton.disabled = it.digest === null;
  }

  /**
   * Live outputs are added as they come (the output area merges stream pieces, as in a
   * notebook); at the cell's end its final outputs replace them.
   */
  private renderOutputs(it: ICellItem, model: OutputAreaModel): void {
    if (!it.running) {
      model.fromJSON(it.outputs);
      this._liveShown = -1;
      return;
    }
    if (this._liveShown < 0 || this._liveShown > it.outputs.length) {
      model.clear();
      this._liveShown = 0;
    }
    for (const output of it.outputs.slice(this._liveShown)) {
      if (output.output_type === 'clear_output') {
        model.clear(Boolean(output.wait));
      } else if (output.output_type !== 'update_display_data') {
        model.add(output);
      }
    }
    this._liveShown = it.outputs.length;
  }

  private renderCode(it: ICellItem): void {
    if (this._code === it.code) {
      return;
    }
    this._code = it.code;
    const pre = this.code.node;
    const shown = it.lang === 'bash' ? `$ ${it.code}` : it.code;
    pre.textContent = shown;
    const langs = this.ctx.languages;
    if (langs) {
      const lang = langs.findBest(it.lang === 'bash' ? 'shell' : 'python');
      if (lang) {
        const target = document.createElement('code');
        void langs
          .highlight(shown, lang, target)
          .then(() => {
            if (this._code === it.code && !this.isDisposed) {
              pre.textContent = '';
              pre.appendChild(target);
            }
          })
          .catch(() => undefined);
      }
    }
  }

  setCollapsed(collapsed: boolean): void {
    this._collapsed = collapsed;
    this.body.setHidden(collapsed);
    this.toggle.textContent = collapsed ? '▸' : '▾';
    this.toggle.title = collapsed ? 'Expand the cell' : 'Collapse the cell';
    this.toggle.setAttribute('aria-label', this.toggle.title);
    this.toggle.setAttribute('aria-expanded', String(!collapsed));
    this.toggleClass('jp-mod-collapsed', collapsed);
  }

  toggleDigest(): void {
    const show = this.digest.isHidden;
    this.digest.setHidden(!show);
    this.digestButton.textContent = show ? 'Hide digest' : 'Show digest';
  }

  readonly header: Widget;
  readonly body: Panel;
  readonly code: Widget;
  readonly digest: Widget;
  readonly outputArea: OutputArea | null = null;
  private readonly outputModel: OutputAreaModel | null = null;
  private readonly bashOut: Widget | null = null;
  private readonly toggle: HTMLButtonElement;
  private readonly titleEl: HTMLSpanElement;
  private readonly statusEl: HTMLSpanElement;
  private readonly digestButton: HTMLButtonElement;
  private _collapsed = false;
  private _rendered: string;
  private _code: string | null = null;
  /** How many of a running cell's live outputs the output area shows (-1: final ones). */
  private _liveShown = -1;
}

/** The status label of a cell's header. */
export function statusText(it: ICellItem): string {
  if (it.running) {
    return 'running…';
  }
  switch (it.status) {
    case 'cancelled':
      return 'cancelled';
    case 'timed_out':
      return 'timed out';
    default:
      if (!it.error) {
        return 'ok';
      }
      return it.lang === 'bash' && it.returncode !== null ? `exit ${it.returncode}` : 'error';
  }
}
