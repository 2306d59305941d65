import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { MongoClient } from 'mongodb';
import { requiredEnv, uniqueName } from '../support/harness.js';
import { SecretBox } from '../../src/lib/crypto/secret-box.js';
import { llmKeyAad, secretsAad } from '../../src/lib/crypto/session-secrets.js';
import { credentialAad, CredentialStore } from '../../src/store/credentials.js';
import { WebhookConfigStore } from '../../src/store/webhook-configs.js';

const run = promisify(execFile);
const CLI = join(__dirname, '../../src/admin/cli.js');

describe('admin command', () => {
  const db = uniqueName('troupe_admin');
  const env = { ...process.env, MONGODB_URL: requiredEnv('MONGODB_URL'), TROUPE_MONGODB_DB: db };
  const admin = async (...args: string[]) => JSON.parse((await run(process.execPath, [CLI, ...args], { env })).stdout);

  after(async () => {
    const c = new MongoClient(env.MONGODB_URL, { directConnection: true });
    await c.db(db).dropDatabase();
    await c.close();
  });

  it('creates an org and keys, stores only hashes, lists by prefix and revokes', async () => {
    const org = await admin('org', 'create', 'acme');
    assert.equal(org.name, 'acme');
    const api = await admin('key', 'create', '--org', 'acme', '--kind', 'api', '--name', 'ci');
    const routing = await admin('key', 'create', '--org', 'acme', '--kind', 'routing');
    assert.match(api.key, /^tr_sk_/);
    assert.match(routing.key, /^tr_rk_/);
    const c = new MongoClient(env.MONGODB_URL, { directConnection: true });
    try {
      const stored = await c.db(db).collection('api_keys').find({}).toArray();
      assert.ok(!JSON.stringify(stored).includes(api.key), 'the key itself is never stored');
      assert.ok(stored.some((k) => k.hash === createHash('sha256').update(api.key).digest('hex')));
    } finally {
      await c.close();
    }
    const listed = await admin('key', 'list', '--org', 'acme', '--prefix', 'tr_sk_');
    assert.deepEqual(listed.map((k: { id: string }) => k.id), [api.id]);
    assert.ok(!JSON.stringify(listed).includes(api.key));
    const revoked = await admin('key', 'revoke', '--org', 'acme', api.prefix);
    assert.ok(revoked.revoked_at);
  });

  it('sets token limits: an org ceiling, and a routing key\'s own (never an API key\'s)', async () => {
    await admin('org', 'create', 'tpm');
    assert.equal((await admin('org', 'limits', 'tpm', '--routing-tokens-per-min', '1000', '--routing-key-tokens-per-min', '300')).limits.routing_tokens_per_min, 1000);
    const key = await admin('key', 'create', '--org', 'tpm', '--kind', 'routing', '--tokens-per-min', '500');
    assert.equal(key.tokens_per_min, 500);
    assert.equal((await admin('key', 'limits', '--org', 'tpm', key.prefix, '--tokens-per-min', '0')).tokens_per_min, 0);
    assert.equal((await admin('key', 'limits', '--org', 'tpm', key.id, '--tokens-per-min', 'default')).tokens_per_min, undefined);
    const api = await admin('key', 'create', '--org', 'tpm', '--kind', 'api');
    await assert.rejects(run(process.execPath, [CLI, 'key', 'limits', '--org', 'tpm', api.id, '--tokens-per-min', '5'], { env }), (e: { code: number; stderr: string }) => e.code === 3 && /routing keys only/.test(e.stderr));
    await assert.rejects(run(process.execPath, [CLI, 'key', 'limits', '--org', 'tpm', key.id, '--tokens-per-min', 'lots'], { env }), (e: { code: number; stderr: string }) => e.code === 2 && /--tokens-per-min must be a whole number/.test(e.stderr));
  });

  it("sets and clears a key's budget; a bad amount or period is a usage mistake", async () => {
    await admin('org', 'create', 'budgeted');
    const routing = await admin('key', 'create', '--org', 'budgeted', '--kind', 'routing');
    const set = await admin('key', 'budget', '--org', 'budgeted', routing.prefix, '--amount-usd', '12.5', '--period', 'month');
    assert.deepEqual([set.id, set.budget], [routing.id, { amount_usd: 12.5, period: 'month' }]);
    assert.equal((await admin('key', 'budget', '--org', 'budgeted', routing.id, '--clear')).budget, null);
    for (const bad of [['--amount-usd', '0', '--period', 'day'], ['--amount-usd', '-3', '--period', 'day'], ['--amount-usd', '5', '--period', 'week'], ['--amount-usd', 'ten', '--period', 'day']]) {
      await assert.rejects(run(process.execPath, [CLI, 'key', 'budget', '--org', 'budgeted', routing.id, ...bad], { env }), (e: { code: number }) => e.code === 2, bad.join(' '));
    }
    // Another org's key is not this org's to budget.
    await admin('org', 'create', 'elsewhere');
    await assert.rejects(run(process.execPath, [CLI, 'key', 'budget', '--org', 'elsewhere', routing.id, '--clear'], { env }), (e: { code: number }) => e.code === 3);
  });

  it('exits 2 with usage on a bad command', async () => {
    await assert.rejects(run(process.execPath, [CLI, 'key', 'create', '--org', 'acme', '--kind', 'nope'], { env }), (e: { code: number; stderr: string }) => e.code === 2 && /--kind must be api or routing/.test(e.stderr) && /^usage: troupe-admin/m.test(e.stderr));
    // Was exit 1, "unexpected failure", with no usage.
    await assert.rejects(run(process.execPath, [CLI, 'org', 'list', '--bogus'], { env }), (e: { code: number; stderr: string }) => e.code === 2 && /Unknown option '--bogus'/.test(e.stderr) && /^usage: troupe-admin/m.test(e.stderr));
    const help = await run(process.execPath, [CLI, '--help'], { env });
    assert.match(help.stdout, /^usage: troupe-admin/);
  });

  it('exits 3 with one line, no usage, when what the command names is not there or already is', async () => {
    // A well-formed command about a missing org or key is not a usage mistake: scripts tell the two apart by the code.
    await admin('org', 'create', 'present');
    const cases: [string[], string][] = [
      [['key', 'list', '--org', 'absent'], 'troupe-admin: no org named "absent"'],
      [['org', 'limits', 'absent'], 'troupe-admin: no org named "absent"'],
      [['key', 'revoke', '--org', 'present', 'tr_sk_nope'], 'troupe-admin: no single key matches "tr_sk_nope"'],
      [['org', 'create', 'present'], 'troupe-admin: org "present" already exists'],
    ];
    for (const [args, line] of cases) {
      await assert.rejects(run(process.execPath, [CLI, ...args], { env }), (e: { code: number; stdout: string; stderr: string }) => {
        assert.deepEqual([e.code, e.stderr, e.stdout], [3, `${line}\n`, ''], args.join(' '));
        return true;
      });
    }
  });

  it('reseals every sealed value under the newest key, so the older key can be dropped; again, it finds nothing to do', async function () {
    this.timeout(30_000);
    const k1 = randomBytes(32);
    const k2 = randomBytes(32);
    const oldBox = new SecretBox(new Map([['k1', k1]]), 'k1');
    const newOnly = new SecretBox(new Map([['k2', k2]]), 'k2');
    const rotated = `k2:${k2.toString('base64')},k1:${k1.toString('base64')}`;
    const reseal = async (masterKey: string) => JSON.parse((await run(process.execPath, [CLI, 'reseal'], { env: { ...env, TROUPE_MASTER_KEY: masterKey } })).stdout);
    const counts = (report: { fields: { collection: string; field: string; resealed: number; changed: number; failed: number }[] }) =>
      Object.fromEntries(report.fields.map((f) => [`${f.collection}.${f.field}`, [f.resealed, f.changed, f.failed]]));
    const c = new MongoClient(env.MONGODB_URL, { directConnection: true });
    try {
      const mdb = c.db(db);
      // Under key 1, each the way its store seals it.
      await new CredentialStore(mdb, oldBox).put('org_rs', 'API_TOKEN', 'credential-plaintext');
      // More than a page of them (200), so the reseal pages.
      const now = new Date();
      await mdb.collection('credentials').insertMany(Array.from({ length: 250 }, (_, i) => {
        const name = `BULK_${String(i).padStart(3, '0')}`;
        return { _id: `org_rs:${name}`, org_id: 'org_rs', name, value: oldBox.seal(`bulk-${i}`, credentialAad('org_rs', name)), created_at: now, updated_at: now } as never;
      }));
      const hooks = new WebhookConfigStore(mdb, oldBox);
      const first = await hooks.put('org_rs', 'agt_rs', 'https://hooks.example.com/x', ['tool.call_requested']);
      const second = await hooks.rotate('org_rs', 'agt_rs');
      await mdb.collection('sessions').insertOne({ _id: 'ses_rs1', org_id: 'org_rs', secrets: oldBox.seal(JSON.stringify({ DB_PASSWORD: 'pw' }), secretsAad('ses_rs1')), llm_api_key: oldBox.seal('sk-session', llmKeyAad('ses_rs1')) } as never);
      await mdb.collection('sessions').insertOne({ _id: 'ses_rs2', org_id: 'org_rs', secrets: null, llm_api_key: null } as never);

      const report = await reseal(rotated);
      assert.equal(report.key, 'k2');
      assert.deepEqual(counts(report), { 'credentials.value': [251, 0, 0], 'webhook_configs.secret': [1, 0, 0], 'webhook_configs.previous_secret': [1, 0, 0], 'sessions.secrets': [1, 0, 0], 'sessions.llm_api_key': [1, 0, 0] });
      assert.deepEqual(counts(await reseal(rotated)), { 'credentials.value': [0, 0, 0], 'webhook_configs.secret': [0, 0, 0], 'webhook_configs.previous_secret': [0, 0, 0], 'sessions.secrets': [0, 0, 0], 'sessions.llm_api_key': [0, 0, 0] }, 'idempotent');

      // Key 1 dropped: everything still opens, through the same stores and bindings the service uses.
      assert.equal(await new CredentialStore(mdb, newOnly).reveal('org_rs', 'API_TOKEN'), 'credential-plaintext');
      assert.equal(await new CredentialStore(mdb, newOnly).reveal('org_rs', 'BULK_249'), 'bulk-249');
      const target = await new WebhookConfigStore(mdb, newOnly).getForDelivery('org_rs', 'agt_rs');
      assert.deepEqual(target?.secrets, [second!.signingSecret, first.signingSecret]);
      const ses = await mdb.collection('sessions').findOne({ _id: 'ses_rs1' as never });
      assert.deepEqual(JSON.parse(newOnly.open(ses!.secrets, secretsAad('ses_rs1'))), { DB_PASSWORD: 'pw' });
      assert.equal(newOnly.open(ses!.llm_api_key, llmKeyAad('ses_rs1')), 'sk-session');
      assert.equal(JSON.stringify(await mdb.collection('credentials').find({ 'value.kid': 'k1' }).toArray()), '[]');

      // A value whose key is already gone: left alone, counted, and the exit says not to drop keys yet; no secret is printed.
      const lost = new SecretBox(new Map([['k0', randomBytes(32)]]), 'k0');
      await mdb.collection('credentials').insertOne({ _id: 'org_rs:LOST', org_id: 'org_rs', name: 'LOST', value: lost.seal('lost-plaintext', credentialAad('org_rs', 'LOST')), created_at: now, updated_at: now } as never);
      await assert.rejects(run(process.execPath, [CLI, 'reseal'], { env: { ...env, TROUPE_MASTER_KEY: rotated } }), (e: { code: number; stdout: string; stderr: string }) => {
        assert.equal(e.code, 5, e.stderr);
        const r = JSON.parse(e.stdout);
        assert.deepEqual(counts(r)['credentials.value'], [0, 0, 1]);
        assert.deepEqual(r.failures.map((f: { id: string }) => f.id), ['org_rs:LOST']);
        assert.doesNotMatch(e.stdout + e.stderr, /plaintext|sk-session|bulk-/);
        return true;
      });
    } finally {
      await c.close();
    }
  });
});

