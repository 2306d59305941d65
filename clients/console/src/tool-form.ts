import type { PendingToolCall } from '../../typescript/src/client.js';
import { h, errorText } from './dom.js';
import { checkSchema } from './schema-check.js';
import { client } from './state.js';

/**
 * The tool calls a session waits on, each with a form for its result. The
 * JSON is parsed and checked against the tool's output_schema in the page
 * first; only a result that passes is submitted.
 */
export function renderPending(container: HTMLElement, sessionId: string, calls: PendingToolCall[], schemas: Map<string, unknown>, onDone: () => void): void {
  // A form still pending is kept as it is, so a refresh never wipes what the person is typing. The output_schema
  // comes from the stream's tool.call_requested, which may arrive after the list: until then the form cannot check
  // a result and waits. It is rebuilt once the schema (or its absence) is known, keeping the text typed into it.
  const existing = new Map([...container.querySelectorAll<HTMLFormElement>('form[data-call]')].map((f) => [f.dataset.call!, f]));
  const formFor = (c: PendingToolCall): HTMLElement => {
    const old = existing.get(c.tool_call_id);
    const known = schemas.has(c.tool_call_id);
    if (old && old.dataset.known === String(known)) return old;
    const form = callForm(sessionId, c, known, schemas.get(c.tool_call_id), onDone);
    const typed = old?.querySelector('textarea');
    if (typed) form.querySelector('textarea')!.value = typed.value;
    return form;
  };
  container.replaceChildren(...calls.filter((c) => c.kind !== 'custom').map(formFor));
}

function callForm(sessionId: string, call: PendingToolCall, known: boolean, schema: unknown, onDone: () => void): HTMLElement {
  const input = h('textarea', { 'aria-label': `result of ${call.tool_call_id}`, spellcheck: 'false' });
  input.value = '{\n  \n}';
  const errors = h('div', { class: 'errors', role: 'alert' });
  const submit = async (isError: boolean) => {
    errors.textContent = '';
    let value: unknown;
    try {
      value = JSON.parse(input.value);
    } catch (err) {
      errors.textContent = `Not valid JSON: ${errorText(err)}`;
      return;
    }
    const problems = isError ? [] : checkSchema(schema, value);
    if (problems.length) {
      errors.textContent = `Does not match the tool's output_schema:\n${problems.join('\n')}`;
      return;
    }
    try {
      await client().sessions.submitToolResult(sessionId, call, value, { isError });
      onDone();
    } catch (err) {
      errors.textContent = errorText(err);
    }
  };
  return h(
    'form',
    { class: 'tool-call', 'data-call': call.tool_call_id, 'data-known': String(known), onsubmit: (e: Event) => (e.preventDefault(), known && void submit(false)) },
    h('strong', {}, `${call.tool_name}`),
    h('span', { class: 'muted' }, ` ${call.tool_call_id} waits for a result`),
    h('pre', {}, JSON.stringify(call.arguments, null, 2)),
    !known ? h('p', { class: 'muted' }, 'Waiting for the call’s output_schema from the stream…') : schema ? h('details', {}, h('summary', {}, 'output_schema'), h('pre', {}, JSON.stringify(schema, null, 2))) : h('p', { class: 'muted' }, 'This tool declares no output_schema.'),
    input,
    errors,
    h('div', { class: 'row' }, h('button', { type: 'submit', disabled: !known }, 'Submit result'), h('button', { type: 'button', disabled: !known, onclick: () => void submit(true) }, 'Report as error')),
  );
}
