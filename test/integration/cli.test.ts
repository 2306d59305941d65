import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TroupeClient } from '../../clients/typescript/src/client.js';
import { startHarness, type Harness } from '../support/harness.js';
import { troupe } from '../support/troupe-cli.js';

const ROOT = join(__dirname, '../../..');

describe('troupe CLI', function () {
  this.timeout(120_000);
  let h: Harness;
  let dir: string;
  let env: Record<string, string>;
  let client: TroupeClient;
  const run = (args: string[], timeoutMs?: number) => troupe(args, env, dir, timeoutMs);
  /** The first `troupe deploy` of the example, run once whichever test needs the agent first (so --grep can pick any test). */
  let firstDeploy: ReturnType<typeof run> | undefined;
  const deployOnce = () => (firstDeploy ??= run(['deploy', join(ROOT, 'examples/weather-agent')]));
  const deployedAgent = async () => (await deployOnce()).stdout.trim();

  /** Answers the first pending external call of a session, as the user's own service would. */
  async function answer(sid: string, result: unknown): Promise<string> {
    for (let i = 0; i < 400; i++) {
      const [call] = (await client.sessions.pendingToolCalls(sid)).filter((c) => c.kind === 'external');
      if (call) {
        const r = await run(['tool-result', sid, call.tool_call_id, '--json', JSON.stringify(result)]);
        assert.equal(r.code, 0, r.stderr);
        return call.tool_call_id;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`no external call on ${sid}`);
  }

  before(async () => {
    h = await startHarness({ env: { TROUPE_SESSION_SHARDS: '4' } });
    client = new TroupeClient({ baseUrl: h.baseUrl, apiKey: h.apiKey });
    dir = mkdtempSync(join(tmpdir(), 'troupe-cli-'));
    env = { TROUPE_BASE_URL: h.baseUrl, TROUPE_API_KEY: h.apiKey, TROUPE_CONFIG: join(dir, 'config.json') };
  });
  after(async () => {
    await h?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('deploys a folder: prints the agent id, then publishes a new version of the same agent', async () => {
    const first = await deployOnce();
    assert.equal(first.code, 0, first.stderr);
    const agent = first.stdout.trim();
    assert.match(agent, /^agt_/);
    assert.match(first.stderr, /created agent/);
    const second = await run(['deploy', join(ROOT, 'examples/weather-agent'), '--json']);
    assert.equal(second.code, 0, second.stderr);
    const out = JSON.parse(second.stdout) as { created: boolean; agent: { id: string }; version: { number: number } };
    assert.deepEqual([out.created, out.agent.id, out.version.number], [false, agent, 2]);
  });

  it('sends with --wait while tail follows, answering the external tool with tool-result', async () => {
    const agent = await deployedAgent();
    const created = await run(['sessions', 'create', agent, '--metadata', 'team=cli', '--metadata', 'run=1']);
    assert.equal(created.code, 0, created.stderr);
    const sid = created.stdout.trim();
    const tail = run(['tail', sid, '--json', '--until-idle']);
    const send = run(['send', sid, 'Weather in Oslo?', '--wait', '--timeout', '30']);
    const callId = await answer(sid, { city: 'Oslo', summary: 'clear skies', high_c: 25, low_c: 14 });
    const sent = await send;
    assert.equal(sent.code, 0, sent.stderr);
    assert.equal(sent.stdout.trim(), 'Oslo today: a high of 25 °C (77 °F), clear skies.');
    assert.equal(callId, 'call_0_0');
    const tailed = await tail;
    assert.equal(tailed.code, 0, tailed.stderr);
    const lines = tailed.stdout.trim().split('\n').map((l) => JSON.parse(l) as { sequence_number: number });
    const ledger = (await client.sessions.events(sid, { limit: 100 })).events;
    assert.deepEqual(lines, ledger, 'tail --json printed the ledger, each event once, in order');
    const readable = await run(['tail', sid, '--until-idle']);
    assert.match(readable.stdout, /user +Weather in Oslo\?/);
    assert.match(readable.stdout, /result +call_0_0 → \{"city":"Oslo"/);
    assert.match(readable.stdout, /assistant +Oslo today: a high of 25 °C/);
    const listed = await run(['sessions', 'list', '--metadata', 'team=cli', '--json']);
    assert.deepEqual((JSON.parse(listed.stdout) as { sessions: { id: string }[] }).sessions.map((s) => s.id), [sid]);
    const none = await run(['sessions', 'list', '--metadata', 'team=nobody']);
    assert.equal(none.code, 0);
    assert.equal(none.stdout, '');
  });

  it('deploys the code-agent examples from disk and completes a message with send --wait --answer, the CLI only', async () => {
    // As the README and examples/triage-agent-*/README.md say: deploy, create a session, send --wait answering the external tool.
    await Promise.all(
      ['triage-agent-js', 'triage-agent-py'].map(async (example) => {
        const deployed = await run(['deploy', join(ROOT, 'examples', example)]);
        assert.equal(deployed.code, 0, deployed.stderr);
        const sid = (await run(['sessions', 'create', deployed.stdout.trim()])).stdout.trim();
        // --answer for the custom tool must not replace what the sandboxed handler returns: only external calls are answered.
        const sent = await run(['send', sid, 'When does my plan renew?', '--wait', '--timeout', '40', '--answer', 'service_status={"status":"all systems normal"}', '--answer', 'lookup_account={"plan":"Forged"}'], 60_000);
        assert.equal(sent.code, 0, `${example}: ${sent.stderr}`);
        assert.equal(sent.stdout.trim(), 'Answer: your Team plan renews on 2026-12-01; service status: all systems normal.', example);
        assert.match(sent.stderr, /answered service_status\({"area":"billing"}\) \(ctx_2\) with --answer/, example);
        const submitted = (await client.sessions.events(sid, { limit: 100 })).events.filter((e) => e.type === 'tool.result_submitted');
        assert.equal(submitted.length, 1, `${example}: the external call was answered once`);
        // A result the tool's output_schema refuses: the API's 422 ends send with its reason, not a wait until --timeout.
        const refused = await run(['send', sid, 'Is the API down?', '--wait', '--timeout', '40', '--answer', 'service_status={"state":"up"}'], 60_000);
        assert.equal(refused.code, 3, `${example}: ${refused.stderr}`);
        assert.match(refused.stderr, /does not match the output_schema of service_status/, example);
      }),
    );
    const noWait = await run(['send', 'ses_x', 'hi', '--answer', 'service_status={}']);
    assert.equal(noWait.code, 2);
    assert.match(noWait.stderr, /--answer needs --wait/);
    const badJson = await run(['send', 'ses_x', 'hi', '--wait', '--answer', 'service_status={nope']);
    assert.equal(badJson.code, 2);
    assert.match(badJson.stderr, /the result of service_status is not valid JSON/);
  });

  it('writes text it did not write itself (metadata, model and user text) so that it cannot drive the terminal', async () => {
    const agent = await deployedAgent();
    // A colour, then OSC 52 (write the clipboard), then a right-to-left override.
    const hostile = 'x\u001b[31mred\u001b]52;c;ZXZpbA==\u0007\u202Eexe.pdf';
    const created = await run(['sessions', 'create', agent, '--metadata', 'team=terminal', '--metadata', `note=${hostile}`]);
    assert.equal(created.code, 0, created.stderr);
    const listed = await run(['sessions', 'list', '--metadata', 'team=terminal']);
    assert.equal(listed.code, 0, listed.stderr);
    assert.doesNotMatch(listed.stdout, /[\u001b\u0007\u202e]/, 'no raw escape, bell or override on stdout');
    assert.match(listed.stdout, /x\\u001b\[31mred\\u001b\]52;c;ZXZpbA==\\u0007\\u202eexe\.pdf/);
    const json = await run(['sessions', 'list', '--metadata', 'team=terminal', '--json']);
    assert.doesNotMatch(json.stdout, /[\u001b\u0007\u202e]/);
    assert.equal((JSON.parse(json.stdout) as { sessions: { metadata: Record<string, string> }[] }).sessions[0].metadata.note, hostile, 'the JSON still reads as the value stored');
  });

  it('creates a batch from JSON Lines and reports progress until it is terminal', async () => {
    const agent = await deployedAgent();
    const file = join(dir, 'items.jsonl');
    writeFileSync(file, ['{"text":"one","metadata":{"n":"1"}}', '', `{"agent_id":"${agent}","message":{"content":[{"type":"text","text":"two"}]}}`].join('\n'));
    const pending = run(['batch', 'create', '--file', file, '--agent', agent, '--timeout', '60']);
    const batchSessions = async () => {
      for (let i = 0; i < 400; i++) {
        const page = await client.sessions.list({ limit: 100 });
        const children = page.sessions.filter((s) => s.agent_id === agent && s.last_message_status === 'requires_action');
        if (children.length === 2) return children;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error('batch sessions never asked for the tool');
    };
    for (const s of await batchSessions()) await answer(s.id, { city: 'Oslo', summary: 'wind', high_c: 5, low_c: 0 });
    const done = await pending;
    assert.equal(done.code, 0, done.stderr);
    assert.match(done.stdout.trim(), /^sbt_|^batch_|^[a-z]+_/);
    assert.match(done.stderr, /completed: 2 completed, 0 failed/);
  });

  it('exits with the documented codes', async () => {
    const noConfig = await troupe(['sessions', 'list'], { TROUPE_CONFIG: join(dir, 'none.json') }, dir);
    assert.equal(noConfig.code, 2);
    assert.match(noConfig.stderr, /No base URL configured/);
    assert.equal((await run(['send'])).code, 2, 'missing arguments');
    assert.equal((await run(['tool-result', 'ses_x', 'call_x', '--json', '{nope'])).code, 2);
    const missing = await run(['send', 'ses_missing', 'hi']);
    assert.equal(missing.code, 3);
    assert.match(missing.stderr, /ses_missing \(404 session_not_found\)/);
    const down = await troupe(['sessions', 'list'], { ...env, TROUPE_BASE_URL: 'http://127.0.0.1:1' }, dir);
    assert.equal(down.code, 4);
    assert.match(down.stderr, /cannot reach/);
    const sid = (await run(['sessions', 'create', await deployedAgent()])).stdout.trim();
    const slow = await run(['send', sid, 'Weather?', '--wait', '--timeout', '1']);
    assert.equal(slow.code, 6, slow.stderr);
    assert.match(slow.stderr, /still requires_action/);
    assert.match(slow.stderr, new RegExp(`answer it with:\\n  troupe tool-result ${sid} call_0_0 --json`), 'send tells how to answer the tool call');
    assert.match(slow.stderr, /--wait --answer get_forecast='\{…\}'/, 'and how to answer it from send itself');
    const notWaiting = await run(['tool-result', sid, 'call_nope', '--json', '{}', '--timeout', '0.5']);
    assert.equal(notWaiting.code, 3);
  });

  it('says at once what became of a tool call that is no longer pending, instead of waiting out --timeout', async () => {
    const agent = await deployedAgent();
    const forecast = { city: 'Oslo', summary: 'sunny', high_c: 20, low_c: 9 };
    const answered = (await run(['sessions', 'create', agent])).stdout.trim();
    assert.equal((await run(['send', answered, 'Weather?'])).code, 0);
    assert.equal(await answer(answered, forecast), 'call_0_0');
    let started = Date.now();
    const again = await run(['tool-result', answered, 'call_0_0', '--json', JSON.stringify(forecast), '--timeout', '30']);
    assert.equal(again.code, 3, again.stderr);
    assert.match(again.stderr, new RegExp(`tool call call_0_0 of session ${answered} \\(message msg_\\w+\\) was already answered; it is no longer pending`));
    assert.ok(Date.now() - started < 15_000, 'at once, not after the 30 s timeout');

    const cancelled = (await run(['sessions', 'create', agent])).stdout.trim();
    assert.equal((await run(['send', cancelled, 'Weather?'])).code, 0);
    await (async () => {
      for (let i = 0; i < 400 && !(await client.sessions.pendingToolCalls(cancelled)).length; i++) await new Promise((r) => setTimeout(r, 50));
    })();
    const [message] = (await client.sessions.messages(cancelled)).messages;
    const cancel = await fetch(`${h.baseUrl}/v1/sessions/${cancelled}/messages/${message.id}/cancel`, { method: 'POST', headers: { Authorization: `Bearer ${h.apiKey}` } });
    assert.equal(cancel.status, 200, await cancel.clone().text());
    started = Date.now();
    const late = await run(['tool-result', cancelled, 'call_0_0', '--json', JSON.stringify(forecast), '--timeout', '30']);
    assert.equal(late.code, 3, late.stderr);
    assert.match(late.stderr, new RegExp(`tool call call_0_0 of session ${cancelled} \\(message ${message.id}\\) is no longer pending: it was cancelled: The message was cancelled\\.`));
    assert.ok(Date.now() - started < 15_000, 'at once, not after the 30 s timeout');
  });

  it('keeps profiles in the config file', async () => {
    const saved = await troupe(['login', '--base-url', h.baseUrl, '--api-key', h.apiKey, '--profile', 'ci'], { TROUPE_CONFIG: env.TROUPE_CONFIG }, dir);
    assert.equal(saved.code, 0, saved.stderr);
    const listed = await troupe(['--profile', 'ci', 'sessions', 'list', '--json'], { TROUPE_CONFIG: env.TROUPE_CONFIG }, dir);
    assert.equal(listed.code, 0, listed.stderr);
    assert.ok(Array.isArray((JSON.parse(listed.stdout) as { sessions: unknown[] }).sessions));
    const unknown = await troupe(['--profile', 'nope', 'sessions', 'list'], { TROUPE_CONFIG: env.TROUPE_CONFIG }, dir);
    assert.equal(unknown.code, 2);
  });
});
