import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { WebhookReceiver } from '../fakes/webhook-receiver.js';
import { Cluster } from './support/cluster.js';
import { agentInDb } from './support/load.js';

/** Every value under every key, read by type, as text. */
async function redisDump(url: string): Promise<{ keys: number; text: string }> {
  const r = new Redis(url);
  const parts: string[] = [];
  let keys = 0;
  try {
    let cursor = '0';
    do {
      const [next, batch] = await r.scan(cursor, 'MATCH', '*', 'COUNT', 500);
      cursor = next;
      for (const k of batch) {
        keys++;
        const type = await r.type(k);
        let v: unknown = null;
        if (type === 'string') v = await r.get(k);
        else if (type === 'hash') v = await r.hgetall(k);
        else if (type === 'list') v = await r.lrange(k, 0, -1);
        else if (type === 'set') v = await r.smembers(k);
        else if (type === 'zset') v = await r.zrange(k, '0', '-1', 'WITHSCORES');
        else if (type === 'stream') v = await r.xrange(k, '-', '+');
        parts.push(`${k} ${JSON.stringify(v)}`);
      }
    } while (cursor !== '0');
  } finally {
    r.disconnect();
  }
  return { keys, text: parts.join('\n') };
}

describe('secret scan: canaries through every role, with debug logs', function () {
  let c: Cluster;
  let fake: FakeLlmUpstream;
  let rx: WebhookReceiver;
  before(async () => {
    fake = await FakeLlmUpstream.start();
    rx = await WebhookReceiver.start();
    c = await Cluster.start({ env: { LOG_LEVEL: 'debug' } });
    await c.start('web-1', 'web');
    await c.start('router-1', 'router');
    await c.start('worker-1', 'worker');
    await c.start('webhooks-1', 'webhooks');
  });
  after(async () => {
    await c?.close();
    await fake?.close();
    await rx?.close();
  });

  it('finds no plaintext canary in any log line, HTTP response, Redis value or MongoDB document', async () => {
    const canary = (what: string) => `canary-${what}-${randomBytes(8).toString('hex')}`;
    const llmKey = canary('llmkey');
    const sessionSecret = canary('secret');
    const credential = canary('credential');
    const responses: string[] = [];
    const call = async (method: string, path: string, body?: unknown, base = c.url('web-1'), key = c.apiKey): Promise<{ status: number; json: any }> => {
      const res = await fetch(base + path, { method, headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await res.text();
      responses.push(`${method} ${path} ${res.status} ${text}`);
      return { status: res.status, json: text ? JSON.parse(text) : null };
    };
    const echo = (req: { headers: Record<string, unknown> }) => `Incorrect API key provided: ${String(req.headers.authorization ?? req.headers['x-api-key']).replace(/^Bearer /, '')}`;

    assert.equal((await call('PUT', '/v1/credentials/PROVIDER_KEY', { value: credential })).status, 200);
    const candidate = { model: 'fake/m', provider: 'openai', upstream_model: 'm', base_url: fake.openaiBase, api_key_credential: 'PROVIDER_KEY', reasoning_efforts: ['off'] };
    assert.equal((await call('PUT', '/v1/routers/canary', { default: true, candidates: [candidate] })).status, 200);
    const db = await c.db();
    const direct = await agentInDb(db, [{ id: 'main', provider: 'openai', model: 'm', base_url: fake.openaiBase }], {}, ['OTHER']);
    const routed = await agentInDb(db, [{ id: 'main', provider: 'routing', router_id: 'canary' }]);
    const hook = await call('PUT', `/v1/agents/${direct}/webhook`, { webhook_url: `${rx.url}/hook`, event_types: ['session.completed', 'session.failed'] });
    const signingSecret = hook.json.signing_secret as string;
    responses.pop(); // The one response that carries the signing secret, by design: creation.

    // A provider that echoes the key in an error, then in an answer.
    fake.failNextSaying(401, echo as never);
    // It echoes what it was sent (the key), plus the session's secret on that session's calls, as a prompt could carry it.
    fake.reply = () => {
      const auth = String(fake.requests.at(-1)?.headers.authorization ?? '').replace(/^Bearer /, '');
      return { text: `echo ${auth}${auth === llmKey ? ` ${sessionSecret}` : ''}` };
    };
    const s1 = (await call('POST', `/v1/agents/${direct}/sessions`, { llm_api_key: llmKey, secrets: { OTHER: sessionSecret } })).json.id as string;
    await call('POST', `/v1/sessions/${s1}/messages/sync`, { parts: [{ type: 'text', text: 'first' }] });
    await call('POST', `/v1/sessions/${s1}/messages/sync`, { parts: [{ type: 'text', text: 'second' }] });
    const s2 = (await call('POST', `/v1/agents/${routed}/sessions`, {})).json.id as string;
    fake.failNextSaying(400, echo as never);
    await call('POST', `/v1/sessions/${s2}/messages/sync`, { parts: [{ type: 'text', text: 'routed, refused' }] });
    await call('POST', `/v1/sessions/${s2}/messages/sync`, { parts: [{ type: 'text', text: 'routed' }] });
    fake.failNextSaying(400, echo as never);
    await call('POST', '/v1/chat/completions', { model: 'service/routing', messages: [{ role: 'user', content: 'hi' }] }, c.url('router-1'), c.routingKey);
    await call('POST', '/v1/chat/completions', { model: 'service/routing', messages: [{ role: 'user', content: 'hi' }] }, c.url('router-1'), c.routingKey);
    await rx.waitFor(2, '/hook', 30_000);
    for (const sid of [s1, s2]) {
      for (const p of ['', '/events?limit=100', '/messages', '/transcript']) await call('GET', `/v1/sessions/${sid}${p}`);
      const stream = await fetch(`${c.url('web-1')}/v1/sessions/${sid}/stream`, { headers: { Authorization: `Bearer ${c.apiKey}` }, signal: AbortSignal.timeout(1500) }).then((r) => r.text()).catch((e: Error) => e.message);
      responses.push(stream);
    }
    for (const p of ['/v1/credentials', '/v1/routers', `/v1/agents/${direct}/webhook`, `/v1/agents/${direct}/webhook/deliveries?limit=100`]) await call('GET', p);
    // Keys that do not authenticate, in the Authorization header: refused (401), and never written down either.
    const wrongApiKey = `tr_sk_${canary('apikey')}`;
    const wrongRoutingKey = `tr_rk_${canary('routingkey')}`;
    assert.equal((await call('GET', '/v1/agents', undefined, c.url('web-1'), wrongApiKey)).status, 401);
    assert.equal((await call('POST', '/v1/chat/completions', { model: 'service/routing', messages: [{ role: 'user', content: 'hi' }] }, c.url('router-1'), wrongRoutingKey)).status, 401);
    assert.ok(fake.requests.length >= 6, 'the traffic reached the provider');
    assert.ok(fake.requests.some((r) => r.headers.authorization === `Bearer ${llmKey}`) && fake.requests.some((r) => r.headers.authorization === `Bearer ${credential}`), 'the canaries were really used');

    // Stopped gracefully first, so shutdown's (debug) lines are in the scan too.
    for (const name of [...c.procs.keys()]) await c.kill(name, 'SIGTERM');
    const logs = c.logLines();
    const redis = await redisDump(c.env.REDIS_URL);
    const mongo: string[] = [];
    for (const col of await db.listCollections().toArray()) for (const d of await db.collection(col.name).find({}).toArray()) mongo.push(`${col.name} ${JSON.stringify(d)}`);
    const places: [string, string[]][] = [['log line', logs], ['HTTP response', responses], ['Redis value', redis.text.split('\n')], ['MongoDB document', mongo]];
    const found: string[] = [];
    // The org's API and routing keys were in every request's Authorization header (Redis and MongoDB hold their hashes only).
    for (const secret of [llmKey, sessionSecret, credential, signingSecret, c.apiKey, c.routingKey, wrongApiKey, wrongRoutingKey]) {
      for (const [where, items] of places) for (const item of items) if (item.includes(secret)) found.push(`${where}: ${item.slice(0, 300)}`);
    }
    process.stdout.write(`      scanned ${logs.length} log lines, ${responses.length} responses, ${redis.keys} Redis keys, ${mongo.length} MongoDB documents: ${found.length} plaintext canaries\n`);
    assert.deepEqual(found, []);
    assert.ok(logs.some((l) => l.includes('"level":"debug"')), `debug logging was on: ${logs.slice(0, 5).join('\n')}`);
  });
});
