import { byId, errorText, h, status } from './dom.js';
import { client, state } from './state.js';

/** The selected agent's webhook delivery log, newest first, with redelivery. */
export async function loadDeliveries(): Promise<void> {
  const body = byId('deliveries').querySelector('tbody')!;
  const agentId = state.agentId;
  byId('webhook-agent').textContent = agentId ? `of ${agentId}` : '';
  if (!agentId) return void body.replaceChildren();
  const { deliveries } = await client().webhooks.deliveries(agentId, { limit: 50 });
  body.replaceChildren(
    ...deliveries.map((d) =>
      h(
        'tr',
        { 'data-delivery': d.id },
        h('td', {}, d.id),
        h('td', {}, d.event_type),
        h('td', { class: `st-${d.status}` }, d.status),
        h('td', {}, String(d.attempts)),
        h('td', {}, d.last_status_code !== null ? String(d.last_status_code) : (d.last_error ?? '-')),
        h('td', {}, d.updated_at),
        h(
          'td',
          {},
          h('button', {
            type: 'button',
            onclick: () =>
              client()
                .webhooks.redeliver(agentId, d.id)
                .then(() => (status(`Redelivery of ${d.id} queued.`), loadDeliveries()))
                .catch((err) => status(errorText(err), true)),
          }, 'Redeliver'),
        ),
      ),
    ),
  );
  if (!deliveries.length) body.append(h('tr', {}, h('td', { colspan: '7', class: 'muted' }, 'No deliveries yet.')));
}

export function wireWebhooks(): void {
  byId('webhook-refresh').addEventListener('click', () => void loadDeliveries().catch((err) => status(errorText(err), true)));
}
