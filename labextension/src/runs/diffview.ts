/**
 * The view of two runs side by side (`GET agent/runs/{a}/diff/{b}`): both runs (model,
 * program), their totals in two columns (a changed value marked), and where they first
 * part with its diffs (the request's system and conversation, the reply, a cell's code or
 * output, or the data), `+`/`-` lines coloured. What it shows is `diffrows.ts`' (pure).
 */
import { Widget } from '@lumino/widgets';

import type { IRunDiff } from '../api/types';
import { diffLines } from '../notebook/proposals';
import { DIFFS, diffRows, divergenceText } from './diffrows';

/** Two runs side by side (see the module comment). */
export class DiffView extends Widget {
  constructor(body: IRunDiff) {
    super();
    this.addClass('jp-agent-run-diff');
    const head = document.createElement('p');
    head.className = 'jp-agent-diff-where';
    head.textContent = divergenceText(body);
    const table = document.createElement('table');
    table.className = 'jp-agent-diff-totals';
    const top = table.insertRow();
    for (const text of ['', `a: ${body.a.run_id}`, `b: ${body.b.run_id}`]) {
      const th = document.createElement('th');
      th.textContent = text;
      top.appendChild(th);
    }
    for (const [label, a, b, changed] of diffRows(body)) {
      const row = table.insertRow();
      row.classList.toggle('jp-mod-changed', changed);
      for (const text of [label, a, b]) {
        row.insertCell().textContent = text;
      }
    }
    this.node.append(head, table);
    for (const key of DIFFS) {
      const text = body.divergence?.[key];
      if (typeof text !== 'string' || !text) {
        continue;
      }
      const title = document.createElement('h4');
      title.textContent = key.replace(/_diff$/, '');
      const pre = document.createElement('pre');
      pre.className = 'jp-agent-diff';
      for (const line of diffLines(text)) {
        const span = document.createElement('span');
        span.className = `jp-agent-diff-${line.kind}`;
        span.textContent = line.text + '\n';
        pre.appendChild(span);
      }
      this.node.append(title, pre);
    }
  }
}
