import assert from 'node:assert/strict';
import { drawRequest, prng, sendRaw } from '../support/raw-http-fuzz.js';
import { startHarness, type Harness } from '../support/harness.js';
import { startRoleProcess, type RoleProcess } from '../support/role-process.js';

/** Requests per ingress; a fixed seed, so a failure is the same request on every run. */
const REQUESTS = 2000;
const SEED = 30;
const IN_FLIGHT = 16;
const ANSWER_MS = 3000;

interface Tally {
  statuses: Map<number, number>;
  unanswered: number;
  serverErrors: string[];
}

async function fuzz(port: number, templates: string[], key: string, seed: number): Promise<Tally> {
  const r = prng(seed);
  const requests = Array.from({ length: REQUESTS }, () => drawRequest(r, templates, { valid: key }));
  const tally: Tally = { statuses: new Map(), unanswered: 0, serverErrors: [] };
  let next = 0;
  const lane = async () => {
    while (next < requests.length) {
      const bytes = requests[next++];
      const status = await sendRaw(port, bytes, ANSWER_MS);
      if (status === null) tally.unanswered++;
      else tally.statuses.set(status, (tally.statuses.get(status) ?? 0) + 1);
      if (status !== null && status >= 500) tally.serverErrors.push(`${status}: ${bytes.toString('latin1').slice(0, 300)}`);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  return tally;
}

const summary = (t: Tally) => `${[...t.statuses].sort(([a], [b]) => a - b).map(([s, n]) => `${s}×${n}`).join(' ')}, no answer ×${t.unanswered}`;

/**
 * Raw HTTP/1.1 against both ingresses of one real process (web and router, as `npm start` shares them): malformed
 * request lines, bad percent-encodings in every path parameter, odd methods, huge and invalid headers, bad
 * Content-Length and Transfer-Encoding, truncated bodies; a valid key on a good share of them so handlers are
 * reached. No answer may be a 5xx, and the process must still be ready afterwards (docs/reliability.md).
 */
describe('raw-HTTP fuzz of both ingresses', function () {
  this.timeout(120_000);
  let h: Harness;
  let p: RoleProcess;

  before(async function () {
    // Like the schemathesis run: the HTTP layer is the same on every MongoDB-wire leg, so `npm test` runs this file
    // on the first leg only (infra/services/run-tests.ts), every leg with TROUPE_FUZZ_SCALE=full.
    h = await startHarness({ roles: [], env: { LOG_LEVEL: 'warn' } });
    // A short body idle timeout: truncated bodies are answered with a 408 quickly instead of after 30 s. The failed-auth
    // limit stays on but out of reach: 15% of the requests carry a bad key, and a 429 for the rest would hide their handlers.
    p = await startRoleProcess(['web', 'router'], { ...h.env, PORT: '0', ROUTER_PORT: '0', LOG_LEVEL: 'info', TROUPE_BODY_IDLE_TIMEOUT_MS: '300', TROUPE_AUTH_FAILURES_PER_MIN: '100000' });
  });
  after(async () => {
    p?.kill('SIGTERM');
    await Promise.race([p?.exited, new Promise((r) => setTimeout(r, 5000))]);
    if (p && p.child.exitCode === null && p.child.signalCode === null) p.kill('SIGKILL');
    await h?.close();
  });

  const templatesOf = async (url: string) => Object.keys(((await (await fetch(url)).json()) as { paths: Record<string, unknown> }).paths);

  for (const ingress of ['router', 'web'] as const) {
    it(`answers ${REQUESTS} malformed requests to the ${ingress === 'web' ? 'base API' : 'routing interface'} without a 5xx, and stays up`, async () => {
      const port = p.ports[ingress]!;
      const templates = ingress === 'web' ? await templatesOf(`http://127.0.0.1:${port}/v1/openapi.json`) : await templatesOf(`http://127.0.0.1:${port}/openapi.json`);
      const t = await fuzz(port, templates, ingress === 'web' ? h.apiKey : h.routingKey, SEED + (ingress === 'web' ? 1 : 0));
      process.stdout.write(`      ${ingress}: ${REQUESTS} requests: ${summary(t)}\n`);
      assert.deepEqual(t.serverErrors.slice(0, 5), [], `${t.serverErrors.length} answers were 5xx`);
      assert.equal(p.child.exitCode, null, 'the process is still running');
      for (const port of [p.ports.web!, p.ports.router!]) assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200);
      // Most requests are answered: a fuzz that only met closed sockets would prove nothing.
      assert.ok(t.unanswered < REQUESTS / 10, summary(t));
    });
  }
});
