import { TERMINAL_BATCH_STATUSES, type Batch, type BatchProgress } from '../../typescript/src/client.js';
import { byId, errorText, h, status } from './dom.js';
import { client } from './state.js';

/** Rows the table shows; a batch holds up to 10,000 items. */
const ROWS = 200;
/** How often a batch of more than ROWS items has its items read again; its counts are read every second. */
const LARGE_ITEMS_EVERY_MS = 15_000;

let watching = 0;

function render(p: BatchProgress, items: Batch['sessions']): void {
  const c = p.counts;
  const total = c.queued + c.running + c.completed + c.failed;
  const done = c.completed + c.failed;
  byId('batch').replaceChildren(
    h('p', {}, h('strong', { class: `st-${p.status}` }, p.status), ` · ${done} of ${total} done · ${c.completed} completed, ${c.failed} failed, ${c.running} running, ${c.queued} queued`),
    h('progress', { max: String(total), value: String(done), 'aria-label': 'batch progress' }),
    h(
      'table',
      {},
      h('thead', {}, h('tr', {}, h('th', {}, '#'), h('th', {}, 'Session'), h('th', {}, 'Status'), h('th', {}, 'Last message'), h('th', {}, 'Error'))),
      h('tbody', {}, ...items.slice(0, ROWS).map((s) => h('tr', {}, h('td', {}, String(s.index)), h('td', {}, s.session_id ?? '-'), h('td', {}, s.status), h('td', { class: `st-${s.last_message_status ?? ''}` }, s.last_message_status ?? '-'), h('td', {}, s.error ?? '')))),
    ),
    ...(items.length > ROWS ? [h('p', { class: 'muted' }, `The first ${ROWS} of ${items.length} items; their rows are read again every ${LARGE_ITEMS_EVERY_MS / 1000} s.`)] : []),
  );
}

/**
 * Polls the batch once a second until it is terminal or another batch is watched. A batch that fits the table is
 * read whole; a larger one (up to 10,000 items) has its status and counts read by the light read
 * (include_sessions=false) and its items every LARGE_ITEMS_EVERY_MS, and once more when it ends.
 */
async function watch(id: string): Promise<void> {
  const mine = ++watching;
  // The previous batch goes at once: left under an error about this one, it would read as this one's.
  byId('batch').replaceChildren();
  status('');
  try {
    let items: Batch['sessions'] = [];
    let itemsAt = 0;
    for (let i = 0; i < 3600 && mine === watching; i++) {
      const due = i === 0 || items.length <= ROWS || Date.now() - itemsAt >= LARGE_ITEMS_EVERY_MS;
      let p: BatchProgress = due ? await client().batches.get(id) : await client().batches.progress(id);
      const terminal = (TERMINAL_BATCH_STATUSES as readonly string[]).includes(p.status);
      if (due || terminal) {
        const b = due ? (p as Batch) : await client().batches.get(id);
        [p, items, itemsAt] = [b, b.sessions, Date.now()];
      }
      if (mine !== watching) return;
      render(p, items);
      if (terminal) return;
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
