import assert from 'node:assert/strict';
import { scriptedAgent } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { json } from '../support/wait.js';

type Refusal = { error: { type: string; code: string; param: string | null } };

/**
 * The three endpoints that take a user message share one intake
 * (src/app/sessions/send-user-message.ts). Each step below sends all three
 * the same request, wrong in every way the steps before it have not yet
 * fixed, so the answer shows which check comes first: the body's shape, the
 * addressed session or agent, the content's file references, then the
 * running-session cap. All three must answer the same refusal at each step.
 */
describe('user-message intake: one order of checks on every endpoint', function () {
  this.timeout(60_000);
  let h: Harness;
  let agentId: string;
  let idle: string;

  before(async () => {
    // No worker: the batch's session stays running, which is what the cap of 1 counts.
    h = await startHarness({ roles: ['web'], env: { TROUPE_MAX_RUNNING_SESSIONS: '1' } });
    ({ agentId } = await scriptedAgent(h, [{ text: 'hi' }]));
    idle = (await json<{ id: string }>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: {} }), 201)).id;
    const batch = await json<{ sessions: { status: string }[] }>(await h.api('/v1/session-batches', { method: 'POST', json: { items: [{ agent_id: agentId, message: { content: [{ type: 'text', text: 'go' }] } }] } }), 201);
    assert.equal(batch.sessions[0].status, 'running', 'the org is at its cap of one running session');
  });
  after(async () => h?.close());

  /** The same message sent to each endpoint, `sessionId`/`agent` the addressed one; the field that holds the content, per endpoint. */
  const send = (content: unknown[], target: { sessionId: string; agent: string }) => [
    { name: 'events', param: 'content', res: () => h.api(`/v1/sessions/${target.sessionId}/events`, { method: 'POST', json: { type: 'user.message', content } }) },
    { name: 'sync', param: 'parts', res: () => h.api(`/v1/sessions/${target.sessionId}/messages/sync`, { method: 'POST', json: { parts: content } }) },
    { name: 'agent messages', param: 'content', res: () => h.api(`/v1/agents/${target.agent}/messages`, { method: 'POST', json: { type: 'user.message', content } }) },
  ];
  const missingFile = [{ type: 'text', text: 'see' }, { type: 'file', file_id: 'file_doesnotexist' }];
  const good = [{ type: 'text', text: 'hello' }];

  async function refusals(content: unknown[], target: { sessionId: string; agent: string }) {
    const out: { name: string; param: string; status: number; type: string; code: string; errParam: string | null }[] = [];
    for (const { name, param, res } of send(content, target)) {
      const r = await res();
      const body = (await r.json()) as Refusal;
      out.push({ name, param, status: r.status, type: body.error?.type, code: body.error?.code, errParam: body.error?.param });
    }
    return out;
  }

  it('answers 400 for a malformed message before looking at its target, its files or the cap', async () => {
    const answers = await refusals([], { sessionId: 'sess_doesnotexist', agent: 'agent_doesnotexist' });
    for (const a of answers) assert.deepEqual([a.status, a.type, a.errParam], [400, 'invalid_request_error', a.param], a.name);
    assert.equal(new Set(answers.map((a) => a.code)).size, 1, 'one code for the one mistake');
  });

  it('answers 404 for the addressed session or agent before the files and the cap', async () => {
    const answers = await refusals(missingFile, { sessionId: 'sess_doesnotexist', agent: 'agent_doesnotexist' });
    assert.deepEqual(
      answers.map((a) => [a.name, a.status, a.code]),
      [
        ['events', 404, 'session_not_found'],
        ['sync', 404, 'session_not_found'],
        ['agent messages', 404, 'agent_not_found'],
      ],
    );
  });

  it('answers 404 file_not_found for a missing file before the running-session cap', async () => {
    const answers = await refusals(missingFile, { sessionId: idle, agent: agentId });
    for (const a of answers) assert.deepEqual([a.status, a.code, a.errParam], [404, 'file_not_found', `${a.param}[1].file_id`], a.name);
    // A batch item runs the same content checks, and fails on its own (batches are never refused for the cap).
    const batch = await json<{ sessions: { status: string; error: string | null }[] }>(await h.api('/v1/session-batches', { method: 'POST', json: { items: [{ agent_id: agentId, message: { content: missingFile } }] } }), 201);
    assert.deepEqual(batch.sessions.map((i) => [i.status, i.error]), [['failed', 'No such file: file_doesnotexist (items[0].message.content[1].file_id)']]);
  });

  it('answers 429 concurrency_limited for a good message past the cap, and creates no session for it', async () => {
    const sessions = async () => (await json<{ sessions: unknown[] }>(await h.api('/v1/sessions?limit=100'), 200)).sessions.length;
    const before = await sessions();
    const answers = await refusals(good, { sessionId: idle, agent: agentId });
    for (const a of answers) assert.deepEqual([a.status, a.type, a.code], [429, 'rate_limit_error', 'concurrency_limited'], a.name);
    assert.equal(await sessions(), before, 'the refused one-shot message left no session behind');
  });
});
