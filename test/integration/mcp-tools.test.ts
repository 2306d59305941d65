import assert from 'node:assert/strict';
import { listMcpTools } from '../../src/app/agents/mcp-tools.js';
import { validateManifest } from '../../src/app/agents/manifest.js';
import { mcpCaller } from '../../actors/tool-runner/mcp-call.js';
import { McpConnector } from '../../src/lib/mcp/connector.js';
import { TroupeError } from '../../src/domain/errors.js';
import type { McpServerEntry, ScriptTurn } from '../../src/domain/agent.js';
import { FakeMcpServer } from '../fakes/mcp-server.js';
import { createAgentFrom } from '../support/archives.js';
import { startHarness, type Harness } from '../support/harness.js';
import { json } from '../support/wait.js';

interface Ev {
  type: string;
  data: Record<string, unknown>;
}

const TOKEN = 'mcp-bearer-4f9c2a7e1d';
const RESULT_CAP = 64 * 1024;
/** The tool-runner's idle TTL for pooled MCP sessions here: long enough for a message's turns, short enough to watch. */
const POOL_IDLE_MS = 3000;

describe('MCP tools: listed at publish, called by the tool-runner', function () {
  this.timeout(30_000);
  let h: Harness;
  let fake: FakeMcpServer;

  before(async () => {
    fake = await FakeMcpServer.start();
    h = await startHarness({ env: { TROUPE_MCP_MAX_RESULT_BYTES: String(RESULT_CAP), TROUPE_MCP_POOL_IDLE_MS: String(POOL_IDLE_MS) } });
    await json(await h.api('/v1/credentials/MCP_TOKEN', { method: 'PUT', json: { value: TOKEN } }), 200);
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });
  afterEach(() => {
    fake.down = false;
    fake.extraTools = [];
  });

  function manifest(server: Record<string, unknown>): Record<string, unknown> {
    return {
      name: 'mcp-agent',
      sdk: 'troupe-js@1',
      entrypoint: 'agent.js:agent',
      llm_options: [{ id: 'script', provider: 'scripted', script: 'script.json' }],
      // always_allow: these tests run the tools straight away, with or without the approval flow.
      mcp_servers: [{ name: 'fake', url: fake.url, credential: 'MCP_TOKEN', permission: 'always_allow', ...server }],
    };
  }

  function publish(server: Record<string, unknown> = {}, turns: ScriptTurn[] = [{ text: 'hi' }]): Promise<Response> {
    const m = manifest(server);
    return createAgentFrom(h, m, [
      { name: 'troupe.json', content: JSON.stringify(m) },
      { name: 'agent.js', content: 'exports.agent = {};\n' },
      { name: 'script.json', content: JSON.stringify({ turns }) },
    ]);
  }

  async function version(agent: { id: string; active_version_id: string }): Promise<{ tools: Record<string, unknown>[] }> {
    return json(await h.api(`/v1/agents/${agent.id}/versions/${agent.active_version_id}`), 200);
  }

  /** Runs one message to its end on a new session of the agent; returns the reply and the session's events. */
  async function run(agentId: string): Promise<{ status: string; text: string; events: Ev[] }> {
    const session = await json<{ id: string }>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: {} }), 201);
    const reply = await json<{ status: string; output: { parts: { type: string; text?: string }[] } }>(await h.api(`/v1/sessions/${session.id}/messages/sync`, { method: 'POST', json: { parts: [{ type: 'text', text: 'go' }] } }), 200);
    const { events } = await json<{ events: Ev[] }>(await h.api(`/v1/sessions/${session.id}/events?limit=100`), 200);
    return { status: reply.status, text: reply.output.parts.map((p) => p.text ?? '').join(''), events };
  }

  const toolEvent = (events: Ev[], type: string, name: string) => events.find((e) => e.type === type && e.data.tool_name === name);

  it('records the listed tools, their input schemas and permission on the version; allowed_tools filters', async () => {
    const seen = fake.authorizations.length;
    const all = await json<{ id: string; active_version_id: string }>(await publish(), 201);
    const tools = (await version(all)).tools;
    assert.deepEqual(tools.map((t) => t.name), ['mcp__fake__echo', 'mcp__fake__add', 'mcp__fake__fail', 'mcp__fake__big', 'mcp__fake__slow', 'mcp__fake__whoami']);
    const add = tools[1];
    assert.equal(add.kind, 'custom');
    assert.equal(add.permission, 'always_allow');
    assert.deepEqual(add.mcp, { server: 'fake', tool: 'add' });
    // The server's $schema is dropped; the rest is kept as listed.
    assert.deepEqual(add.input_schema, { type: 'object', properties: { a: { type: 'number' } , b: { type: 'number' } }, required: ['a', 'b'] });
    assert.equal(add.description, 'Adds two numbers.');
    // The listing carried the credential as the bearer.
    assert.ok(fake.authorizations.slice(seen).length > 0 && fake.authorizations.slice(seen).every((a) => a === `Bearer ${TOKEN}`));

    // allowed_tools keeps only what it names: a tool it leaves out cannot fail the publish (a backreference pattern).
    fake.extraTools = [{ name: 'evil', inputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)\\1$' } } } }];
    // Without a permission of its own, an MCP server's tools ask first (recorded for the approval flow).
    const some = await json<{ id: string; active_version_id: string }>(await publish({ allowed_tools: ['echo'], permission: undefined }), 201);
    const kept = (await version(some)).tools;
    assert.deepEqual(kept.map((t) => [t.name, t.permission]), [['mcp__fake__echo', 'always_ask']]);

    const missing = await json<{ error: { param: string; code: string } }>(await publish({ allowed_tools: ['echo', 'nope'] }), 400);
    assert.equal(missing.error.param, 'manifest.mcp_servers[0].allowed_tools[1]');
  });

  it('refuses bad server entries at publish with a 400 naming the index', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ name: 'a__b' }, 'manifest.mcp_servers[0].name'],
      [{ name: 'has space' }, 'manifest.mcp_servers[0].name'],
      [{ credential: 'NO_SUCH_CREDENTIAL' }, 'manifest.mcp_servers[0].credential'],
      [{ url: 'ftp://example.com/mcp' }, 'manifest.mcp_servers[0].url'],
    ];
    for (const [server, param] of cases) {
      const body = await json<{ error: { param: string } }>(await publish(server), 400);
      assert.equal(body.error.param, param, JSON.stringify(server));
    }
    const m = manifest({});
    const twice = { ...m, mcp_servers: [...(m.mcp_servers as object[]), ...(m.mcp_servers as object[])] };
    const dup = await createAgentFrom(h, twice, [{ name: 'troupe.json', content: JSON.stringify(twice) }, { name: 'agent.js', content: '' }, { name: 'script.json', content: '{"turns":[{"text":"x"}]}' }]);
    assert.equal((await json<{ error: { param: string } }>(dup, 400)).error.param, 'manifest.mcp_servers[1].name');
  });

  it('fails publish with a 4xx on a hostile tool schema, and on a server that is down', async () => {
    fake.extraTools = [{ name: 'evil', inputSchema: { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)\\1$' } } } }];
    const backref = await json<{ error: { code: string; message: string } }>(await publish(), 400);
    assert.equal(backref.error.code, 'invalid_tool_schema');
    assert.match(backref.error.message, /mcp__fake__evil/);
    fake.extraTools = [{ name: 'huge', inputSchema: { type: 'object', properties: Object.fromEntries(Array.from({ length: 9000 }, (_, i) => [`p${i}`, { type: 'string', description: 'x'.repeat(20) }])) } }];
    assert.equal((await json<{ error: { code: string } }>(await publish(), 400)).error.code, 'invalid_tool_schema');
    fake.extraTools = [{ name: 'no.dots', inputSchema: { type: 'object' } }];
    assert.equal((await json<{ error: { code: string } }>(await publish(), 400)).error.code, 'invalid_mcp_tool');
    fake.extraTools = [];
    fake.down = true;
    const down = await json<{ error: { code: string; param: string } }>(await publish(), 422);
    assert.equal(down.error.code, 'mcp_server_unavailable');
    assert.equal(down.error.param, 'manifest.mcp_servers[0].url');
  });

  it('lets the model call mcp__<server>__<tool> and records the results as tool events', async () => {
    const calls = fake.calls.length;
    const turns: ScriptTurn[] = [
      { tool_calls: [{ name: 'mcp__fake__echo', arguments: { text: 'hello' } }, { name: 'mcp__fake__add', arguments: { a: 2, b: 3 } }] },
      { text: 'echo={{mcp__fake__echo.echo}} sum={{mcp__fake__add.sum}}' },
    ];
    const agent = await json<{ id: string }>(await publish({}, turns), 201);
    const { status, text, events } = await run(agent.id);
    assert.equal(status, 'completed');
    assert.equal(text, 'echo=hello sum=5');
    assert.deepEqual(toolEvent(events, 'tool.call_completed', 'mcp__fake__add')?.data.output, { sum: 5 });
    assert.equal(toolEvent(events, 'tool.call_completed', 'mcp__fake__echo')?.data.output, '{"echo":"hello"}');
    assert.deepEqual(fake.calls.slice(calls).map((c) => c.name).sort(), ['add', 'echo']);
  });

  it('reuses one MCP session for a message\'s calls in a row, and ends it after the idle TTL', async () => {
    const inits = fake.initializes.length;
    const calls = fake.calls.length;
    const turns: ScriptTurn[] = [
      { tool_calls: [{ name: 'mcp__fake__echo', arguments: { text: 'one' } }] },
      { tool_calls: [{ name: 'mcp__fake__add', arguments: { a: 1, b: 2 } }] },
      { text: 'sum={{mcp__fake__add.sum}}' },
    ];
    const agent = await json<{ id: string }>(await publish({}, turns), 201);
    const { status, text } = await run(agent.id);
    assert.equal(status, 'completed');
    assert.equal(text, 'sum=3');
    assert.deepEqual(fake.calls.slice(calls).map((c) => c.name), ['echo', 'add']);
    const made = fake.callSessions.slice(calls);
    assert.equal(fake.initializes.length - inits, 1, 'one initialize for two calls');
    assert.equal(made[0].session, made[1].session);
    assert.ok(fake.hasSession(made[0].session));
    // Idle past the TTL: the tool-runner ends the session (a DELETE the fake honours).
    const deadline = Date.now() + POOL_IDLE_MS + 5000;
    while (fake.hasSession(made[0].session) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert.ok(!fake.hasSession(made[0].session), 'the idle session was ended');
  });

  it('never shares a pooled session between orgs or across a credential rotation; re-initializes a session the server expired without running the call twice', async () => {
    const values = new Map([['org-a', TOKEN], ['org-b', TOKEN]]);
    const connector = new McpConnector({ allowPrivate: true, maxResultBytes: RESULT_CAP, pool: { sessions: 2, idleMs: 30_000 } });
    const caller = mcpCaller(connector, async (org) => values.get(org) ?? null);
    const server: McpServerEntry = { name: 'fake', url: fake.url, credential: 'MCP_TOKEN', timeout_seconds: 5 };
    const call = async (org: string, text: string) => {
      const before = fake.calls.length;
      const result = await caller.call(org, server, 'echo', { text }, 5000);
      assert.deepEqual(result, { ok: true, output: JSON.stringify({ echo: text }) }, text);
      assert.equal(fake.calls.length - before, 1, `${text} ran once`);
      return fake.callSessions[fake.callSessions.length - 1];
    };
    try {
      const inits = fake.initializes.length;
      const a1 = await call('org-a', 'a1');
      const a2 = await call('org-a', 'a2');
      assert.equal(a2.session, a1.session, 'the same org reuses its session');
      // Same URL, same credential name, even the same value: another org gets a session of its own.
      const b1 = await call('org-b', 'b1');
      assert.notEqual(b1.session, a1.session);
      assert.equal(fake.initializes.length - inits, 2);

      // A rotated credential: a new session, opened with the new bearer; the old one is never used again.
      values.set('org-a', 'rotated-token-77');
      const a3 = await call('org-a', 'a3');
      assert.notEqual(a3.session, a1.session);
      assert.equal(a3.authorization, 'Bearer rotated-token-77');
      assert.deepEqual(fake.initializes.slice(inits), [`Bearer ${TOKEN}`, `Bearer ${TOKEN}`, 'Bearer rotated-token-77']);
      // At most two sessions pooled: the least recently used (org-a's first) was ended.
      assert.equal(connector.pooled, 2);
      const deadline = Date.now() + 5000;
      while (fake.hasSession(a1.session) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      assert.ok(!fake.hasSession(a1.session), 'the evicted session was ended');

      // The server forgets its sessions: the pooled one gets a 404 (nothing ran), is replaced once, and the call runs exactly once.
      fake.expireSessions();
      const initsBefore = fake.initializes.length;
      const a4 = await call('org-a', 'a4');
      assert.notEqual(a4.session, a3.session);
      assert.equal(fake.initializes.length - initsBefore, 1);
      const b2 = await call('org-b', 'b2');
      assert.notEqual(b2.session, b1.session);
      assert.equal(b2.authorization, `Bearer ${TOKEN}`);
      assert.equal(fake.initializes.length - initsBefore, 2);

      // Drain: every pooled session is ended before the connector's close resolves.
      const open = connector.pooled;
      const terminated = fake.terminated;
      await connector.close();
      assert.equal(open, 2);
      assert.equal(fake.terminated - terminated, open);
      assert.ok(!fake.hasSession(a4.session) && !fake.hasSession(b2.session));
    } finally {
      await connector.close();
    }
  });

  it('caps each answer on a pooled session, and does not repeat a call that failed without a 404: the call may have run', async () => {
    const connector = new McpConnector({ allowPrivate: true, maxResultBytes: RESULT_CAP, pool: { sessions: 4, idleMs: 30_000 } });
    const caller = mcpCaller(connector, async () => TOKEN);
    const server: McpServerEntry = { name: 'fake', url: fake.url, credential: 'MCP_TOKEN', timeout_seconds: 5 };
    try {
      assert.equal((await caller.call('org-c', server, 'echo', { text: 'warm' }, 5000)).ok, true);
      // The byte cap holds per call on a reused session, and the overflowing session is dropped.
      const big = await caller.call('org-c', server, 'big', {}, 5000);
      assert.match(!big.ok ? big.error : '', new RegExp(`larger than ${RESULT_CAP} bytes`));
      assert.equal(connector.pooled, 0);
      assert.equal((await caller.call('org-c', server, 'echo', { text: 'warm again' }, 5000)).ok, true);
      const calls = fake.calls.length;
      const inits = fake.initializes.length;
      fake.slowMs = 1500;
      // Timed out after the server got it: an error result, not a second run on a new session.
      const late = await caller.call('org-c', server, 'slow', {}, 500);
      assert.equal(late.ok, false);
      assert.match(!late.ok ? late.error : '', /did not answer in time/);
      await new Promise((r) => setTimeout(r, 1200));
      assert.deepEqual(fake.calls.slice(calls).map((c) => c.name), ['slow']);
      assert.equal(fake.initializes.length, inits, 'no new session was opened to retry it');
      assert.equal(connector.pooled, 0, 'the failed session was dropped');
    } finally {
      fake.slowMs = 3000;
      await connector.close();
    }
  });

  it('asks before an MCP call by default (docs/approvals.md): nothing reaches the server until allowed, and a denied call never does', async () => {
    const calls = fake.calls.length;
    const turns: ScriptTurn[] = [{ tool_calls: [{ name: 'mcp__fake__echo', arguments: { text: 'asked' }, id: 'call_e' }, { name: 'mcp__fake__add', arguments: { a: 1, b: 1 }, id: 'call_a' }] }, { text: 'done' }];
    // No permission in the entry: MCP tools default to always_ask.
    const agent = await json<{ id: string }>(await publish({ permission: undefined }, turns), 201);
    const session = await json<{ id: string }>(await h.api(`/v1/agents/${agent.id}/sessions`, { method: 'POST', json: {} }), 201);
    const sent = await json<{ message: { id: string } }>(await h.api(`/v1/sessions/${session.id}/events`, { method: 'POST', json: { type: 'user.message', content: [{ type: 'text', text: 'go' }] } }), 201);
    const events = async () => (await json<{ events: Ev[] }>(await h.api(`/v1/sessions/${session.id}/events?limit=100`), 200)).events;
    const deadline = Date.now() + 10_000;
    while ((await events()).filter((e) => e.type === 'tool.confirmation_requested').length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert.equal(fake.calls.length, calls, 'nothing called before an answer');
    const answer = (id: string, result: string) => h.api(`/v1/sessions/${session.id}/events`, { method: 'POST', json: { type: 'user.tool_confirmation', message_id: sent.message.id, tool_call_id: id, result } });
    await json(await answer('call_a', 'deny'), 201);
    await json(await answer('call_e', 'allow'), 201);
    while (!(await events()).some((e) => e.type === 'message.status_changed' && e.data.to === 'completed') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const all = await events();
    assert.equal(toolEvent(all, 'tool.call_completed', 'mcp__fake__echo')?.data.output, '{"echo":"asked"}');
    assert.equal(toolEvent(all, 'tool.call_failed', 'mcp__fake__add')?.data.reason, 'denied');
    assert.deepEqual(fake.calls.slice(calls).map((c) => c.name), ['echo'], 'the allowed call ran once, the denied one never');
  });

  it('gives the model an error result for a failing tool, an oversized answer, a timeout and a down server; the message completes', async () => {
    const calls = ['fail', 'big', 'whoami', 'slow'].map((t) => ({ name: `mcp__fake__${t}`, arguments: {} }));
    const turns: ScriptTurn[] = [{ tool_calls: calls }, { text: 'carried on' }];
    const agent = await json<{ id: string }>(await publish({ timeout_seconds: 1 }, turns), 201);
    const first = await run(agent.id);
    assert.equal(first.status, 'completed');
    assert.equal(first.text, 'carried on');
    assert.match(String(toolEvent(first.events, 'tool.call_failed', 'mcp__fake__fail')?.data.error), /the fake failed on purpose/);
    assert.match(String(toolEvent(first.events, 'tool.call_failed', 'mcp__fake__big')?.data.error), new RegExp(`larger than ${RESULT_CAP} bytes`));
    assert.match(String(toolEvent(first.events, 'tool.call_failed', 'mcp__fake__slow')?.data.error), /did not answer in time/);
    // A hostile server echoing the bearer: the model and the ledger get it scrubbed.
    assert.equal(toolEvent(first.events, 'tool.call_completed', 'mcp__fake__whoami')?.data.output, 'you sent Bearer [redacted]');

    fake.down = true;
    const second = await run(agent.id);
    assert.equal(second.status, 'completed');
    assert.match(String(toolEvent(second.events, 'tool.call_failed', 'mcp__fake__fail')?.data.error), /MCP server fake failed the call to fail/);
  });

  it('keeps the credential value out of the ledger, the versions, the API answers and the logs', async () => {
    const db = h.running.core.db;
    for (const c of await db.listCollections().toArray()) {
      const docs = await db.collection(c.name).find({}).toArray();
      assert.ok(!JSON.stringify(docs).includes(TOKEN), `collection ${c.name} holds the credential in the clear`);
    }
    const agents = await json<{ agents: { id: string }[] }>(await h.api('/v1/agents?limit=100'), 200);
    for (const a of agents.agents) assert.ok(!(await (await h.api(`/v1/agents/${a.id}/versions?limit=100`)).text()).includes(TOKEN));
    assert.ok(!h.logs().includes(TOKEN));
  });

  it('refuses loopback and private MCP URLs without the escape hatch, at publish and at call time (DNS rebinding)', async () => {
    const strict = new McpConnector({ allowPrivate: false, maxResultBytes: RESULT_CAP });
    try {
      const ports = { connector: strict, reveal: async () => TOKEN };
      const refusal = async (url: string) => {
        const err = await listMcpTools(ports, 'org', validateManifest(manifest({ url }))).then(() => null, (e: unknown) => e);
        assert.ok(err instanceof TroupeError, String(err));
        assert.equal(err.status, 400);
        assert.equal(err.param, 'manifest.mcp_servers[0].url');
        return err.code;
      };
      assert.equal(await refusal(fake.url), 'mcp_url_not_https');
      assert.equal(await refusal('https://127.0.0.1/mcp'), 'mcp_url_not_public');
      assert.equal(await refusal('https://[::1]:8443/mcp'), 'mcp_url_not_public');
      assert.equal(await refusal('https://10.1.2.3/mcp'), 'mcp_url_not_public');

      // A name that answers public when checked and loopback when connected: the connection's own lookup refuses it.
      let lookups = 0;
      const rebinding = new McpConnector({
        allowPrivate: false,
        maxResultBytes: RESULT_CAP,
        resolver: async () => (lookups++ === 0 ? [{ address: '93.184.216.34', family: 4 }] : [{ address: '127.0.0.1', family: 4 }]),
      });
      try {
        const calls = fake.calls.length;
        const server: McpServerEntry = { name: 'fake', url: `https://mcp.rebind.test:${new URL(fake.url).port}/mcp`, timeout_seconds: 5 };
        const result = await mcpCaller(rebinding, async () => TOKEN).call('org', server, 'echo', { text: 'x' }, 5000);
        assert.equal(result.ok, false);
        assert.match(!result.ok ? result.error : '', /not a public address/);
        assert.ok(lookups >= 2, 'the connection resolved the name again');
        assert.equal(fake.calls.length, calls);
      } finally {
        await rebinding.close();
      }
    } finally {
      await strict.close();
    }
  });
});
