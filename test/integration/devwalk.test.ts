import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { chromium, type Browser, type Page } from 'playwright-core';
import { TroupeClient, type Session } from '../../clients/typescript/src/client.js';
import { newId } from '../../src/domain/ids.js';
import { METADATA_WALK } from '../../src/store/sessions.js';
import type { SessionDoc } from '../../src/domain/views/session.js';
import { agentWith, scriptedAgent } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { CLI, troupe } from '../support/troupe-cli.js';
import { until } from '../support/wait.js';


/**
 * What a developer meets walking the README with the CLI and the console, beyond cli.test.ts and console.test.ts:
 * a tail of a session that has had several messages, a tail into a pipe that closes, a metadata filter whose
 * matches are older than the newest 1,000 sessions, a deploy of a folder whose troupe.json is broken, a tool
 * result form for a schema made of `$ref`s, and a session that is gone when the console opens it.
 */
describe('developer walk: the CLI and the console on a session with history, an org with many sessions, a broken folder', function () {
  this.timeout(120_000);
  let h: Harness;
  let dir: string;
  let env: Record<string, string>;
  let client: TroupeClient;
  const run = (args: string[]) => troupe(args, env, dir);
  /** Two sessions of user=ada, older than the newest 1,000 sessions of the org. */
  let ada: Session[];

  /** Sessions of others, newer than ada's and more than one filtered page looks at, written straight into the store. */
  async function seedOldMatches(): Promise<Session[]> {
    const { agentId } = await scriptedAgent(h, [{ text: 'hi' }]);
    const ada = [await client.sessions.create(agentId, { metadata: { user: 'ada' } }), await client.sessions.create(agentId, { metadata: { user: 'ada' } })];
    const mongo = await new MongoClient(h.env.MONGODB_URL).connect();
    try {
      const orgId = (await client.organization.get()).id;
      const docs: SessionDoc[] = Array.from({ length: METADATA_WALK + 50 }, (_, i) => ({
        _id: newId('session'), org_id: orgId, agent_id: agentId, version_id: ada[0].version_id, name: null, storage_binding_id: null, llm_id: 'main', internet_access: false,
        metadata: { user: 'someone-else', n: String(i) }, secrets: null, llm_api_key: null, batch_id: null, priority: 'interactive',
        created_at: new Date(), status: 'idle', last_sequence: 0, last_message_id: null, last_message_status: null, running_message_id: null, queued_message_ids: [], recent_commands: [],
      }));
      const col = mongo.db(h.env.TROUPE_MONGODB_DB).collection<SessionDoc>('sessions');
      for (let i = 0; i < docs.length; i += 500) await col.insertMany(docs.slice(i, i + 500), { ordered: false });
    } finally {
      await mongo.close();
    }
    return ada;
  }

  /** An agent whose scripted model calls the external tool `lookup`, whose output_schema is a oneOf of $refs. */
  async function lookupAgent(): Promise<string> {
    // A schema as generators write them: alternatives by $ref into definitions. Only `hit` fits {"kind":"hit","value":3}.
    const outputSchema = {
      definitions: {
        hit: { type: 'object', required: ['kind', 'value'], properties: { kind: { const: 'hit' }, value: { type: 'number' } } },
        miss: { type: 'object', required: ['kind'], properties: { kind: { const: 'miss' } } },
      },
      oneOf: [{ $ref: '#/definitions/hit' }, { $ref: '#/definitions/miss' }],
    };
    const { agentId } = await agentWith(h, {
      tools: [{ name: 'lookup', kind: 'external', path: 'tools/lookup.json', timeout_seconds: 60, description: 'Looks it up.', input_schema: { type: 'object' }, output_schema: outputSchema }],
      llm_options: [{ id: 'main', provider: 'scripted', script: 'script.json' }],
      scripts: { main: { turns: [{ tool_calls: [{ name: 'lookup', arguments: { q: 'x' } }] }, { text: 'found {{lookup.kind}} {{lookup.value}}' }] } },
    });
    return agentId;
  }

  /** The console in Debian's chromium (installed by `npm test`), connected with the API key. */
  async function openConsole(): Promise<{ browser: Browser; page: Page }> {
    const executablePath = process.env.TROUPE_CHROMIUM;
    assert.ok(executablePath, 'TROUPE_CHROMIUM is not set; run the tests through "npm test", which installs chromium');
    const browser = await chromium.launch({ executablePath, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
    const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    await page.goto(`${h.baseUrl}/console`);
    await page.fill('#api-key', h.apiKey);
    await page.click('#key-form button[type=submit]');
    await page.waitForSelector('#sessions li[data-session]');
    return { browser, page };
  }

  before(async () => {
    h = await startHarness({ env: { TROUPE_SESSION_SHARDS: '4' } });
    client = new TroupeClient({ baseUrl: h.baseUrl, apiKey: h.apiKey });
    dir = mkdtempSync(join(tmpdir(), 'troupe-devwalk-'));
    env = { TROUPE_BASE_URL: h.baseUrl, TROUPE_API_KEY: h.apiKey, TROUPE_CONFIG: join(dir, 'config.json') };
    ada = await seedOldMatches();
  });
  after(async () => {
    await h?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('tail --until-idle on a session that has answered twice prints both turns and exits, not at the first idle', async () => {
    const { agentId } = await scriptedAgent(h, [{ text: 'hello back' }]);
    const s = await client.sessions.create(agentId);
    for (const text of ['first', 'second']) assert.equal((await client.sessions.sync(s.id, text, { timeoutMs: 20_000 })).status, 'completed');
    const tailed = await run(['tail', s.id, '--json', '--until-idle']);
    assert.equal(tailed.code, 0, tailed.stderr);
    const printed = tailed.stdout.trim().split('\n').map((l) => JSON.parse(l) as { sequence_number: number });
    assert.deepEqual(printed, (await client.sessions.events(s.id, { limit: 100 })).events, 'the whole ledger, through the second idle');
  });

  it('tail into a pipe that closes (| head) stops quietly with exit 0, not a stack trace', async () => {
    const { agentId } = await scriptedAgent(h, [{ text: 'hello back' }]);
    const s = await client.sessions.create(agentId);
    assert.equal((await client.sessions.sync(s.id, 'first', { timeoutMs: 20_000 })).status, 'completed');
    const child = spawn(process.execPath, [CLI, 'tail', s.id], { cwd: dir, env: { PATH: process.env.PATH ?? '', HOME: dir, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    // The reader takes the first lines and goes away, as `head` does; the next event tail writes meets a closed pipe.
    await new Promise((resolve) => child.stdout.once('data', resolve));
    child.stdout.destroy();
    assert.equal((await client.sessions.sync(s.id, 'second', { timeoutMs: 20_000 })).status, 'completed');
    const code = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('still running'), 20_000))]);
    if (code === 'still running') child.kill('SIGKILL');
    assert.equal(code, 0, stderr);
    assert.equal(stderr, '');
  });

  it('sessions list --metadata finds sessions older than the newest 1,000, instead of saying there are none', async () => {
    const first = await client.sessions.list({ metadata: { user: 'ada' } });
    assert.deepEqual([first.sessions.length, first.has_more], [0, true], 'the API page is empty here, with more to read: the case at hand');

    const json = await run(['sessions', 'list', '--metadata', 'user=ada', '--json']);
    assert.equal(json.code, 0, json.stderr);
    const page = JSON.parse(json.stdout) as { sessions: { id: string }[]; has_more: boolean };
    assert.deepEqual(page.sessions.map((x) => x.id), ada.map((x) => x.id).reverse(), 'both, newest first');
    assert.equal(page.has_more, false);
    const text = await run(['sessions', 'list', '--metadata', 'user=ada']);
    assert.equal(text.code, 0, text.stderr);
    for (const x of ada) assert.match(text.stdout, new RegExp(x.id));
    assert.doesNotMatch(text.stderr, /no sessions/);
    const one = await run(['sessions', 'list', '--metadata', 'user=ada', '--limit', '1', '--json']);
    const onePage = JSON.parse(one.stdout) as { sessions: { id: string }[]; has_more: boolean; next_cursor: string };
    assert.deepEqual(onePage.sessions.map((x) => x.id), [ada[1].id]);
    const rest = await run(['sessions', 'list', '--metadata', 'user=ada', '--after', onePage.next_cursor, '--json']);
    assert.deepEqual((JSON.parse(rest.stdout) as { sessions: { id: string }[] }).sessions.map((x) => x.id), [ada[0].id], 'the cursor it prints goes on where it stopped');
  });

  it('deploy of a folder whose troupe.json is not JSON is a usage mistake (exit 2), said in one line', async () => {
    const folder = join(dir, 'broken-agent');
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, 'troupe.json'), '{"name": "broken",');
    const r = await run(['deploy', folder]);
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, /troupe\.json is not valid JSON/);
    assert.equal(r.stdout, '');
  });

  it('console: a metadata filter finds the older matches, a tool form takes a valid result of a oneOf of $refs, a deleted session empties the pane', async () => {
    const agentId = await lookupAgent();
    const asking = await client.sessions.create(agentId, { metadata: { from: 'devwalk-form' } });
    await client.sessions.send(asking.id, 'look it up');
    await until(async () => (await client.sessions.pendingToolCalls(asking.id)).length === 1);

    const { browser, page } = await openConsole();
    try {

      await page.fill('#metadata-filter', 'user=ada');
      await page.click('#session-filter button');
      await until(async () => (await page.locator('#sessions li[data-session]').count()) === 2, 10_000);
      const shown = await page.locator('#sessions li[data-session]').evaluateAll((els) => els.map((e) => e.getAttribute('data-session')));
      assert.deepEqual(shown, ada.map((x) => x.id).reverse());

      await page.fill('#metadata-filter', 'from=devwalk-form');
      await page.click('#session-filter button');
      await page.click(`#sessions li[data-session="${asking.id}"]`);
      const form = page.locator('#pending form.tool-call');
      await form.waitFor();
      await form.locator('textarea').fill('{"kind": "hit"}');
      await form.locator('button[type=submit]').click();
      await page.waitForSelector('#pending .errors:has-text("matches none of the allowed shapes")');
      await form.locator('textarea').fill('{"kind": "hit", "value": 3}');
      await form.locator('button[type=submit]').click();
      await page.waitForSelector('#transcript li[data-type="assistant.text"]:has-text("found hit 3")', { timeout: 30_000 });

      // A session deleted after the list was read: opening it says so, and leaves nothing of the one shown before.
      const gone = await client.sessions.create(agentId, { metadata: { from: 'devwalk-form' } });
      await page.click('#session-filter button');
      await page.waitForSelector(`#sessions li[data-session="${gone.id}"]`);
      await client.sessions.delete(gone.id);
      await page.click(`#sessions li[data-session="${gone.id}"]`);
      await page.waitForSelector(`#status.error:has-text("${gone.id}")`);
      assert.equal(await page.locator('#transcript li').count(), 0, 'no transcript of the session shown before, as if it were this one');
      assert.equal(await page.locator('#composer').isHidden(), true, 'no composer that would send to a session that is gone');
    } finally {
      await browser.close();
    }
  });

  it('console: a batch larger than its table is polled by the light read, its items read again only now and then', async () => {
    // Every item waits on its external tool, so the batch stays running while the page polls it.
    const agentId = await lookupAgent();
    const batch = await client.batches.create(Array.from({ length: 201 }, (_, i) => ({ agent_id: agentId, message: { content: [{ type: 'text', text: `item ${i}` }] } })));
    const { browser, page } = await openConsole();
    try {
      const reads: string[] = [];
      page.on('request', (r) => void (r.url().includes(`/v1/session-batches/${batch.batch_id}`) && reads.push(r.url())));
      await page.click('#tabs button[data-tab="batches"]');
      await page.fill('#batch-id', batch.batch_id);
      await page.click('#batch-form button');
      await page.waitForSelector('#batch progress');
      const light = (u: string) => u.includes('include_sessions=false');
      await until(async () => reads.length >= 4, 15_000);
      assert.deepEqual(reads.map((u) => (light(u) ? 'counts' : 'items')).slice(0, 4), ['items', 'counts', 'counts', 'counts'], 'the 201 items were read once, then only the counts every second');
      await page.waitForSelector('#batch p.muted:has-text("The first 200 of 201 items")');
      assert.match(await page.locator('#batch p').first().innerText(), /of 201 done/);
      assert.equal(await page.locator('#batch tbody tr').count(), 200);
    } finally {
      await browser.close();
    }
  });
});
