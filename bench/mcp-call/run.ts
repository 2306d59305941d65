/**
 * MCP call benchmark: the tool-runner's cost of one MCP tool call (`mcpCaller`, the real connector with its URL
 * guard, guarded lookup and byte cap) against the stateful fake MCP server on loopback, with a pooled session
 * (TROUPE_MCP_POOL_SESSIONS > 0) and with a session per call (0), interleaved call by call in one run so both see
 * the same host. Prints p50/p99 per call and the HTTP requests the server saw per call (a closing DELETE included, though it runs
 * off the call's path). Figures, not pass/fail.
 */
import { mcpCaller } from '../../actors/tool-runner/mcp-call.js';
import type { McpServerEntry } from '../../src/domain/agent.js';
import { McpConnector } from '../../src/lib/mcp/connector.js';
import { FakeMcpServer } from '../../test/fakes/mcp-server.js';
import { benchArgs } from '../support/args.js';
import { fmt, summary } from '../support/percentiles.js';

const USAGE = 'Usage: node dist/bench/mcp-call/run.js [--n 500] [--warm-up 20]';
const values = benchArgs(USAGE, { n: { type: 'string', default: '500' }, 'warm-up': { type: 'string', default: '20' } }, ['n', 'warm-up']);
const N = Number(values.n);
const WARM_UP = Number(values['warm-up']);

async function main(): Promise<void> {
  const fake = await FakeMcpServer.start();
  const server: McpServerEntry = { name: 'bench', url: fake.url, credential: 'BENCH_TOKEN', timeout_seconds: 10 };
  const cases = [
    { name: 'pooled session (TROUPE_MCP_POOL_SESSIONS=64)', connector: new McpConnector({ allowPrivate: true, maxResultBytes: 1024 * 1024, pool: { sessions: 64, idleMs: 60_000 } }) },
    { name: 'session per call (TROUPE_MCP_POOL_SESSIONS=0)', connector: new McpConnector({ allowPrivate: true, maxResultBytes: 1024 * 1024, pool: { sessions: 0, idleMs: 60_000 } }) },
  ].map((c, i) => ({ ...c, bearer: `bench-token-${i}`, caller: mcpCaller(c.connector, async () => `bench-token-${i}`), ms: [] as number[] }));

  for (let i = 0; i < WARM_UP + N; i++) {
    for (const c of cases) {
      const t0 = performance.now();
      const result = await c.caller.call('org_bench', server, 'echo', { text: `call ${i}` }, 10_000);
      const ms = performance.now() - t0;
      if (!result.ok) throw new Error(`${c.name}: ${result.error}`);
      if (i >= WARM_UP) c.ms.push(ms);
    }
  }

  console.log(`MCP tool call through mcpCaller, loopback, ${N} calls per case (interleaved, after ${WARM_UP} warm-up)`);
  console.log('| case | p50 | p99 | HTTP requests per call |');
  console.log('|---|---|---|---|');
  // Closing first lets every background DELETE land; each case's requests are told apart by its own bearer.
  for (const c of cases) await c.connector.close();
  for (const c of cases) {
    const s = summary(c.ms);
    const requests = fake.authorizations.filter((a) => a === `Bearer ${c.bearer}`).length;
    console.log(`| ${c.name} | ${fmt(s.p50)} | ${fmt(s.p99)} | ${(requests / (N + WARM_UP)).toFixed(2)} |`);
  }
  await fake.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
