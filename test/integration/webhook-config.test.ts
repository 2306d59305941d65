import assert from 'node:assert/strict';
import { newId } from '../../src/domain/ids.js';
import { ROTATION_OVERLAP_MS } from '../../src/store/webhook-configs.js';
import { startHarness, type Harness } from '../support/harness.js';
import type { ErrorBody } from '../support/wire.js';

interface WebhookBody {
  webhook_url: string | null;
  signing_enabled: boolean;
  event_types: string[];
  signing_secret?: string;
}

/** A public IP literal: passes the address rules without any DNS. */
const PUBLIC_URL = 'https://93.184.215.14/hooks/troupe';

describe('webhook configuration', function () {
  this.timeout(30_000);
  let h: Harness;
  let orgId: string;
  let otherAuth: { Authorization: string };

  /** Agents are inserted directly: this suite tests the webhook routes, not agent creation. */
  async function agent(opts: { org?: string; deleted?: boolean } = {}): Promise<string> {
    const id = newId('agent');
    await h.running.core.db.collection('agents').insertOne({
      _id: id as never,
      org_id: opts.org ?? orgId,
      name: 'hook-test',
      active_version_id: null,
      created_at: new Date(),
      deleted_at: opts.deleted ? new Date() : null,
    });
    return id;
  }

  function put(agentId: string, json: unknown, headers: Record<string, string> = {}): Promise<Response> {
    return h.api(`/v1/agents/${agentId}/webhook`, { method: 'PUT', json, headers });
  }

  async function refused(res: Response, status = 400): Promise<ErrorBody['error']> {
    assert.equal(res.status, status);
    return ((await res.json()) as ErrorBody).error;
  }

  before(async () => {
    h = await startHarness({ roles: ['web'] });
    orgId = (await h.running.core.stores.orgs.byName('default'))!._id;
    const other = await h.running.core.stores.orgs.create('webhook-other-org');
    const { key } = await h.running.core.stores.apiKeys.create(other._id, 'api');
    otherAuth = { Authorization: `Bearer ${key}` };
  });
  after(async () => {
    await h?.close();
  });

  it('reports no webhook before one is configured', async () => {
    const res = await h.api(`/v1/agents/${await agent()}/webhook`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { webhook_url: null, signing_enabled: false, event_types: [] });
  });

  it('creates with default event types and returns the secret exactly once', async () => {
    const id = await agent();
    const res = await put(id, { webhook_url: PUBLIC_URL });
    assert.equal(res.status, 200);
    const body = (await res.json()) as WebhookBody;
    assert.equal(body.webhook_url, PUBLIC_URL);
    assert.equal(body.signing_enabled, true);
    assert.deepEqual(body.event_types, ['tool.call_requested']);
    assert.match(body.signing_secret ?? '', /^whsec_[A-Za-z0-9_-]{43}$/);

    const again = (await (await put(id, { webhook_url: PUBLIC_URL + '/v2', event_types: ['session.completed'] })).json()) as WebhookBody;
    assert.equal(again.signing_secret, undefined, 'an update does not return the secret');
    assert.equal(again.webhook_url, PUBLIC_URL + '/v2');
    assert.deepEqual(again.event_types, ['session.completed']);

    const getText = await (await h.api(`/v1/agents/${id}/webhook`)).text();
    assert.ok(!getText.includes(body.signing_secret!), 'GET never returns the secret');
    assert.deepEqual(JSON.parse(getText), { webhook_url: PUBLIC_URL + '/v2', signing_enabled: true, event_types: ['session.completed'] });

    const target = await h.running.core.stores.webhookConfigs.getForDelivery(orgId, id);
    assert.deepEqual(target, { url: PUBLIC_URL + '/v2', event_types: ['session.completed'], secrets: [body.signing_secret] });
  });

  it('stores the secret sealed, never in the clear, and never logs it', async () => {
    const id = await agent();
    const { signing_secret } = (await (await put(id, { webhook_url: PUBLIC_URL })).json()) as WebhookBody;
    const raw = await h.running.core.db.collection('webhook_configs').findOne({ agent_id: id });
    assert.ok(raw);
    const text = JSON.stringify(raw);
    assert.ok(!text.includes(signing_secret!), 'the stored document does not contain the secret');
    assert.ok(!text.includes(signing_secret!.slice(6)), 'nor its random part');
    assert.deepEqual(Object.keys(raw.secret).sort(), ['ct', 'iv', 'kid', 'tag']);
    assert.ok(!h.logs().includes(signing_secret!.slice(6)), 'no log line carries the secret');
  });

  it('accepts every allowed event type and removes duplicates', async () => {
    const all = ['tool.call_requested', 'session.completed', 'session.failed', 'batch.completed', 'batch.failed', 'batch.partial_failed'];
    const body = (await (await put(await agent(), { webhook_url: PUBLIC_URL, event_types: [...all, 'session.failed', 'tool.call_requested'] })).json()) as WebhookBody;
    assert.deepEqual(body.event_types, all);
  });

  it('400s an unknown event type, a missing or relative URL and unknown fields', async () => {
    const id = await agent();
    const bad = await refused(await put(id, { webhook_url: PUBLIC_URL, event_types: ['tool.call_requested', 'message.created'] }));
    assert.equal(bad.param, 'event_types[1]');
    assert.match(bad.message, /must be one of/);
    assert.equal((await refused(await put(id, {}))).param, 'webhook_url');
    assert.equal((await refused(await put(id, { webhook_url: '/relative' }))).code, 'invalid_webhook_url');
    assert.equal((await refused(await put(id, { webhook_url: PUBLIC_URL, signing_secret: 'mine' }))).param, 'signing_secret');
    assert.equal((await refused(await put(id, { webhook_url: PUBLIC_URL, event_types: 'session.completed' }))).param, 'event_types');
    assert.equal(await h.running.core.db.collection('webhook_configs').countDocuments({ agent_id: id }), 0, 'nothing stored');
  });

  it('400s http, credentials and every non-public address', async () => {
    const id = await agent();
    assert.equal((await refused(await put(id, { webhook_url: 'http://93.184.215.14/hook' }))).code, 'webhook_url_not_https');
    for (const u of ['https://user:pw@93.184.215.14/hook', 'https://user@93.184.215.14/hook']) {
      assert.equal((await refused(await put(id, { webhook_url: u }))).code, 'webhook_url_has_credentials', u);
    }
    const hosts = ['127.0.0.1', '10.1.2.3', '172.16.5.4', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1',
      '[::1]', '[fd00::1]', '[fe80::1]', '[::ffff:127.0.0.1]', '[::ffff:10.0.0.1]', '[64:ff9b::a9fe:a9fe]', '[64:ff9b::10.0.0.1]', 'localhost'];
    for (const host of hosts) {
      const err = await refused(await put(id, { webhook_url: `https://${host}/hook` }));
      assert.equal(err.code, 'webhook_url_not_public', host);
      assert.equal(err.param, 'webhook_url');
    }
    assert.equal((await refused(await put(id, { webhook_url: 'https://no-such-host.invalid/hook' }))).code, 'webhook_url_unresolvable');
    assert.equal(await h.running.core.db.collection('webhook_configs').countDocuments({ agent_id: id }), 0);
  });

  it('415s a PUT that is not application/json', async () => {
    const id = await agent();
    const body = JSON.stringify({ webhook_url: PUBLIC_URL });
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/merge-patch+json']) {
      const res = await h.api(`/v1/agents/${id}/webhook`, { method: 'PUT', body, headers: { 'Content-Type': type } });
      assert.equal((await refused(res, 415)).type, 'unsupported_media_type', type);
    }
    const ok = await h.api(`/v1/agents/${id}/webhook`, { method: 'PUT', body, headers: { 'Content-Type': 'application/json; charset=utf-8' } });
    assert.equal(ok.status, 200);
  });

  it('rotates: the new secret is returned once and the old one signs for an hour', async () => {
    const id = await agent();
    const first = ((await (await put(id, { webhook_url: PUBLIC_URL })).json()) as WebhookBody).signing_secret!;
    const started = Date.now();
    const res = await h.api(`/v1/agents/${id}/webhook/rotate-secret`, { method: 'POST' });
    assert.equal(res.status, 200);
    const rotated = (await res.json()) as WebhookBody;
    assert.match(rotated.signing_secret ?? '', /^whsec_/);
    assert.notEqual(rotated.signing_secret, first);
    assert.equal(rotated.webhook_url, PUBLIC_URL);
    assert.equal(rotated.signing_enabled, true);
    assert.ok(!(await (await h.api(`/v1/agents/${id}/webhook`)).text()).includes(rotated.signing_secret!));

    const store = h.running.core.stores.webhookConfigs;
    assert.deepEqual((await store.getForDelivery(orgId, id))!.secrets, [rotated.signing_secret, first]);
    const raw = await h.running.core.db.collection('webhook_configs').findOne({ agent_id: id });
    const expires = (raw!.previous_secret_expires_at as Date).getTime();
    assert.ok(Math.abs(expires - (started + ROTATION_OVERLAP_MS)) < 10_000, 'the previous secret expires an hour after rotation');
    assert.ok(!JSON.stringify(raw).includes(first.slice(6)), 'the previous secret is sealed too');
    const later = new Date(expires + 1000);
    assert.deepEqual((await store.getForDelivery(orgId, id, later))!.secrets, [rotated.signing_secret], 'after the hour only the new one');

    const again = (await (await h.api(`/v1/agents/${id}/webhook/rotate-secret`, { method: 'POST' })).json()) as WebhookBody;
    assert.deepEqual((await store.getForDelivery(orgId, id))!.secrets, [again.signing_secret, rotated.signing_secret]);
  });

  it('404s rotation when no webhook is configured', async () => {
    const err = await refused(await h.api(`/v1/agents/${await agent()}/webhook/rotate-secret`, { method: 'POST' }), 404);
    assert.equal(err.code, 'webhook_not_found');
  });

  it('deletes the configuration, idempotently; a new PUT then issues a new secret', async () => {
    const id = await agent();
    const first = ((await (await put(id, { webhook_url: PUBLIC_URL })).json()) as WebhookBody).signing_secret;
    const del = await h.api(`/v1/agents/${id}/webhook`, { method: 'DELETE' });
    assert.equal(del.status, 204);
    assert.equal(await del.text(), '');
    assert.deepEqual(await (await h.api(`/v1/agents/${id}/webhook`)).json(), { webhook_url: null, signing_enabled: false, event_types: [] });
    assert.equal(await h.running.core.stores.webhookConfigs.getForDelivery(orgId, id), null);
    assert.equal((await h.api(`/v1/agents/${id}/webhook`, { method: 'DELETE' })).status, 204);
    const second = ((await (await put(id, { webhook_url: PUBLIC_URL })).json()) as WebhookBody).signing_secret;
    assert.ok(second && second !== first);
  });

  it('404s another org\u2019s agent on every route, and an unknown agent', async () => {
    const id = await agent();
    await put(id, { webhook_url: PUBLIC_URL });
    const asOther = { headers: otherAuth };
    assert.equal((await refused(await h.api(`/v1/agents/${id}/webhook`, asOther), 404)).code, 'agent_not_found');
    assert.equal((await put(id, { webhook_url: PUBLIC_URL }, otherAuth)).status, 404);
    assert.equal((await h.api(`/v1/agents/${id}/webhook/rotate-secret`, { method: 'POST', ...asOther })).status, 404);
    assert.equal((await h.api(`/v1/agents/${id}/webhook`, { method: 'DELETE', ...asOther })).status, 404);
    const mine = (await (await h.api(`/v1/agents/${id}/webhook`)).json()) as WebhookBody;
    assert.equal(mine.webhook_url, PUBLIC_URL, 'the other org changed nothing');
    assert.equal((await put(newId('agent'), { webhook_url: PUBLIC_URL })).status, 404);
    const foreign = await agent({ org: 'org_someoneelse' });
    assert.equal((await put(foreign, { webhook_url: PUBLIC_URL })).status, 404);
  });

  it('refuses new configuration for a soft-deleted agent but keeps reads working', async () => {
    const id = await agent({ deleted: true });
    assert.equal((await refused(await put(id, { webhook_url: PUBLIC_URL }), 404)).code, 'agent_not_found');
    assert.equal((await h.api(`/v1/agents/${id}/webhook`)).status, 200);
  });

  it("answers a deleted agent's webhook routes by one rule: read and clear, never configure (audit 2, item 10)", async () => {
    const id = await agent();
    assert.equal((await put(id, { webhook_url: PUBLIC_URL })).status, 200);
    assert.equal((await h.api(`/v1/agents/${id}`, { method: 'DELETE' })).status, 200);
    // Was a 200 with a new signing_secret: a deleted agent's secret was issued anew.
    assert.equal((await refused(await h.api(`/v1/agents/${id}/webhook/rotate-secret`, { method: 'POST' }), 404)).code, 'agent_not_found');
    assert.equal((await refused(await put(id, { webhook_url: PUBLIC_URL }), 404)).code, 'agent_not_found');
    const kept = await h.api(`/v1/agents/${id}/webhook`);
    assert.equal(kept.status, 200);
    const body = (await kept.json()) as WebhookBody;
    assert.equal(body.webhook_url, PUBLIC_URL, 'the refused calls changed nothing');
    assert.equal('signing_secret' in body, false);
    assert.equal((await h.api(`/v1/agents/${id}/webhook/deliveries`)).status, 200, 'the delivery log is history, kept');
    assert.equal((await h.api(`/v1/agents/${id}/webhook`, { method: 'DELETE' })).status, 204);
    assert.equal(((await (await h.api(`/v1/agents/${id}/webhook`)).json()) as WebhookBody).webhook_url, null, 'cleared');
  });
});

