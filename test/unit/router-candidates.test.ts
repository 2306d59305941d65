import assert from 'node:assert/strict';
import { putRouter, type RouterServicePorts } from '../../src/app/routers/routers.js';
import { TroupeError } from '../../src/domain/errors.js';
import type { CandidateDoc, RouterDoc } from '../../src/domain/views/router.js';
import type { RouterInput } from '../../src/store/routers.js';

/** The service's ports with the org's stored credential names; `puts` records every write. */
function ports(credentials: string[]): RouterServicePorts & { puts: RouterInput[] } {
  const puts: RouterInput[] = [];
  return {
    puts,
    models: { allowPrivate: false },
    stores: {
      credentials: { stored: async (_org, names) => new Set(names.filter((n) => credentials.includes(n))) },
      routers: {
        put: async (orgId, routerId, input) => {
          puts.push(input);
          return { _id: `${orgId}:${routerId}`, org_id: orgId, router_id: routerId, ...input, created_at: new Date(0), updated_at: new Date(0) } as RouterDoc;
        },
      },
    },
  };
}

const candidate = (model: string, extra: Partial<CandidateDoc> = {}): CandidateDoc => ({
  model,
  provider: 'openai',
  upstream_model: model,
  api_key_credential: 'key_a',
  reasoning_efforts: [],
  tools: true,
  thinking: false,
  context_window: 128000,
  input_price: 1,
  output_price: 2,
  ...extra,
});
const input = (...candidates: CandidateDoc[]): RouterInput => ({ default: false, policy: 'priority', candidates });

async function refusal(p: RouterServicePorts, body: RouterInput): Promise<{ code: string; param?: string; status: number }> {
  const err = await putRouter(p, 'org_a', 'r1', body).then(() => null, (e: unknown) => e);
  assert.ok(err instanceof TroupeError, `expected a domain error, got ${String(err)}`);
  return { code: err.code, param: err.param, status: err.status };
}

describe('router candidate checks (src/app/routers)', () => {
  it('stores a router whose candidates all pass', async () => {
    const p = ports(['key_a']);
    const doc = await putRouter(p, 'org_a', 'r1', input(candidate('m1'), candidate('m2', { provider: 'openai-responses', configuration_update: true })));
    assert.equal(doc.router_id, 'r1');
    assert.equal(p.puts.length, 1);
  });

  it('checks candidate by candidate, a repeated model before its credential, and writes nothing', async () => {
    const p = ports([]);
    assert.deepEqual(await refusal(p, input(candidate('m1'), candidate('m1'))), { code: 'unknown_credential', param: 'candidates[0].api_key_credential', status: 400 });
    const q = ports(['key_a']);
    assert.deepEqual(await refusal(q, input(candidate('m1'), candidate('m1', { api_key_credential: 'nope' }))), { code: 'duplicate_candidate', param: 'candidates[1].model', status: 400 });
    assert.equal(p.puts.length + q.puts.length, 0);
  });

  it('refuses a credential another org stored or nobody did', async () => {
    const p = ports(['key_a']);
    assert.deepEqual(await refusal(p, input(candidate('m1'), candidate('m2', { api_key_credential: 'key_b' }))), { code: 'unknown_credential', param: 'candidates[1].api_key_credential', status: 400 });
    assert.equal(p.puts.length, 0);
  });

  it('refuses options the candidate\u2019s provider does not have', async () => {
    const p = ports(['key_a']);
    assert.deepEqual(await refusal(p, input(candidate('m1', { configuration_update: true }))), { code: 'invalid_request', param: 'candidates[0].configuration_update', status: 400 });
    assert.deepEqual(await refusal(p, input(candidate('m1', { thinking_mode: 'adaptive' }))), { code: 'invalid_request', param: 'candidates[0].thinking_mode', status: 400 });
    await putRouter(p, 'org_a', 'r1', input(candidate('m1', { provider: 'anthropic', thinking_mode: 'adaptive' })));
    assert.equal(p.puts.length, 1);
  });
});
