import assert from 'node:assert/strict';
import { plan } from '../../actors/tool-runner/decide.js';
import { mcpOutcome } from '../../actors/tool-runner/mcp-call.js';
import { validateManifest } from '../../src/app/agents/manifest.js';
import { mcpServerNameProblem, mcpToolName } from '../../src/domain/mcp-tools.js';
import type { ToolDef } from '../../src/domain/agent.js';
import type { ToolRunJob } from '../../src/domain/actors/tool-runner.js';
import type { MessageState } from '../../src/domain/ledger.js';
import type { SessionDoc } from '../../src/domain/views/session.js';
import type { AgentVersionDoc } from '../../src/store/agents.js';

const server = { name: 'tickets', url: 'https://mcp.example.com/mcp', timeout_seconds: 9 };
const tool: ToolDef = { name: 'mcp__tickets__search', kind: 'custom', path: 'mcp:tickets/search', timeout_seconds: 9, description: null, input_schema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] }, output_schema: null, permission: 'always_ask', mcp: { server: 'tickets', tool: 'search' } };
const session = { _id: 'ses_1', org_id: 'org_1', version_id: 'ver_1', internet_access: false, storage_binding_id: null } as unknown as SessionDoc;
const version = (servers = [server]) => ({ _id: 'ver_1', tools: [tool], manifest: { mcp_servers: servers } }) as unknown as AgentVersionDoc;
const message = { id: 'msg_1', status: 'running', attempt: 1, pending_tool_calls: [{ id: 'call_1', name: tool.name }] } as unknown as MessageState;
const job = (args: Record<string, unknown>): ToolRunJob => ({ org_id: 'org_1', session_id: 'ses_1', message_id: 'msg_1', attempt: 1, tool_call_id: 'call_1', tool_name: tool.name, arguments: args });

describe('MCP tools', () => {
  it('names a tool mcp__<server>__<tool> and refuses server names that would make the name ambiguous', () => {
    assert.equal(mcpToolName('tickets', 'search'), 'mcp__tickets__search');
    assert.equal(mcpServerNameProblem('my_server-2'), null);
    for (const bad of ['a__b', '_a', 'a_']) assert.ok(mcpServerNameProblem(bad), bad);
  });

  it('validates mcp_servers in the manifest: defaults, names, duplicates', () => {
    const base = { name: 'x', sdk: 'troupe-js@1', entrypoint: 'a.js:a', llm_options: [{ id: 'm', provider: 'scripted', script: 's.json' }] };
    const m = validateManifest({ ...base, mcp_servers: [{ name: 'tickets', url: 'https://mcp.example.com/mcp' }] });
    assert.deepEqual(m.mcp_servers, [{ name: 'tickets', url: 'https://mcp.example.com/mcp', timeout_seconds: 60 }]);
    assert.equal(validateManifest(base).mcp_servers, undefined);
    const refused = (servers: unknown[]) => assert.throws(() => validateManifest({ ...base, mcp_servers: servers }), (e: { status: number; param: string }) => e.status === 400 && /^manifest\.mcp_servers/.test(e.param));
    refused([{ name: 'a__b', url: 'https://x.example' }]);
    refused([{ name: 'a', url: 'https://x.example', credential: 'lower-case' }]);
    refused([{ name: 'a', url: 'https://x.example', permission: 'sometimes' }]);
    refused([{ name: 'a', url: 'https://x.example', extra: 1 }]);
    refused([{ name: 'a', url: 'https://x.example' }, { name: 'a', url: 'https://y.example' }]);
  });

  it('plans an MCP tool call as a remote call, after the arguments are checked', () => {
    assert.deepEqual(plan(job({ q: 'printer' }), session, version(), message), { kind: 'mcp', session, server, tool: 'search', timeout_ms: 9000 });
    const bad = plan(job({ q: 7 }), session, version(), message);
    assert.equal(bad.kind, 'fail');
    const gone = plan(job({ q: 'x' }), session, version([]), message);
    assert.deepEqual(gone, { kind: 'fail', error: 'the agent has no MCP server named "tickets"' });
  });

  it("turns an MCP answer into the model's result: structured content, else text, else the blocks; isError is an error", () => {
    assert.deepEqual(mcpOutcome({ content: [{ type: 'text', text: '5' }], structuredContent: { sum: 5 } }), { ok: true, output: { sum: 5 } });
    assert.deepEqual(mcpOutcome({ content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }), { ok: true, output: 'a\nb' });
    const image = { type: 'image' as const, data: 'AAAA', mimeType: 'image/png' };
    assert.deepEqual(mcpOutcome({ content: [{ type: 'text', text: 'a' }, image] }), { ok: true, output: [{ type: 'text', text: 'a' }, image] });
    assert.deepEqual(mcpOutcome({ content: [{ type: 'text', text: 'nope' }], isError: true }), { ok: false, error: 'nope' });
    assert.deepEqual(mcpOutcome({ content: [], isError: true }), { ok: false, error: 'The MCP tool reported an error.' });
  });
});
