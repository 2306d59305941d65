/** Tiny DOM helpers. Text goes in as text nodes only (never HTML), so API data cannot inject markup. */
type Child = Node | string | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string | boolean | ((e: Event) => void)> = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (typeof v === 'function') el.addEventListener(k.replace(/^on/, ''), v);
    else if (v === true) el.setAttribute(k, '');
    else if (v !== false) el.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} is missing from index.html`);
  return el as T;
}

export function clear(el: Element): void {
  el.replaceChildren();
}

let statusTimer: ReturnType<typeof setTimeout> | undefined;

/** The one status line under the header; errors stay until the next message. */
export function status(text: string, isError = false): void {
  const el = byId('status');
  el.textContent = text;
  el.classList.toggle('error', isError);
  clearTimeout(statusTimer);
  if (!isError && text) statusTimer = setTimeout(() => (el.textContent = ''), 4000);
}

export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
