import assert from 'node:assert/strict';
import { FakeLlmUpstream } from '../fakes/llm-upstream.js';
import { agentWith } from '../support/agent-fixture.js';
import { startHarness, type Harness } from '../support/harness.js';
import { json, until } from '../support/wait.js';

/** A 1x1 PNG. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
const PDF = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n');

describe('content parts: files and images reach providers in their native form', function () {
  this.timeout(60_000);
  let h: Harness;
  let fake: FakeLlmUpstream;
  const ids: Record<string, string> = {};

  before(async () => {
    fake = await FakeLlmUpstream.start();
    h = await startHarness({ roles: ['web', 'worker'], env: { TROUPE_SESSION_SHARDS: '2' } });
    const upload = async (name: string, bytes: Buffer, type: string) => {
      const form = new FormData();
      form.append('file', new Blob([bytes], { type }), name);
      return (await json<{ id: string }>(await h.api('/v1/files', { method: 'POST', body: form }), 201)).id;
    };
    ids.png = await upload('dot.png', PNG, 'image/png');
    ids.pdf = await upload('report.pdf', PDF, 'application/pdf');
    ids.txt = await upload('notes.txt', Buffer.from('The launch code is 0000.'), 'text/plain');
    ids.zip = await upload('archive.zip', Buffer.from('PK\x03\x04not really'), 'application/zip');
  });
  after(async () => {
    await h?.close();
    await fake?.close();
  });
  beforeEach(() => fake.reset());

  async function run(provider: 'openai' | 'openai-responses' | 'anthropic', content: unknown[]): Promise<{ status: string; error: string | null }> {
    const base = provider === 'anthropic' ? fake.anthropicBase : fake.openaiBase;
    const { agentId } = await agentWith(h, { llm_options: [{ id: 'main', provider, model: 'm-test', base_url: base }] });
    const sid = (await json<{ id: string }>(await h.api(`/v1/agents/${agentId}/sessions`, { method: 'POST', json: { llm_api_key: 'sk-test' } }), 201)).id;
    const sent = await json<{ message: { id: string } }>(await h.api(`/v1/sessions/${sid}/events`, { method: 'POST', json: { type: 'user.message', content } }), 201);
    return until(async () => {
      const m = await json<{ status: string; error: string | null }>(await h.api(`/v1/sessions/${sid}/messages/${sent.message.id}`), 200);
      return ['completed', 'failed'].includes(m.status) && m;
    });
  }
  const parts = [
    { type: 'text', text: 'Look at these.' },
    { type: 'image', file_id: 'png' },
    { type: 'file', file_id: 'pdf' },
    { type: 'file', file_id: 'txt' },
  ];
  const withIds = () => parts.map((p) => ('file_id' in p ? { ...p, file_id: ids[p.file_id as string] } : p));
  type Block = Record<string, unknown>;
  const userContent = (body: Record<string, unknown>, key: 'messages' | 'input'): Block[] => {
    const list = body[key] as { role?: string; content: Block[] }[];
    return list.filter((m) => m.role === 'user').flatMap((m) => m.content);
  };

  it('anthropic: image and document blocks with base64 data, text files as text', async () => {
    const m = await run('anthropic', withIds());
    assert.equal(m.status, 'completed', m.error ?? '');
    const content = userContent(fake.requests[0].body, 'messages');
    assert.deepEqual(content[1], { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG.toString('base64') } });
    assert.deepEqual(content[2], { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF.toString('base64') }, title: 'report.pdf' });
    assert.equal(content[3].type, 'text');
    assert.match(String(content[3].text), /notes\.txt[\s\S]*The launch code is 0000\./);
  });

  it('openai chat: image_url with a data URL, file with file_data', async () => {
    const m = await run('openai', withIds());
    assert.equal(m.status, 'completed', m.error ?? '');
    const content = userContent(fake.requests[0].body, 'messages');
    assert.deepEqual(content[1], { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG.toString('base64')}` } });
    assert.deepEqual(content[2], { type: 'file', file: { filename: 'report.pdf', file_data: `data:application/pdf;base64,${PDF.toString('base64')}` } });
    assert.match(String(content[3].text), /The launch code is 0000\./);
  });

  it('openai responses: input_image and input_file', async () => {
    const m = await run('openai-responses', withIds());
    assert.equal(m.status, 'completed', m.error ?? '');
    const content = userContent(fake.requests[0].body, 'input');
    assert.deepEqual(content[1], { type: 'input_image', image_url: `data:image/png;base64,${PNG.toString('base64')}` });
    assert.deepEqual(content[2], { type: 'input_file', filename: 'report.pdf', file_data: `data:application/pdf;base64,${PDF.toString('base64')}` });
    assert.equal(content[3].type, 'input_text');
  });

  it('fails the message with a clear error for a part no provider takes, without calling the model', async () => {
    const zip = await run('openai', [{ type: 'text', text: 'x' }, { type: 'file', file_id: ids.zip }]);
    assert.equal(zip.status, 'failed');
    assert.match(zip.error!, new RegExp(`file ${ids.zip} \\(archive\\.zip\\) is application/zip`));
    const notImage = await run('anthropic', [{ type: 'image', file_id: ids.pdf }]);
    assert.equal(notImage.status, 'failed');
    assert.match(notImage.error!, /image part .* is application\/pdf; images must be one of/);
    assert.equal(fake.requests.length, 0, 'the model is never called with a part it cannot take');
  });
});
