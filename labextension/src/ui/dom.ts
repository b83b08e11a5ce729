/** Small DOM helpers of the panel's hand-drawn views (the Memory view's form and list). */
/** An element with a class (and a text). */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

/** A labelled text field (the label is visible; the field's accessible name is it). */
export function field<T extends HTMLInputElement | HTMLTextAreaElement>(
  label: string,
  input: T,
  className: string
): HTMLLabelElement {
  const l = el('label', className);
  const span = el('span', 'jp-agent-field-label', label);
  l.append(span, input);
  return l;
}

/** Make `parent`'s children exactly `children`, in order, moving as few nodes as it can. */
export function syncChildren(parent: HTMLElement, children: HTMLElement[]): void {
  children.forEach((child, i) => {
    if (parent.children[i] !== child) {
      parent.insertBefore(child, parent.children[i] ?? null);
    }
  });
  while (parent.children.length > children.length) {
    parent.lastElementChild!.remove();
  }
}
