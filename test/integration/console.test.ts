import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { deployFolder, TroupeClient } from '../../clients/typescript/src/index.js';
import { CONSOLE_CSP } from '../../src/edge/api/console.js';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { WebhookReceiver } from '../fakes/webhook-receiver.js';
import { agentWith, scriptedAgent } from '../support/agent-fixture.js';
import { createAgentFrom } from '../support/archives.js';
import { codeAgentFiles, codeAgentManifest } from '../support/code-agent.js';
import { startHarness, type Harness } from '../support/harness.js';
import { until } from '../support/wait.js';

const ROOT = join(__dirname, '../../..');
const SCREENSHOT = join(ROOT, 'dist/test-artifacts/console.png');

/**
 * The console in a real browser (Debian's chromium, installed by `npm test`),
 * against a real Troupe: one pass through what a person does with it.
 */
describe('console in a browser', function () {
  this.timeout(90_000);
  let h: Harness;
  let client: TroupeClient;
  let browser: Browser;
  let page: Page;
  let rx: WebhookReceiver;
  let fake: FakeLlmUpstream;
  const problems: string[] = [];

  before(async () => {
    fake = await FakeLlmUpstream.start();
    h = await startHarness({ env: { TROUPE_SESSION_SHARDS: '4', TROUPE_WEBHOOKS_ALLOW_PRIVATE: '1', TROUPE_MODELS_ALLOW_PRIVATE: '1' } });
    client = new TroupeClient({ baseUrl: h.baseUrl, apiKey: h.apiKey });
    rx = await WebhookReceiver.start();
    const executablePath = process.env.TROUPE_CHROMIUM;
    assert.ok(executablePath, 'TROUPE_CHROMIUM is not set; run the tests through "npm test", which installs chromium');
    // --no-sandbox: CI runs as root, where Chromium's own sandbox cannot start.
    browser = await chromium.launch({ executablePath, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
    page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    page.on('console', (m) => m.type() === 'error' && problems.push(`console: ${m.text()}`));
    page.on('pageerror', (e) => problems.push(`page: ${e.message}`));
    page.on('response', (r) => r.status() >= 400 && problems.push(`${r.status()} ${r.url()}`));
  });
  after(async () => {
    await browser?.close();
    await rx?.close();
    await fake?.close();
    await h?.close();
  });

  /**
   * A tab of its own, signed in with the org's key: its own sessionStorage, so the key form shows. `watch` attaches
   * listeners before the first load, so nothing the page does while signing in goes unseen.
   */
  async function signedInTab(watch: (tab: Page) => void): Promise<Page> {
    const tab = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    watch(tab);
    await tab.goto(`${h.baseUrl}/console`);
    await tab.fill('#api-key', h.apiKey);
    await tab.click('#key-form button[type=submit]');
    return tab;
  }

  /** Runs `use` on a signed-in tab showing one session's live transcript (found by its `from` metadata), then closes the tab. */
  async function inSessionTab(sessionId: string, from: string, use: (tab: Page) => Promise<void>): Promise<void> {
    const tab = await signedInTab((t) => t.on('pageerror', (e) => problems.push(`page: ${e.message}`)));
    try {
      await tab.fill('#metadata-filter', `from=${from}`);
      await tab.click('#session-filter button');
      await until(async () => (await tab.locator('#sessions li[data-session]').count()) === 1, 10_000);
      await tab.click(`#sessions li[data-session="${sessionId}"]`);
      await tab.waitForSelector('#session[data-stream="open"]');
      await use(tab);
    } finally {
      await tab.close();
    }
  }

  it('opens a session, sends a message, answers the tool call through the form and shows the answer live', async () => {
    const { agent } = await deployFolder(client, join(ROOT, 'examples/weather-agent'));
    await client.webhooks.put(agent.id, { webhook_url: `${rx.url}/hook`, event_types: ['tool.call_requested'] });
    const session = await client.sessions.create(agent.id, { metadata: { from: 'console-test' } });
    await client.sessions.create(agent.id, { metadata: { from: 'elsewhere' } });

    const res = await page.goto(`${h.baseUrl}/console`);
    assert.equal(res?.headers()['content-security-policy'], CONSOLE_CSP);
    await page.fill('#api-key', h.apiKey);
    await page.click('#key-form button[type=submit]');
    await page.click(`#agents li[data-agent="${agent.id}"]`);
    await page.fill('#metadata-filter', 'from=console-test');
    await page.click('#session-filter button');
    // Polled from here: a string predicate polled inside the page is an eval, which the console's CSP forbids.
    await until(async () => (await page.locator('#sessions li[data-session]').count()) === 1, 10_000);
    await page.click(`#sessions li[data-session="${session.id}"]`);
    await page.waitForSelector('#session[data-stream="open"]');
    await page.fill('#message', 'What is the weather in Oslo?');
    await page.click('#composer button');
    await page.waitForSelector('#transcript li[data-type="user.message"]');

    // The pending call's form checks the result against output_schema before sending anything.
    const form = page.locator('#pending form.tool-call');
    await form.waitFor();
    await form.locator('textarea').fill('{"city": "Oslo", "high_c": "warm"}');
    await form.locator('button[type=submit]').click();
    await page.waitForSelector('#pending .errors:has-text("high_c must be number")');
    assert.match(await form.locator('.errors').innerText(), /\$\.summary is required/);
    assert.equal((await client.sessions.pendingToolCalls(session.id)).length, 1, 'the invalid result was not submitted');
    await form.locator('textarea').fill('{"city": "Oslo", "summary": "light snow", "high_c": 18, "low_c": 2}');
    await form.locator('button[type=submit]').click();

    const answer = page.locator('#transcript li[data-type="assistant.text"]');
    await answer.waitFor({ timeout: 30_000 });
    assert.match(await answer.innerText(), /Oslo today: a high of 18 °C \(64\.4 °F\), light snow\./);
    await page.waitForSelector('#transcript li[data-type="session.status_changed"]:has-text("running → idle")');
    await until(async () => (await page.locator('#pending form').count()) === 0, 10_000);
    const seqs = await page.locator('#transcript li[data-seq]').evaluateAll((els) => [...new Set(els.map((e) => Number(e.getAttribute('data-seq'))))]);
    assert.deepEqual(seqs, seqs.map((_, i) => i + 1), 'every event once, in order');
    mkdirSync(join(ROOT, 'dist/test-artifacts'), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });

    // The key is kept for this tab only.
    assert.equal(await page.evaluate("sessionStorage.getItem('troupe.apiKey')"), h.apiKey);
    assert.equal(await page.evaluate('localStorage.length'), 0);

    // The webhook log shows the tool call's delivery and queues a redelivery.
    await rx.waitFor(1, '/hook');
    await page.click('#tabs button[data-tab="webhooks"]');
    await page.waitForSelector(`#webhook-config:has-text("Sends tool.call_requested to ${rx.url}/hook.")`);
    assert.equal(await page.locator('#webhook-hint').isHidden(), true, 'no "select an agent" hint once one is selected');
    const row = page.locator('#deliveries tbody tr[data-delivery]');
    await row.first().waitFor();
    assert.match(await row.first().innerText(), /tool\.call_requested/);
    await row.first().locator('button').click();
    await page.waitForSelector('#status:has-text("Redelivery of")');
    await rx.waitFor(2, '/hook');

    // Batch progress for a batch the console did not start.
    const batch = await client.batches.create([{ agent_id: agent.id, message: { content: [{ type: 'text', text: 'hi' }] } }, { agent_id: agent.id, llm_id: 'nope', message: { content: [{ type: 'text', text: 'x' }] } }]);
    await page.click('#tabs button[data-tab="batches"]');
    await page.fill('#batch-id', batch.batch_id);
    await page.click('#batch-form button');
    await page.waitForSelector('#batch progress');
    assert.match(await page.locator('#batch p').innerText(), /of 2 done/);

    // A streaming provider's text shows up live before the completed message replaces it.
    const { agentId: streaming } = await agentWith(h, { llm_options: [{ id: 'main', provider: 'openai-responses', model: 'gpt-test', base_url: fake.openaiBase }] });
    fake.reply = { text: 'Streaming words arrive in pieces.' };
    fake.firstEventDelayMs = 300;
    const live = await client.sessions.create(streaming, { llm_api_key: 'k', metadata: { from: 'console-test' } });
    await page.click('#tabs button[data-tab="sessions"]');
    await page.click('#session-filter button');
    await page.click(`#sessions li[data-session="${live.id}"]`);
    await page.waitForSelector('#session[data-stream="open"]');
    await page.evaluate(`new MutationObserver(() => { if (document.querySelector('#transcript li.ev-live')) window.sawDelta = true; }).observe(document.getElementById('transcript'), { childList: true, subtree: true, characterData: true })`);
    await page.fill('#message', 'stream please');
    await page.click('#composer button');
    await page.waitForSelector('#transcript li[data-type="assistant.text"]:has-text("Streaming words arrive in pieces.")');
    assert.equal(await page.evaluate('window.sawDelta === true'), true, 'the delta bubble appeared before the answer');
    assert.equal(await page.locator('#transcript li.ev-live').count(), 0, 'the completed message replaced it');

    // An agent without a webhook: the tab says so instead of showing an empty log alone. (Reloaded: the agent list is read at connect.)
    await page.reload();
    await page.click(`#agents li[data-agent="${streaming}"]`);
    await page.click('#tabs button[data-tab="webhooks"]');
    await page.waitForSelector(`#webhook-config:has-text("This agent has no webhook. Configure one with PUT /v1/agents/${streaming}/webhook")`);
    assert.deepEqual(problems, [], 'no script errors or CSP violations');
  });

  it('approves and denies always_ask tool calls from the live transcript', async () => {
    const ask = (name: string) => ({ name, kind: 'external' as const, path: `tools/${name}.json`, timeout_seconds: 60, description: null, input_schema: null, output_schema: null, permission: 'always_ask' as const });
    const { agentId } = await agentWith(h, {
      tools: [ask('deploy'), ask('wipe')],
      llm_options: [{ id: 'main', provider: 'scripted', script: 's.json' }],
      scripts: { main: { turns: [{ tool_calls: [{ name: 'deploy', arguments: { env: 'prod' }, id: 'call_d' }, { name: 'wipe', arguments: {}, id: 'call_w' }] }, { text: 'All answered.' }] } },
    });
    const session = await client.sessions.create(agentId, { metadata: { from: 'approvals' } });
    await inSessionTab(session.id, 'approvals', async (tab) => {
      const sent = await client.sessions.send(session.id, 'ship it');
      const asking = (id: string) => tab.locator(`#transcript li[data-type="tool.confirmation_requested"] [data-confirm="${id}"]`);
      await asking('call_w').waitFor();
      assert.equal(await tab.locator('#pending form.tool-call').count(), 0, 'no result form for a call that must be confirmed first');
      await asking('call_w').locator('input').fill('not today');
      await asking('call_w').locator('button[data-answer="deny"]').click();
      await tab.waitForSelector('#transcript li[data-type="tool.call_failed"]:has-text("failed (denied): not today")');
      await asking('call_d').locator('button[data-answer="allow"]').click();
      await tab.waitForSelector('#transcript li[data-type="tool.call_requested"]:has-text("call_d")');
      assert.equal(await tab.locator('#transcript [data-confirm]').count(), 0, 'answered confirmations lose their buttons');
      await client.sessions.submitToolResult(session.id, { message_id: sent.message!.id, tool_call_id: 'call_d' }, { ok: true });
      await tab.waitForSelector('#transcript li[data-type="assistant.text"]:has-text("All answered.")');
      const answers = await client.sessions.events(session.id, { limit: 100 });
      assert.deepEqual(answers.events.flatMap((e) => (e.type === 'user.tool_confirmation' ? [[e.data.tool_call_id, e.data.result, e.data.deny_message ?? null]] : [])), [['call_w', 'deny', 'not today'], ['call_d', 'allow', null]]);
      assert.deepEqual(problems, [], 'no script errors');
    });
  });

  it("renders a code agent's ctx calls and progress readably in the live transcript", async () => {
    const manifest = codeAgentManifest(fake.openaiBase);
    const res = await createAgentFrom(h, manifest, codeAgentFiles(manifest), 'console-code-agent');
    assert.equal(res.status, 201, await res.clone().text());
    const agentId = ((await res.json()) as { id: string }).id;
    const session = await client.sessions.create(agentId, { metadata: { from: 'code-agent' } });
    await inSessionTab(session.id, 'code-agent', async (tab) => {
      // 'chain': emit, a 150 ms sleep, then a scripted model call.
      await client.sessions.send(session.id, 'chain');
      await tab.waitForSelector('#transcript li[data-type="agent.progress"]:has-text("starting")');
      await tab.waitForSelector('#transcript li[data-type="agent.call_started"]:has-text("ctx.sleep until")');
      await tab.waitForSelector('#transcript li[data-type="agent.call_completed"]:has-text("ctx.model ← scripted hello")');
      await tab.waitForSelector('#transcript li[data-type="assistant.text"]:has-text("scripted hello|null|0")');
      assert.equal(await tab.locator('#transcript li[data-type^="agent."]').filter({ hasText: /^#\d+agent\./ }).count(), 0, 'no agent event is shown by its type name');
      assert.deepEqual(problems, [], 'no script errors');
    });
  });

  it('sends with the on_busy chosen in the message box, starting at the session default, and says why reject refused', async () => {
    const ext = { name: 'lookup', kind: 'external' as const, path: 'tools/lookup.json', timeout_seconds: 60, description: null, input_schema: null, output_schema: null };
    const { agentId } = await agentWith(h, { tools: [ext], llm_options: [{ id: 'main', provider: 'scripted', script: 's.json' }], scripts: { main: { turns: [{ tool_calls: [{ name: 'lookup', arguments: {}, id: 'call_l' }] }] } } });
    const session = await client.sessions.create(agentId, { on_busy: 'reject', metadata: { from: 'on-busy' } });
    // Busy: the first message waits for its external tool's result.
    const first = (await client.sessions.send(session.id, 'look it up')).message!.id;
    await until(async () => (await client.sessions.pendingToolCalls(session.id)).length === 1, 10_000);
    // A tab of its own: the 409 it is shown is expected here.
    await inSessionTab(session.id, 'on-busy', async (tab) => {
      assert.equal(await tab.locator('#on-busy').inputValue(), 'reject', "the session's default is preselected");
      await tab.fill('#message', 'not now');
      await tab.click('#composer button');
      await tab.waitForSelector('#status.error:has-text("Not sent: the session is busy")');
      assert.equal(await tab.locator('#message').inputValue(), 'not now', 'the typed text stays');
      await tab.selectOption('#on-busy', 'interrupt');
      await tab.click('#composer button');
      await until(async () => (await client.sessions.message(session.id, first)).status === 'cancelled', 10_000);
      const cancelled = (await client.sessions.events(session.id, { limit: 100 })).events.find((e) => e.type === 'message.status_changed' && e.message_id === first && e.data.to === 'cancelled');
      assert.equal(cancelled?.type === 'message.status_changed' && cancelled.data.on_busy, 'interrupt', 'the box sent interrupt');
      assert.deepEqual(problems, [], 'no script errors');
    });
  });

  it('clears an error when the tab changes, and a failed lookup leaves nothing of the previous answer under it', async () => {
    const { agentId } = await scriptedAgent(h, [{ text: 'hi' }]);
    const batch = await client.batches.create([{ agent_id: agentId, message: { content: [{ type: 'text', text: 'hi' }] } }]);
    // Its 4xx answers are expected here, so nothing is watched.
    const tab = await signedInTab(() => {});
    try {
      await until(async () => (await tab.locator('#sessions li[data-session]').count()) > 0, 10_000);

      await tab.click('#tabs button[data-tab="batches"]');
      await tab.fill('#batch-id', batch.batch_id);
      await tab.click('#batch-form button');
      await tab.waitForSelector(`#batch td:has-text("${batch.sessions[0].session_id}")`);
      await tab.fill('#batch-id', 'bat_missing');
      await tab.click('#batch-form button');
      await tab.waitForSelector('#status.error:has-text("bat_missing")');
      assert.equal(await tab.locator('#batch table, #batch progress').count(), 0, 'the earlier batch is not left under the error as if it were bat_missing');

      await tab.click('#tabs button[data-tab="sessions"]');
      assert.equal(await tab.locator('#status').innerText(), '', 'the batch error does not follow to the sessions tab');
      assert.equal(await tab.locator('#status.error').count(), 0);

      // The same for the session filter: a filter the API refuses (a key no session can have) leaves no earlier list.
      await tab.fill('#metadata-filter', 'bad key=x');
      await tab.click('#session-filter button');
      await tab.waitForSelector('#status.error:has-text("metadata.<key>")');
      assert.equal(await tab.locator('#sessions li[data-session]').count(), 0, 'no sessions shown as if they matched');
      await tab.click('#tabs button[data-tab="webhooks"]');
      assert.equal(await tab.locator('#status').innerText(), '');
    } finally {
      await tab.close();
    }
  });

  it('shows an agent name as text, not markup', async () => {
    // Any text but controls is a valid name (src/domain/name-text.ts); the console must never parse one as HTML.
    const name = '<img src=x onerror=alert(1)><b>bold</b>';
    const { agent } = await deployFolder(client, join(ROOT, 'examples/weather-agent'), { name, createNew: true });
    const seen: string[] = [];
    const tab = await signedInTab((t) => {
      t.on('dialog', (d) => (seen.push(`dialog: ${d.message()}`), void d.dismiss()));
      t.on('console', (m) => m.type() === 'error' && seen.push(`console: ${m.text()}`));
      t.on('pageerror', (e) => seen.push(`page: ${e.message}`));
    });
    try {
      const item = tab.locator(`#agents li[data-agent="${agent.id}"]`);
      await item.waitFor();
      assert.equal((await item.innerText()).split('\n')[0], name, 'the name, character for character');
      assert.equal(await tab.locator('#agents img, #agents b').count(), 0, 'no element made of the name');
      await item.click();
      assert.deepEqual(seen, [], 'no dialog, script error or CSP violation');
    } finally {
      await tab.close();
    }
  });

  it('lists the selected agent’s schedules, pauses one, shows its runs, and shows them disarmed once the agent is deleted', async () => {
    const { agentId } = await scriptedAgent(h, [{ text: 'done' }]);
    const message = { content: [{ type: 'text' as const, text: 'tick' }] };
    const live = await client.schedules.create(agentId, { name: 'every second', cron: '* * * * * *', message });
    const weekly = await client.schedules.create(agentId, { name: 'weekly', cron: '0 9 * * 1', timezone: 'Europe/Paris', message, paused: true });
    await until(async () => (await client.schedules.runs(live.id)).runs.some((r) => r.status === 'sent'), 8000);
    const seen: string[] = [];
    const tab = await signedInTab((t) => {
      t.on('console', (m) => m.type() === 'error' && seen.push(`console: ${m.text()}`));
      t.on('pageerror', (e) => seen.push(`page: ${e.message}`));
      t.on('response', (r) => r.status() >= 400 && seen.push(`${r.status()} ${r.url()}`));
    });
    const stateOf = (id: string) => tab.locator(`#schedules-table tr[data-schedule="${id}"] .schedule-state`);
    try {
      await tab.locator(`#agents li[data-agent="${agentId}"]`).click();
      await tab.click('#tabs button[data-tab="schedules"]');
      await tab.waitForSelector(`#schedules-table tr[data-schedule="${live.id}"]`);
      assert.equal(await tab.locator('#schedule-hint').isHidden(), true);
      assert.deepEqual([await stateOf(live.id).innerText(), await stateOf(weekly.id).innerText()], ['active', 'paused']);
      assert.match(await tab.locator(`#schedules-table tr[data-schedule="${weekly.id}"]`).innerText(), /weekly\s+0 9 \* \* 1\s+Europe\/Paris\s+paused/);
      // Its runs, newest first, with the sessions they opened.
      await tab.locator(`#schedules-table tr[data-schedule="${live.id}"] button:has-text("Runs")`).click();
      await tab.waitForSelector('#schedule-runs tbody td.st-sent');
      assert.match(await tab.locator('#schedule-runs tbody tr').first().innerText(), /ses_/);
      // Pause through the page: the API says so too.
      await tab.locator(`#schedules-table tr[data-schedule="${live.id}"] button:has-text("Pause")`).click();
      await tab.waitForSelector(`#schedules-table tr[data-schedule="${live.id}"] .schedule-state:has-text("paused")`);
      assert.equal((await client.schedules.get(live.id)).paused, true);
      await tab.locator(`#schedules-table tr[data-schedule="${weekly.id}"] button:has-text("Resume")`).click();
      await tab.waitForSelector(`#schedules-table tr[data-schedule="${weekly.id}"] .schedule-state:has-text("active")`);
      // The agent deleted: both read disarmed, with nothing to resume.
      await client.agents.delete(agentId);
      await tab.click('#schedule-refresh');
      await tab.waitForSelector(`#schedules-table tr[data-schedule="${weekly.id}"] .schedule-state:has-text("agent deleted")`);
      assert.equal(await stateOf(live.id).innerText(), 'agent deleted');
      assert.equal(await tab.locator('#schedules-table button:has-text("Pause"), #schedules-table button:has-text("Resume")').count(), 0);
      assert.deepEqual(seen, [], 'no script error, CSP violation or refused request');
    } finally {
      await tab.close();
    }
  });

  it('serves only the console’s own files, each with the policy', async () => {
    const js = await fetch(`${h.baseUrl}/console/js/clients/console/src/main.js`);
    assert.equal(js.status, 200);
    assert.match(js.headers.get('content-type') ?? '', /javascript/);
    assert.equal(js.headers.get('content-security-policy'), CONSOLE_CSP);
    await js.text();
    const { request } = await import('node:http');
    for (const path of ['/console/js/..%2f..%2fpackage.json', '/console/js/../../package.json', '/console/js/.hidden.js', '/console/other.html']) {
      const status = await new Promise<number>((resolve, reject) => {
        // A raw request line: fetch would normalise the dots away.
        const req = request({ host: '127.0.0.1', port: h.running.ports.web, path, method: 'GET' }, (res) => (res.resume(), resolve(res.statusCode ?? 0)));
        req.on('error', reject);
        req.end();
      });
      assert.equal(status, 404, path);
    }
  });
});
