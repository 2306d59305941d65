import assert from 'node:assert/strict';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';

describe('test/fakes/llm-upstream: reset() between scenarios', () => {
  it('puts every programmed and counted field back to how a new fake starts, emptying lists in place', () => {
    const fake = new FakeLlmUpstream();
    const self = fake as unknown as Record<string, unknown>;
    const fresh = new FakeLlmUpstream() as unknown as Record<string, unknown>;
    const requests = fake.requests;
    fake.failNext(503, 3);
    fake.failNextSaying(401, () => 'no');
    // Every other field a scenario can set, set to something a new fake does not have.
    const programmed = Object.keys(fresh).filter((k) => !['server', 'url', 'requests', 'failures'].includes(k));
    assert.ok(programmed.length >= 10, `fields found: ${programmed.join(', ')}`);
    for (const k of programmed) self[k] = { programmed: k };
    fake.requests.push({ path: '/v1/chat/completions', headers: {}, body: {} });
    fake.url = 'http://127.0.0.1:1';

    fake.reset();
    for (const k of Object.keys(fresh)) if (k !== 'url') assert.deepEqual(self[k], fresh[k], `${k} is reset`);
    assert.equal(fake.requests, requests, 'the list a test holds is the one emptied');
    assert.equal(fake.url, 'http://127.0.0.1:1', 'where it listens is kept');
  });
});
