import { byId, errorText, h, status } from './dom.js';
import { client, state } from './state.js';

/** The selected agent's webhook delivery log, newest first, with redelivery. */
export async function loadDeliveries(): Promise<void> {
  const body = byId('deliveries').querySelector('tbody')!;
  const agentId = state.agentId;
  byId('webhook-agent').textContent = agentId ? `of ${agentId}` : '';
  byId('webhook-hint').hidden = !!agentId;
  byId('webhook-config').textContent = '';
  if (!agentId) return void body.replaceChildren();
  const [config, { deliveries }] = await Promise.all([client().webhooks.get(agentId), client().webhooks.deliveries(agentId, { limit: 50 })]);
  // An empty log alone does not say why: no webhook, one that sends other events, or one a 410 switched off.
  byId('webhook-config').textContent =
    config.webhook_url === null
      ? `This agent has no webhook. Configure one with PUT /v1/agents/${agentId}/webhook (docs/webhooks.md).`
      : `Sends ${config.event_types.join(', ')} to ${config.webhook_url}.` + (config.disabled_at ? ` Disabled since ${config.disabled_at} by a 410 Gone answer; a PUT re-enables it.` : '');
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
