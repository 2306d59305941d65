import assert from 'node:assert/strict';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { candidate, chatRequest, messagesRequest, responsesRequest } from '../fakes/llm-conversation.js';
import { startHarness, type Harness } from '../support/harness.js';

type Json = Record<string, any>;
type Format = 'messages' | 'chat' | 'responses';

/** Each format is routed to a provider of another format, so a bad part would have to be translated. */
const PATH: Record<Format, string> = { messages: '/to-openai/messages', chat: '/to-anthropic/chat/completions', responses: '/to-anthropic/v1/responses' };
const PNG = 'iVBORw0KGgo=';

/** Bodies that use every nested shape the translators read, as the vendors document them. */
const RICH: Record<Format, () => Json> = {
  messages: () =>
    messagesRequest({
      system: [{ type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }, { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }] },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'hm', signature: 'sig' }, { type: 'text', text: 'Let me look.' }, { type: 'tool_use', id: 'call_0', name: 'get_weather', input: { city: 'Paris' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_0', content: [{ type: 'text', text: 'sunny' }], is_error: false }, { type: 'text', text: 'And for 3 days?' }] },
      ],
      tool_choice: { type: 'tool', name: 'get_weather' },
      stop_sequences: ['END'],
    }),
  chat: () =>
    chatRequest({
      messages: [
        { role: 'developer', content: [{ type: 'text', text: 'You are terse.' }] },
        { role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}`, detail: 'low' } }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_0', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'call_0', content: [{ type: 'text', text: 'sunny' }] },
        { role: 'user', content: 'And for 3 days?' },
      ],
      stop: ['END'],
      temperature: null,
    }),
  responses: () =>
    responsesRequest({
      input: [
        { role: 'user', content: [{ type: 'input_text', text: 'What is this?' }, { type: 'input_image', image_url: `data:image/png;base64,${PNG}`, detail: 'auto' }] },
        { type: 'reasoning', id: 'rs_1', summary: [] },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Let me look.', annotations: [] }] },
        { type: 'function_call', call_id: 'call_0', name: 'get_weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call_output', call_id: 'call_0', output: [{ type: 'input_text', text: 'sunny' }] },
        { type: 'custom_tool_call', call_id: 'call_1', name: 'grep', input: 'x' },
        { type: 'custom_tool_call_output', call_id: 'call_1', output: 'none' },
        { role: 'user', content: 'And for 3 days?' },
      ],
      tools: [{ type: 'function', name: 'get_weather', parameters: { type: 'object' } }, { type: 'namespace', name: 'fs', description: 'Files.', tools: [{ type: 'custom', name: 'grep' }] }],
    }),
};

/** Client mistakes inside nested arrays: each must be a 400 naming `param`, and nothing may reach the provider. */
const BAD: [Format, string, (b: Json) => void, string][] = [
  ['messages', 'null content block', (b) => (b.messages[0].content = [null]), 'messages[0].content[0]'],
  ['messages', 'null system block', (b) => (b.system = [null]), 'system[0]'],
  ['messages', 'system text block without text', (b) => (b.system = [{ type: 'text' }]), 'system[0].text'],
  ['messages', 'image without source', (b) => (b.messages[0].content[1] = { type: 'image' }), 'messages[0].content[1].source'],
  ['messages', 'base64 image without data', (b) => delete b.messages[0].content[1].source.data, 'messages[0].content[1].source.data'],
  ['messages', 'image by file id', (b) => (b.messages[0].content[1].source = { type: 'file', file_id: 'file_1' }), 'messages[0].content[1].source.type'],
  ['messages', 'tool_use without name', (b) => delete b.messages[1].content[2].name, 'messages[1].content[2].name'],
  ['messages', 'tool_use input not an object', (b) => (b.messages[1].content[2].input = 'city=Paris'), 'messages[1].content[2].input'],
  ['messages', 'tool_result without tool_use_id', (b) => delete b.messages[2].content[0].tool_use_id, 'messages[2].content[0].tool_use_id'],
  ['messages', 'null inside tool_result content', (b) => (b.messages[2].content[0].content = [null]), 'messages[2].content[0].content[0]'],
  ['messages', 'text block with a number', (b) => (b.messages[2].content[1].text = 3), 'messages[2].content[1].text'],
  ['messages', 'content a number', (b) => (b.messages[0].content = 3), 'messages[0].content'],
  ['messages', 'tool_choice tool without name', (b) => (b.tool_choice = { type: 'tool' }), 'tool_choice.name'],
  ['messages', 'null stop sequence', (b) => (b.stop_sequences = [null]), 'stop_sequences[0]'],
  ['chat', 'null content part', (b) => (b.messages[1].content = [null]), 'messages[1].content[0]'],
  ['chat', 'image_url without url', (b) => (b.messages[1].content[1].image_url = {}), 'messages[1].content[1].image_url.url'],
  ['chat', 'null tool call', (b) => (b.messages[2].tool_calls = [null]), 'messages[2].tool_calls[0]'],
  ['chat', 'tool call with null function', (b) => (b.messages[2].tool_calls = [{ id: 'a', function: null }]), 'messages[2].tool_calls[0].function'],
  ['chat', 'tool call without id', (b) => delete b.messages[2].tool_calls[0].id, 'messages[2].tool_calls[0].id'],
  ['chat', 'null in a tool message content', (b) => (b.messages[3].content = [null]), 'messages[3].content[0]'],
  ['chat', 'tool message without tool_call_id', (b) => delete b.messages[3].tool_call_id, 'messages[3].tool_call_id'],
  ['chat', 'user message without content', (b) => delete b.messages[4].content, 'messages[4].content'],
  ['chat', 'null in system content', (b) => (b.messages[0].content = [null]), 'messages[0].content[0]'],
  ['chat', 'null stop', (b) => (b.stop = [null]), 'stop[0]'],
  ['responses', 'null item', (b) => (b.input[1] = null), 'input[1]'],
  ['responses', 'null message content part', (b) => (b.input[0].content = [null]), 'input[0].content[0]'],
  ['responses', 'input_image without image_url', (b) => (b.input[0].content[1] = { type: 'input_image', file_id: 'file_1', detail: 'auto' }), 'input[0].content[1].image_url'],
  ['responses', 'null in function_call_output output', (b) => (b.input[4].output = [null]), 'input[4].output[0]'],
  ['responses', 'function_call_output without call_id', (b) => delete b.input[4].call_id, 'input[4].call_id'],
  ['responses', 'function_call without name', (b) => delete b.input[3].name, 'input[3].name'],
  ['responses', 'message with an unknown role', (b) => (b.input[7].role = 'tool'), 'input[7].role'],
  ['responses', 'null namespace tool', (b) => (b.tools[1].tools = [null]), 'tools[1].tools[0]'],
  ['responses', 'function tool without name', (b) => delete b.tools[0].name, 'tools[0].name'],
];

/** What a fuzzed node is replaced with. */
const MUTANTS: unknown[] = [null, 42, 'x', true, {}, [], [null], [{}], { type: 'image' }, { type: 'text' }];

/** Every path into `v` (object keys and array indexes), parents before children. */
function paths(v: unknown, at: (string | number)[] = []): (string | number)[][] {
  if (v === null || typeof v !== 'object') return [];
  const out: (string | number)[][] = [];
  for (const [k, child] of Object.entries(v)) {
    const p = [...at, Array.isArray(v) ? Number(k) : k];
    out.push(p, ...paths(child, p));
  }
  return out;
}

function mutate(body: Json, path: (string | number)[], value: unknown): Json {
  const copy = structuredClone(body);
  let node: any = copy;
  for (const k of path.slice(0, -1)) node = node[k];
  node[path[path.length - 1]] = structuredClone(value);
  return copy;
}

describe('routing interface: nested input', function () {
  this.timeout(180_000);
  let h: Harness;
  let fake: FakeLlmUpstream;
  /** A string body is sent as it is (JSON this process could not stringify itself). */
  const post = (format: Format, body: unknown) =>
    fetch(h.routerUrl + PATH[format], { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${h.routingKey}` }, body: typeof body === 'string' ? body : JSON.stringify(body) });

  before(async () => {
    fake = await FakeLlmUpstream.start();
    h = await startHarness({ roles: ['web', 'router'] });
    assert.equal((await h.api('/v1/credentials/FAKE_KEY', { method: 'PUT', json: { value: 'sk-fake-upstream-key-123' } })).status, 200);
    assert.equal((await h.api('/v1/routers/to-openai', { method: 'PUT', json: { candidates: [candidate(fake, 'openai', 'openai/m')] } })).status, 200);
    assert.equal((await h.api('/v1/routers/to-anthropic', { method: 'PUT', json: { candidates: [candidate(fake, 'anthropic', 'anthropic/m')] } })).status, 200);
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });
  beforeEach(() => fake.reset());

  /** The 400 in the format's envelope; returns its param and message. */
  async function refused(format: Format, res: Response): Promise<{ param: unknown; message: string }> {
    const text = await res.text();
    assert.equal(res.status, 400, text);
    const body = JSON.parse(text) as Json;
    assert.equal(body.error.type, 'invalid_request_error', text);
    assert.equal(body.error.code, 'invalid_request', text);
    if (format === 'messages') {
      assert.equal(body.type, 'error', text);
      assert.match(String(body.request_id), /^req_/);
      assert.equal(body.error.details.param, body.error.param, text);
    } else assert.ok('param' in body.error && 'code' in body.error, text);
    return { param: body.error.param, message: body.error.message };
  }

  for (const format of ['messages', 'chat', 'responses'] as Format[]) {
    it(`${format}: the vendors' nested shapes are taken and translated`, async () => {
      const res = await post(format, RICH[format]());
      assert.equal(res.status, 200, await res.clone().text());
      const sent = JSON.stringify(fake.requests.at(-1)!.body);
      for (const s of ['What is this?', PNG, 'sunny', 'And for 3 days?', 'get_weather']) assert.ok(sent.includes(s), `upstream body carries ${s}: ${sent}`);
      assert.ok(!sent.includes('undefined'), sent);
    });
  }

  for (const [format, what, change, param] of BAD) {
    it(`${format}: ${what} is a 400 naming ${param}, and nothing goes upstream`, async () => {
      const body = RICH[format]();
      change(body);
      const err = await refused(format, await post(format, body));
      assert.equal(err.param, param, err.message);
      assert.ok(err.message.startsWith(param), err.message);
      assert.equal(fake.requests.length, 0);
    });
  }

  for (const format of ['messages', 'chat', 'responses'] as Format[]) {
    it(`${format}: a body nested deeper than 100 levels is a 400 json_too_deep in the format's envelope, and nothing goes upstream`, async () => {
      // 10,000 levels in 20 KB: JSON.parse takes it, the recursive walks after it (translation, JSON.stringify) overflow.
      const deep = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
      // Where each format forwards a free-form object: a tool call's input, or a tool's parameter schema.
      const withDeep = (n: number): string => {
        const body = RICH[format]();
        if (format === 'messages') body.messages[1].content[2].input = 'DEEP';
        else if (format === 'chat') body.tools = [{ type: 'function', function: { name: 'get_weather', parameters: 'DEEP' } }];
        else body.tools[0].parameters = 'DEEP';
        return JSON.stringify(body).replace('"DEEP"', deep(n));
      };
      const text0 = withDeep(10_000);
      const res = await post(format, text0);
      const text = await res.text();
      assert.equal(res.status, 400, text.slice(0, 500));
      const err = (JSON.parse(text) as Json).error;
      assert.equal(err.code, 'json_too_deep', text);
      assert.equal(err.type, 'invalid_request_error', text);
      assert.equal(fake.requests.length, 0);
      // 90 levels inside the body is still taken: the refusal is the depth, not the member.
      const accepted = await post(format, withDeep(90));
      const answer = await accepted.text();
      assert.ok(accepted.status < 500, answer);
      assert.ok(!answer.includes('json_too_deep'), answer);
    });
  }

  it('responses: input of the wrong type says what is allowed', async () => {
    const err = await refused('responses', await post('responses', { model: 'service/routing', input: 42 }));
    assert.equal(err.param, 'input');
    assert.equal(err.message, 'input must be string or array.');
    const empty = await refused('responses', await post('responses', { model: 'service/routing', input: [] }));
    assert.equal(empty.param, 'input');
    assert.equal(fake.requests.length, 0);
  });

  it('no 5xx, and no nonsense upstream, over every nested node of each format replaced by each mutant', async () => {
    let sent = 0;
    let refusedCount = 0;
    for (const format of ['messages', 'chat', 'responses'] as Format[]) {
      const base = RICH[format]();
      // Bounded: the rich bodies have under 100 nodes each, times the mutants.
      for (const p of paths(base).filter((p) => p[0] !== 'model')) {
        for (const m of MUTANTS) {
          const before = fake.requests.length;
          const res = await post(format, mutate(base, p, m));
          const text = await res.text();
          const where = `${format} ${p.join('.')} = ${JSON.stringify(m)}: ${res.status} ${text.slice(0, 300)}`;
          assert.ok(res.status === 200 || res.status === 400, where);
          sent++;
          if (res.status === 400) {
            refusedCount++;
            const body = JSON.parse(text) as Json;
            assert.equal(typeof body.error.param, 'string', where);
            assert.equal(fake.requests.length, before, `a refused body reached the provider: ${where}`);
          } else {
            const up = JSON.stringify(fake.requests.at(-1)!.body);
            assert.ok(!up.includes('undefined') && !up.includes('"name":""'), `${where}\nupstream: ${up}`);
          }
        }
      }
    }
    assert.ok(sent > 1000 && refusedCount > sent / 3, `${sent} mutations, ${refusedCount} refused`);
  });
});
