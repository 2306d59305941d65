import type { PendingToolCall } from '../../typescript/src/client.js';
import { h, errorText } from './dom.js';
import { checkSchema } from './schema-check.js';
import { client } from './state.js';

/**
 * The tool calls a session waits on, each with a form for its result. The
 * JSON is parsed and checked against the tool's output_schema in the page
 * first; only a result that passes is submitted.
 */
export function renderPending(container: HTMLElement, sessionId: string, calls: PendingToolCall[], onDone: () => void): void {
  // A form still pending is kept as it is, so a refresh never wipes what the person is typing. Each call comes
  // with its tool's output_schema, so a form can check a result from the moment it is shown.
  const existing = new Map([...container.querySelectorAll<HTMLFormElement>('form[data-call]')].map((f) => [f.dataset.call!, f]));
  // A call waiting for its confirmation is answered in the transcript (Approve / Deny), not with a result.
  container.replaceChildren(...calls.filter((c) => c.kind !== 'custom' && !c.awaiting_confirmation).map((c) => existing.get(c.tool_call_id) ?? callForm(sessionId, c, onDone)));
}

function callForm(sessionId: string, call: PendingToolCall, onDone: () => void): HTMLElement {
  const schema = call.output_schema;
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
    { class: 'tool-call', 'data-call': call.tool_call_id, onsubmit: (e: Event) => (e.preventDefault(), void submit(false)) },
    h('strong', {}, `${call.tool_name}`),
    h('span', { class: 'muted' }, ` ${call.tool_call_id} waits for a result`),
    h('pre', {}, JSON.stringify(call.arguments, null, 2)),
    schema ? h('details', {}, h('summary', {}, 'output_schema'), h('pre', {}, JSON.stringify(schema, null, 2))) : h('p', { class: 'muted' }, 'This tool declares no output_schema.'),
    input,
    errors,
    h('div', { class: 'row' }, h('button', { type: 'submit' }, 'Submit result'), h('button', { type: 'button', onclick: () => void submit(true) }, 'Report as error')),
  );
}
