import { TERMINAL_BATCH_STATUSES, type Batch } from '../../typescript/src/client.js';
import { byId, errorText, h, status } from './dom.js';
import { client } from './state.js';

let watching = 0;

function render(b: Batch): void {
  const total = b.sessions.length;
  const done = b.counts.completed + b.counts.failed;
  byId('batch').replaceChildren(
    h('p', {}, h('strong', { class: `st-${b.status}` }, b.status), ` · ${done} of ${total} done · ${b.counts.completed} completed, ${b.counts.failed} failed, ${b.counts.running} running, ${b.counts.queued} queued`),
    h('progress', { max: String(total), value: String(done), 'aria-label': 'batch progress' }),
    h(
      'table',
      {},
      h('thead', {}, h('tr', {}, h('th', {}, '#'), h('th', {}, 'Session'), h('th', {}, 'Status'), h('th', {}, 'Last message'), h('th', {}, 'Error'))),
      h('tbody', {}, ...b.sessions.slice(0, 200).map((s) => h('tr', {}, h('td', {}, String(s.index)), h('td', {}, s.session_id ?? '-'), h('td', {}, s.status), h('td', { class: `st-${s.last_message_status ?? ''}` }, s.last_message_status ?? '-'), h('td', {}, s.error ?? '')))),
    ),
  );
}

/** Polls the batch once a second until it is terminal or another batch is watched. */
async function watch(id: string): Promise<void> {
  const mine = ++watching;
  // The previous batch goes at once: left under an error about this one, it would read as this one's.
  byId('batch').replaceChildren();
  status('');
  try {
    for (let i = 0; i < 3600 && mine === watching; i++) {
      const b = await client().batches.get(id);
      if (mine !== watching) return;
      render(b);
      if ((TERMINAL_BATCH_STATUSES as readonly string[]).includes(b.status)) return;
      await new Promise((r) => setTimeout(r, 1000));
    }
  } catch (err) {
    // A batch no longer watched has nothing to say.
    if (mine === watching) status(errorText(err), true);
  }
}

export function wireBatches(): void {
  byId('batch-form').addEventListener('submit', (e) => {
    e.preventDefault();
    void watch(byId<HTMLInputElement>('batch-id').value.trim());
  });
}
