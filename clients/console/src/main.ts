import { byId, errorText, status } from './dom.js';
import { wireBatches } from './batches-view.js';
import { loadAgents, loadSessions, wireSessions } from './sessions-view.js';
import { connect, forget, savedKey } from './state.js';
import { loadDeliveries, wireWebhooks } from './webhooks-view.js';
import { loadSchedules, wireSchedules } from './schedules-view.js';

/**
 * The Troupe console: a static page over the public API and nothing else.
 * Everything it shows comes through the TypeScript client with the key the
 * person entered.
 */
async function start(apiKey: string): Promise<void> {
  const client = connect(apiKey);
  try {
    await client.agents.list({ limit: 1 });
  } catch (err) {
    forget();
    status(`Could not connect: ${errorText(err)}`, true);
    return;
  }
  byId('key-form').hidden = true;
  byId('disconnect').hidden = false;
  byId('tabs').hidden = false;
  byId('app').hidden = false;
  status('Connected.');
  await Promise.all([loadAgents(() => void loadDeliveries().catch((e) => status(errorText(e), true))), loadSessions()]);
}

function wireTabs(): void {
  for (const btn of byId('tabs').querySelectorAll<HTMLButtonElement>('button[data-tab]')) {
    btn.addEventListener('click', () => {
      for (const b of byId('tabs').querySelectorAll('button')) b.classList.toggle('active', b === btn);
      for (const tab of document.querySelectorAll<HTMLElement>('.tab')) tab.hidden = tab.id !== `tab-${btn.dataset.tab}`;
      // The status line speaks for what is on screen: another tab's error would read as this one's.
      status('');
      if (btn.dataset.tab === 'webhooks') void loadDeliveries().catch((e) => status(errorText(e), true));
      if (btn.dataset.tab === 'schedules') void loadSchedules().catch((e) => status(errorText(e), true));
    });
  }
}

function main(): void {
  wireTabs();
  wireSessions();
  wireBatches();
  wireWebhooks();
  wireSchedules();
  byId('key-form').addEventListener('submit', (e) => {
    e.preventDefault();
    void start(byId<HTMLInputElement>('api-key').value.trim());
  });
  byId('disconnect').addEventListener('click', () => {
    forget();
    location.reload();
  });
  const key = savedKey();
  if (key) void start(key);
}

main();
