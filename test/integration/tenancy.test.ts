import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { startHarness, type Harness } from '../support/harness.js';

describe('tenancy, keys and credentials', () => {
  let h: Harness;
  let mongo: MongoClient;
  before(async () => {
    h = await startHarness();
    mongo = new MongoClient(h.env.MONGODB_URL, { directConnection: true });
  });
  after(async () => {
    await mongo?.close();
    await h?.close();
  });

  it('stores only SHA-256 hashes of keys', async () => {
    const docs = await mongo.db(h.env.TROUPE_MONGODB_DB).collection('api_keys').find({}).toArray();
    assert.equal(docs.length, 2);
    const raw = JSON.stringify(docs);
    assert.ok(!raw.includes(h.apiKey) && !raw.includes(h.routingKey), 'no key is stored in the clear');
    const hashes = docs.map((d) => d.hash).sort();
    assert.deepEqual(hashes, [h.apiKey, h.routingKey].map((k) => createHash('sha256').update(k).digest('hex')).sort());
  });

  it('bootstrap is idempotent across restarts', async () => {
    const org = await h.running.core.stores.orgs.byName('default');
    assert.ok(org);
    const { bootstrapKeys } = await import('../../src/store/bootstrap.js');
    await bootstrapKeys(h.running.core.config, h.running.core.stores, h.running.core.log);
    assert.equal(await mongo.db(h.env.TROUPE_MONGODB_DB).collection('api_keys').countDocuments(), 2);
    assert.equal(await mongo.db(h.env.TROUPE_MONGODB_DB).collection('orgs').countDocuments(), 1);
  });

  it('keeps credentials encrypted and never returns their values', async () => {
    const canary = `canary-${Date.now()}-value`;
    const put = await h.api('/v1/credentials/OPENAI_API_KEY', { method: 'PUT', json: { value: canary } });
    assert.equal(put.status, 200);
    const body = await put.text();
    assert.ok(!body.includes(canary));
    assert.equal(JSON.parse(body).name, 'OPENAI_API_KEY');
    const list = await (await h.api('/v1/credentials')).text();
    assert.ok(!list.includes(canary));
    assert.deepEqual(JSON.parse(list).credentials.map((c: { name: string }) => c.name), ['OPENAI_API_KEY']);
    const stored = await mongo.db(h.env.TROUPE_MONGODB_DB).collection('credentials').findOne({ name: 'OPENAI_API_KEY' });
    assert.ok(stored && !JSON.stringify(stored).includes(canary));
    assert.equal(stored.value.kid, 'dev');
    assert.equal(await h.running.core.stores.credentials.reveal(stored.org_id, 'OPENAI_API_KEY'), canary);
    assert.ok(!h.logs().includes(canary), 'the value never reaches a log line');
  });

  it('rejects a bad credential name', async () => {
    const res = await h.api('/v1/credentials/lower-case', { method: 'PUT', json: { value: 'x' } });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as { error: { param: string } }).error.param, 'name');
  });

  it('404s another org\u2019s credential', async () => {
    await h.api('/v1/credentials/SHARED_NAME', { method: 'PUT', json: { value: 'one' } });
    const other = await h.running.core.stores.orgs.create('other-org');
    const { key } = await h.running.core.stores.apiKeys.create(other._id, 'api');
    const asOther = { headers: { Authorization: `Bearer ${key}` } };
    const del = await h.api('/v1/credentials/SHARED_NAME', { method: 'DELETE', ...asOther });
    assert.equal(del.status, 404);
    const list = (await (await h.api('/v1/credentials', asOther)).json()) as { credentials: unknown[] };
    assert.deepEqual(list.credentials, []);
    const mine = await h.api('/v1/credentials/SHARED_NAME', { method: 'DELETE' });
    assert.equal(mine.status, 204);
    assert.equal(await mine.text(), '');
  });

  it('401s a revoked key after the auth cache expires', async function () {
    this.timeout(15_000);
    const org = (await h.running.core.stores.orgs.byName('default'))!;
    const { key, doc } = await h.running.core.stores.apiKeys.create(org._id, 'api');
    const auth = { headers: { Authorization: `Bearer ${key}` } };
    assert.equal((await h.api('/v1/credentials', auth)).status, 200);
    await h.running.core.stores.apiKeys.revoke(org._id, doc._id);
    await new Promise((r) => setTimeout(r, 5200));
    assert.equal((await h.api('/v1/credentials', auth)).status, 401);
  });
});