describe('webhook configuration with TROUPE_WEBHOOKS_ALLOW_PRIVATE=1', function () {
  this.timeout(30_000);
  let h: Harness;
  before(async () => {
    h = await startHarness({ roles: ['web'], env: { TROUPE_WEBHOOKS_ALLOW_PRIVATE: '1' } });
  });
  after(async () => {
    await h?.close();
  });

  it('accepts http and private addresses but still refuses credentials', async () => {
    const org = (await h.running.core.stores.orgs.byName('default'))!;
    const id = newId('agent');
    await h.running.core.db.collection('agents').insertOne({ _id: id as never, org_id: org._id, name: 'local', active_version_id: null, created_at: new Date(), deleted_at: null });
    for (const url of ['http://127.0.0.1:9999/hook', 'https://[::1]/hook', 'http://localhost:3000/x']) {
      const res = await h.api(`/v1/agents/${id}/webhook`, { method: 'PUT', json: { webhook_url: url } });
      assert.equal(res.status, 200, url);
      assert.equal(((await res.json()) as WebhookBody).webhook_url, url);
    }
    const res = await h.api(`/v1/agents/${id}/webhook`, { method: 'PUT', json: { webhook_url: 'http://u:p@127.0.0.1/hook' } });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as ErrorBody).error.code, 'webhook_url_has_credentials');
    const ftp = await h.api(`/v1/agents/${id}/webhook`, { method: 'PUT', json: { webhook_url: 'ftp://127.0.0.1/hook' } });
    assert.equal(ftp.status, 400);
  });
});
