import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { RateLimitError, TroupeClient } from '../../clients/typescript/src/index.js';
import { scriptedAgent } from '../support/agent-fixture.js';
import { dropTestData, requiredEnv, startHarness, uniqueName, type Harness } from '../support/harness.js';
import { startRoleProcess, type RoleProcess } from '../support/role-process.js';
import { json } from '../support/wait.js';

const run = promisify(execFile);
const CLI = join(__dirname, '../../src/admin/cli.js');

/** The 429 contract: error shape, Retry-After and the RateLimit-* fields. */
async function assertRefused(res: Response, code: string): Promise<Record<string, any>> {
  const body = await json<Record<string, any>>(res, 429);
  assert.equal(body.error.type, 'rate_limit_error');
  assert.equal(body.error.code, code);
  const retry = Number(res.headers.get('retry-after'));
  assert.ok(retry >= 1 && retry <= 60, `Retry-After ${retry}`);
  assert.equal(res.headers.get('ratelimit-remaining'), '0');
  assert.ok(Number(res.headers.get('ratelimit-limit')) > 0);
  assert.ok(Number(res.headers.get('ratelimit-reset')) >= 1);
  return body;
}

describe('rate limits', function () {
  this.timeout(60_000);

  describe('two web processes share one limit', () => {
    const db = uniqueName('troupe_rl');
    const prefix = uniqueName('rl');
    const apiKey = `tr_sk_test_${randomBytes(16).toString('hex')}`;
    const env = {
      MONGODB_URL: requiredEnv('MONGODB_URL'),
      REDIS_URL: requiredEnv('REDIS_URL'),
      TROUPE_MONGODB_DB: db,
      TROUPE_REDIS_PREFIX: prefix,
      TROUPE_BOOTSTRAP_API_KEY: apiKey,
      HOST: '127.0.0.1',
      PORT: '0',
      TROUPE_RATE_LIMIT_API_PER_MIN: '10',
    };
    const procs: RoleProcess[] = [];

    before(async () => {
      // One after the other: the first bootstraps the org and key, the second finds them.
      procs.push(await startRoleProcess(['web'], env));
      procs.push(await startRoleProcess(['web'], env));
    });
    after(async () => {
      for (const p of procs) p.kill('SIGKILL');
      await Promise.all(procs.map((p) => p.exited));
      await dropTestData(env.MONGODB_URL, db, env.REDIS_URL, prefix);
    });

    it('counts requests to both processes against the org’s 10 per minute', async () => {
      const statuses: number[] = [];
      let refused: Response | null = null;
      for (let i = 0; i < 14; i++) {
        const port = procs[i % 2].ports.web;
        const res = await fetch(`http://127.0.0.1:${port}/v1/credentials`, { headers: { Authorization: `Bearer ${apiKey}` } });
        statuses.push(res.status);
        if (res.status === 429) refused ??= res;
        else {
          assert.equal(res.status, 200, await res.text());
          assert.equal(res.headers.get('ratelimit-limit'), '10');
          assert.equal(res.headers.get('ratelimit-remaining'), String(9 - i));
        }
      }
      assert.deepEqual(statuses, [...Array(10).fill(200), ...Array(4).fill(429)]);
      const body = await assertRefused(refused!, 'rate_limited');
      assert.match(body.error.message, /10 requests per minute on the base API for this organization/);
      // Unauthenticated system routes are not counted.
      assert.equal((await fetch(`http://127.0.0.1:${procs[0].ports.web}/healthz`)).status, 200);
      const metrics = await (await fetch(`http://127.0.0.1:${procs[1].ports.web}/metrics`)).text();
      assert.match(metrics, /troupe_rate_limit_refusals_total\{surface="api",scope="org"[^}]*\} [1-9]/);
    });
  });

  describe('per-org limits from the admin command, and the running-session cap', () => {
    let h: Harness;
    const admin = async (...args: string[]) => JSON.parse((await run(process.execPath, [CLI, ...args], { env: { ...process.env, MONGODB_URL: h.env.MONGODB_URL, TROUPE_MONGODB_DB: h.env.TROUPE_MONGODB_DB } })).stdout);

    before(async () => {
      // No worker: batch sessions stay running, which is what the cap counts.
      h = await startHarness({ roles: ['web', 'router'], env: { TROUPE_MAX_RUNNING_SESSIONS: '2' } });
    });
    after(async () => h?.close());

    it('applies an org’s own key and routing limits, set with the admin command, and can reset them', async () => {
      // A fresh org, so no process has its limits cached yet.
      await admin('org', 'create', 'acme');
      const apiKey = (await admin('key', 'create', '--org', 'acme', '--kind', 'api')).key;
      const routingKey = (await admin('key', 'create', '--org', 'acme', '--kind', 'routing')).key;
      const set = await admin('org', 'limits', 'acme', '--api-key-per-min', '3', '--routing-per-min', '2');
      assert.deepEqual(set.limits, { api_key_per_min: 3, routing_per_min: 2 });
      const list = () => h.api('/v1/routers', { headers: { Authorization: `Bearer ${apiKey}` } });
      for (let i = 0; i < 3; i++) assert.equal((await list()).status, 200);
      const body = await assertRefused(await list(), 'rate_limited');
      assert.match(body.error.message, /3 requests per minute on the base API for this key/);
      const typed = new TroupeClient({ baseUrl: h.baseUrl, apiKey, maxRetries: 0 });
      await assert.rejects(typed.routers.list(), (e: unknown) => e instanceof RateLimitError && e.retryAfterSeconds! >= 1 && e.retryAfterSeconds! <= 60);

      assert.equal((await h.api('/v1/routers')).status, 200, 'the default org is not affected');
      const routing = () => fetch(`${h.routerUrl}/v1/models`, { headers: { Authorization: `Bearer ${routingKey}` } });
      // No router yet: an empty list, counted all the same.
      for (let i = 0; i < 2; i++) assert.equal((await routing()).status, 200);
      const refused = await routing();
      const err = (await assertRefused(refused, 'rate_limited')).error;
      assert.equal(err.param, null, 'the OpenAI envelope on the routing interface');
      const anthropic = await fetch(`${h.routerUrl}/v1/messages`, { method: 'POST', headers: { 'x-api-key': routingKey, 'content-type': 'application/json' }, body: '{}' });
      const a = await assertRefused(anthropic, 'rate_limited');
      assert.equal(a.type, 'error', 'the Anthropic envelope on /v1/messages');

      const reset = await admin('org', 'limits', 'acme', '--api-key-per-min', 'default', '--routing-per-min', 'default');
      assert.deepEqual(reset.limits, {});
      await assert.rejects(admin('org', 'limits', 'acme', '--running-sessions', 'lots'), /whole number/);
    });

    it('refuses an interactive message past the running-session cap; batches are never refused', async () => {
      const { agentId } = await scriptedAgent(h, [{ text: 'hi' }]);
      const item = { agent_id: agentId, message: { content: [{ type: 'text', text: 'go' }] } };
      const batch = await json<{ sessions: { status: string }[] }>(await h.api('/v1/session-batches', { method: 'POST', json: { items: [item, item, item] } }), 201);
      assert.equal(batch.sessions.length, 3, 'a batch past the cap is accepted whole: its sessions queue');
      const res = await h.api(`/v1/agents/${agentId}/messages`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text: 'hello' }] } });
      const body = await assertRefused(res, 'concurrency_limited');
      assert.match(body.error.message, /2 sessions running/);
      // One policy per answer: the cap of 2 in Limit and in Policy, not the request rate's 1200;w=60 beside it (audit 2, item 6).
      assert.deepEqual([res.headers.get('ratelimit-limit'), res.headers.get('ratelimit-policy')], ['2', '2;comment="running sessions"']);
      // The client waits the Retry-After (5 s) and asks again with the same Idempotency-Key; still refused, it throws.
      const asked: { at: number; key: string | null }[] = [];
      const retrying = new TroupeClient({ baseUrl: h.baseUrl, apiKey: h.apiKey, maxRetries: 1, fetch: (input, init) => (asked.push({ at: Date.now(), key: new Headers(init?.headers).get('Idempotency-Key') }), fetch(input, init)) });
      await assert.rejects(retrying.sessions.start(agentId, 'hello'), (e: unknown) => e instanceof RateLimitError && e.code === 'concurrency_limited' && e.retryAfterSeconds === 5);
      assert.equal(asked.length, 2);
      assert.ok(asked[1].at - asked[0].at >= 4900, `retried after ${asked[1].at - asked[0].at} ms`);
      assert.equal(asked[1].key, asked[0].key);
      // A message to an idle session this process created (its head cached, its status not at hand) would start it: refused.
      const idle = await json<{ id: string }>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: {} }), 201);
      const toIdle = await h.api(`/v1/sessions/${idle.id}/events`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text: 'hello' }] } });
      await assertRefused(toIdle, 'concurrency_limited');
      assert.equal((await h.api('/v1/session-batches', { method: 'POST', json: { items: [item] } })).status, 201);
    });
  });
});
