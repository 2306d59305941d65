import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { connect } from 'node:net';
import { startHarness, type Harness } from '../support/harness.js';

const LIMIT = 1024 * 1024;
const BOUNDARY = '----troupe-test-boundary-7f3a';

interface Part {
  name: string;
  filename?: string;
  contentType?: string;
  data: Buffer | string;
}

/** A multipart/form-data body written by hand, so filenames reach the server exactly as given. */
function multipart(parts: Part[]): Buffer {
  const chunks: Buffer[] = [];
  for (const p of parts) {
    let head = `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${p.name}"`;
    if (p.filename !== undefined) head += `; filename="${p.filename}"`;
    head += '\r\n';
    if (p.contentType) head += `Content-Type: ${p.contentType}\r\n`;
    chunks.push(Buffer.from(head + '\r\n'), Buffer.from(p.data), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(chunks);
}

const MULTIPART = `multipart/form-data; boundary=${BOUNDARY}`;

interface FileBody {
  id: string;
  filename: string;
  size_bytes: number;
  content_type: string;
  created_at: string;
}

describe('files', function () {
  this.timeout(60_000);
  let h: Harness;
  let otherAuth: { Authorization: string };

  before(async () => {
    h = await startHarness({ roles: ['web'], env: { TROUPE_MAX_FILE_BYTES: String(LIMIT) } });
    const other = await h.running.core.stores.orgs.create('files-other-org');
    const { key } = await h.running.core.stores.apiKeys.create(other._id, 'api');
    otherAuth = { Authorization: `Bearer ${key}` };
  });
  after(async () => {
    await h?.close();
  });

  async function upload(parts: Part[]): Promise<Response> {
    return h.api('/v1/files', { method: 'POST', body: multipart(parts), headers: { 'Content-Type': MULTIPART } });
  }

  async function blobCounts(): Promise<{ files: number; chunks: number }> {
    // Give any chunk write still in flight time to land, so a leftover cannot hide behind a race.
    await new Promise((r) => setTimeout(r, 250));
    const db = h.running.core.db;
    return { files: await db.collection('files.files').countDocuments(), chunks: await db.collection('files.chunks').countDocuments() };
  }

  it('round-trips the exact bytes, with metadata and an attachment download', async () => {
    const bytes = randomBytes(600 * 1024);
    const res = await upload([{ name: 'purpose', data: 'test' }, { name: 'file', filename: 'report.bin', contentType: 'application/pdf', data: bytes }]);
    assert.equal(res.status, 201);
    const body = (await res.json()) as FileBody;
    assert.match(body.id, /^file_[0-9a-z]{26}$/);
    assert.equal(body.filename, 'report.bin');
    assert.equal(body.size_bytes, bytes.length);
    assert.equal(body.content_type, 'application/pdf');
    assert.ok(!Number.isNaN(Date.parse(body.created_at)));

    const meta = await h.api(`/v1/files/${body.id}`);
    assert.equal(meta.status, 200);
    assert.deepEqual(await meta.json(), body);

    const dl = await h.api(`/v1/files/${body.id}/content`);
    assert.equal(dl.status, 200);
    assert.equal(dl.headers.get('content-type'), 'application/pdf');
    assert.equal(dl.headers.get('content-length'), String(bytes.length));
    assert.match(dl.headers.get('content-disposition') ?? '', /^attachment; filename="report\.bin"/);
    assert.ok(Buffer.from(await dl.arrayBuffer()).equals(bytes), 'downloaded bytes equal the uploaded ones');
  });

  it('accepts a file of exactly the limit', async () => {
    const res = await upload([{ name: 'file', filename: 'max.bin', data: Buffer.alloc(LIMIT, 7) }]);
    assert.equal(res.status, 201);
    const body = (await res.json()) as FileBody;
    assert.equal(body.size_bytes, LIMIT);
    // RFC 7578: a part without Content-Type is text/plain.
    assert.equal(body.content_type, 'text/plain');
  });

  it('stores the bare, lower-cased part content type and serves it with nosniff', async () => {
    const res = await upload([{ name: 'file', filename: 'pic.png', contentType: 'Image/PNG; charset=binary', data: 'x' }]);
    assert.equal(res.status, 201);
    const { id, content_type } = (await res.json()) as FileBody;
    assert.equal(content_type, 'image/png');
    const dl = await h.api(`/v1/files/${id}/content`);
    assert.equal(dl.headers.get('content-type'), 'image/png');
    assert.equal(dl.headers.get('x-content-type-options'), 'nosniff');
    await dl.arrayBuffer();
  });

  it('keeps only the leaf name of a path, with either separator', async () => {
    for (const [sent, leaf] of [['../../etc/passwd', 'passwd'], ['C:\\x\\y.txt', 'y.txt'], ['a/b\\c/..', 'file'], ['dir/', 'file']]) {
      const res = await upload([{ name: 'file', filename: sent, data: 'hello' }]);
      assert.equal(res.status, 201, sent);
      const body = (await res.json()) as FileBody;
      assert.equal(body.filename, leaf, sent);
      const dl = await h.api(`/v1/files/${body.id}/content`);
      assert.ok(!(dl.headers.get('content-disposition') ?? '').includes('/'), 'no path in the download name');
      assert.equal(await dl.text(), 'hello');
    }
  });

  it('415s anything but multipart/form-data', async () => {
    for (const [type, body] of [['application/json', '{"file":"x"}'], ['text/plain', 'hello'], ['application/octet-stream', 'raw']]) {
      const res = await h.api('/v1/files', { method: 'POST', body, headers: { 'Content-Type': type } });
      assert.equal(res.status, 415, type);
      const err = ((await res.json()) as { error: { type: string } }).error;
      assert.equal(err.type, 'unsupported_media_type');
    }
  });

  it('400s a form without the file field, and a malformed multipart body', async () => {
    const res = await upload([{ name: 'other', filename: 'x.txt', data: 'x' }, { name: 'note', data: 'y' }]);
    assert.equal(res.status, 400);
    const err = ((await res.json()) as { error: { code: string; param: string } }).error;
    assert.equal(err.code, 'file_required');
    assert.equal(err.param, 'file');

    const noBoundary = await h.api('/v1/files', { method: 'POST', body: 'x', headers: { 'Content-Type': 'multipart/form-data' } });
    assert.equal(noBoundary.status, 400);
    assert.equal(((await noBoundary.json()) as { error: { code: string } }).error.code, 'malformed_multipart');
  });

  it('413s a streamed upload as soon as it passes the limit, reads no further and keeps no blob', async () => {
    const before = await blobCounts();
    const total = 64 * 1024 * 1024;
    const chunk = Buffer.alloc(64 * 1024, 1);
    let sent = 0;
    const head = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n\r\n`);
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(head);
      },
      pull(c) {
        if (sent >= total) return c.close();
        sent += chunk.length;
        c.enqueue(new Uint8Array(chunk));
      },
    });
    const res = await h.api('/v1/files', { method: 'POST', body: stream, headers: { 'Content-Type': MULTIPART }, duplex: 'half' } as RequestInit);
    assert.equal(res.status, 413);
    const err = ((await res.json()) as { error: { type: string; code: string } }).error;
    assert.equal(err.type, 'request_too_large');
    assert.equal(err.code, 'file_too_large');
    assert.ok(sent < total / 4, `the server stopped reading early (client sent ${sent} of ${total} bytes)`);
    assert.deepEqual(await blobCounts(), before, 'no partial blob or chunk remains');
    assert.equal((await h.running.core.db.collection('files').countDocuments({ filename: 'big.bin' })), 0);
  });

  it('413s a declared Content-Length far over the limit before reading', async () => {
    const before = await blobCounts();
    const res = await upload([{ name: 'file', filename: 'big.bin', data: Buffer.alloc(LIMIT + 128 * 1024) }]);
    assert.equal(res.status, 413);
    assert.deepEqual(await blobCounts(), before);
  });

  it('413s a file just over the limit inside an allowed Content-Length', async () => {
    const before = await blobCounts();
    const res = await upload([{ name: 'file', filename: 'big.bin', data: Buffer.alloc(LIMIT + 1) }]);
    assert.equal(res.status, 413);
    assert.deepEqual(await blobCounts(), before);
  });

  it('413s a request that keeps streaming other parts after a small file', async () => {
    const filler = Buffer.alloc(60 * 1024, 0x61).toString();
    const parts: Part[] = [{ name: 'file', filename: 'small.txt', data: 'tiny' }];
    for (let i = 0; i < 30; i++) parts.push({ name: `pad${i}`, filename: `pad${i}.bin`, data: filler });
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new Uint8Array(multipart(parts)));
        c.close();
      },
    });
    const before = await blobCounts();
    const res = await h.api('/v1/files', { method: 'POST', body: stream, headers: { 'Content-Type': MULTIPART }, duplex: 'half' } as RequestInit);
    assert.equal(res.status, 413);
    await res.body?.cancel();
    assert.equal(await h.running.core.db.collection('files').countDocuments({ filename: 'small.txt' }), 0);
    assert.deepEqual(await blobCounts(), before, 'the small file\'s blob was removed too');
  });

  it('removes the partial blob when the client disconnects mid-upload', async () => {
    const before = await blobCounts();
    const url = new URL(h.baseUrl);
    const socket = connect(Number(url.port), url.hostname);
    await once(socket, 'connect');
    const head = Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="cut.bin"\r\n\r\n`);
    socket.write(
      `POST /v1/files HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${h.apiKey}\r\n` +
        `Content-Type: ${MULTIPART}\r\nContent-Length: ${LIMIT}\r\n\r\n`,
    );
    socket.write(head);
    socket.write(Buffer.alloc(600 * 1024, 2));
    await new Promise((r) => setTimeout(r, 300));
    socket.destroy();
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(await blobCounts(), before, 'no chunk of the cut-off upload remains');
    assert.equal(await h.running.core.db.collection('files').countDocuments({ filename: 'cut.bin' }), 0);
    assert.equal((await h.api('/v1/files?limit=1')).status, 200, 'the server still answers');
  });

  it('404s another org\u2019s file and never lists it', async () => {
    const res = await upload([{ name: 'file', filename: 'mine.txt', data: 'secret bytes' }]);
    const { id } = (await res.json()) as FileBody;
    for (const path of [`/v1/files/${id}`, `/v1/files/${id}/content`]) {
      const r = await h.api(path, { headers: otherAuth });
      assert.equal(r.status, 404, path);
      assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'file_not_found');
    }
    assert.equal((await h.api(`/v1/files/${id}`, { method: 'DELETE', headers: otherAuth })).status, 404);
    const list = (await (await h.api('/v1/files', { headers: otherAuth })).json()) as { files: FileBody[] };
    assert.deepEqual(list.files, []);
    assert.equal((await h.api(`/v1/files/${id}`)).status, 200, 'still there for its owner');
  });

  it('lists files in pages', async () => {
    const all = (await (await h.api('/v1/files?limit=100')).json()) as { files: FileBody[]; has_more: boolean };
    assert.ok(all.files.length >= 3);
    const first = (await (await h.api('/v1/files?limit=2')).json()) as { files: FileBody[]; has_more: boolean; next_cursor: string };
    assert.equal(first.files.length, 2);
    assert.equal(first.has_more, true);
    const second = (await (await h.api(`/v1/files?limit=2&after=${first.next_cursor}`)).json()) as { files: FileBody[] };
    assert.deepEqual([...first.files, ...second.files].map((f) => f.id), all.files.slice(0, 2 + second.files.length).map((f) => f.id));
    assert.equal((await h.api('/v1/files?limit=0')).status, 400);
  });

  it('deletes the record and its bytes', async () => {
    const res = await upload([{ name: 'file', filename: 'gone.txt', data: 'bye' }]);
    const { id } = (await res.json()) as FileBody;
    assert.equal(await h.running.core.db.collection('files.files').countDocuments({ _id: id as never }), 1);
    const del = await h.api(`/v1/files/${id}`, { method: 'DELETE' });
    assert.equal(del.status, 204);
    assert.equal(await del.text(), '');
    assert.equal((await h.api(`/v1/files/${id}`)).status, 404);
    assert.equal((await h.api(`/v1/files/${id}/content`)).status, 404);
    assert.equal((await h.api(`/v1/files/${id}`, { method: 'DELETE' })).status, 404);
    assert.equal(await h.running.core.db.collection('files.files').countDocuments({ _id: id as never }), 0);
    assert.equal(await h.running.core.db.collection('files.chunks').countDocuments({ files_id: id as never }), 0);
  });
});
