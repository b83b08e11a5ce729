/**
 * The recalled block of a run: "recalled 3 memories", collapsed by default,
 * above the run's replies; expanded, the hits (where each comes from, its score, its
 * text). Marked as recalled: these notes were put in front of the model, they are not its
 * words. Text only (`textContent`), never HTML.
 */
import { Widget } from '@lumino/widgets';

import { hitScore, hitSource, IRecallInfo, recallSummary, recallTitle } from './recall';

let nextId = 0;

export class RecallWidget extends Widget {
  constructor(info: IRecallInfo) {
    super();
    this.addClass('jp-agent-recall');
    this.node.setAttribute('role', 'group');
    this.node.setAttribute('aria-label', 'Recalled notes (not the model’s words)');

    const head = document.createElement('div');
    head.className = 'jp-agent-recall-header';
    this.toggle = document.createElement('button');
    this.toggle.type = 'button';
    this.toggle.className = 'jp-agent-button jp-agent-recall-toggle';
    this.toggle.addEventListener('click', ev => {
      ev.preventDefault();
      this.setExpanded(!this._expanded);
    });
    const mark = document.createElement('span');
    mark.className = 'jp-agent-recall-mark';
    mark.textContent = 'recalled · not the model’s words';
    head.append(this.toggle, mark);

    this.list = document.createElement('ol');
    this.list.className = 'jp-agent-recall-hits';
    this.list.id = `jp-agent-recall-hits-${++nextId}`;
    this.toggle.setAttribute('aria-controls', this.list.id);
    this.node.append(head, this.list);
    this.setInfo(info);
    this.setExpanded(false);
  }

  /** Show this recall (cheap when it did not change). */
  setInfo(info: IRecallInfo): void {
    const key = JSON.stringify(info);
    if (key === this._key) {
      return;
    }
    this._key = key;
    this.summary = recallSummary(info.hits);
    this.node.title = recallTitle(info);
    this.list.textContent = '';
    for (const hit of info.hits) {
      const li = document.createElement('li');
      li.className = 'jp-agent-recall-hit';
      li.dataset.kind = String(hit.kind);
      li.dataset.hitId = hit.id;
      const meta = document.createElement('div');
      meta.className = 'jp-agent-recall-source';
      meta.textContent = hitSource(hit);
      const score = hitScore(hit);
      if (score) {
        const s = document.createElement('span');
        s.className = 'jp-agent-recall-score';
        s.textContent = `score ${score}`;
        meta.append(' ', s);
      }
      const text = document.createElement('div');
      text.className = 'jp-agent-text';
      text.textContent = hit.text;
      li.append(meta, text);
      this.list.appendChild(li);
    }
    this.renderToggle();
  }

  /** Show or hide the hits. */
  setExpanded(expanded: boolean): void {
    this._expanded = expanded;
    this.list.hidden = !expanded;
    this.toggleClass('jp-mod-expanded', expanded);
    this.renderToggle();
  }

  get expanded(): boolean {
    return this._expanded;
  }

  private renderToggle(): void {
    this.toggle.textContent = `${this._expanded ? '▾' : '▸'} ${this.summary}`;
    const label = `${this.summary}: ${this._expanded ? 'hide' : 'show'} what was recalled`;
    this.toggle.title = label;
    this.toggle.setAttribute('aria-label', label);
    this.toggle.setAttribute('aria-expanded', String(this._expanded));
  }

  private readonly toggle: HTMLButtonElement;
  private readonly list: HTMLOListElement;
  private summary = '';
  private _expanded = false;
  private _key = '';
}
