import { webhookSend } from '../domain/actors/webhook.js';
import type { Outbox } from '../domain/actors/address.js';
import type { Crossing } from '../lib/budgets/budget-counters.js';
import { thresholdData } from '../lib/budgets/threshold-data.js';
import type { Logger } from '../lib/log/logger.js';
import type { WebhookConfigStore } from '../store/webhook-configs.js';

/**
 * Where an org's or a key's budget threshold goes: a `budget.threshold_reached` webhook to every agent webhook of
 * the org that takes the type. These budgets belong to no session, so there is no ledger to record them in, and
 * webhooks are configured per agent, so the org's subscribers are its agents' webhooks. A session's thresholds go
 * to its ledger instead (the router-proxy actor hands them to the turn).
 */
export function budgetThresholdWebhooks(configs: Pick<WebhookConfigStore, 'subscribers'>, outbox: Outbox, log: Logger): (c: Crossing, orgId: string) => void {
  return (c, orgId) => {
    if (c.ref.scope === 'session') return;
    const id = `budget:${c.ref.scope}:${c.ref.id}:${c.period}:${c.threshold}`;
    const body = { id, type: 'budget.threshold_reached' as const, created_at: new Date().toISOString(), data: thresholdData(c, Date.now()) };
    void configs
      .subscribers(orgId, 'budget.threshold_reached')
      .then((agents) => outbox.send(agents.map((agentId) => webhookSend({ kind: 'budget.threshold_reached', org_id: orgId, agent_id: agentId, body }))))
      .catch((err) => log.warn({ err, org_id: orgId }, 'could not send the budget threshold webhook'));
  };
}
