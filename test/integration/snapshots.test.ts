import assert from 'node:assert/strict';
import { startHarness, type Harness } from '../support/harness.js';
import { reserve, sha256, tarGz, type Reservation } from '../support/archives.js';
import type { ErrorBody } from '../support/wire.js';

describe('source snapshots', () => {
  let h: Harness;
  let archive: Buffer;
  before(async () => {
    h = await startHarness({ roles: ['web'] });
    archive = await tarGz([{ name: 'troupe.json', content: '{}' }, { name: 'agent.js', content: 'exports.agent = {};' }]);
  });
  after(async () => {
    await h?.close();
  });

  /** The upload URL as returned, re-pointed at the harness's random port. */
  const upload = (r: Reservation, body: RequestInit['body'], headers: Record<string, string> = r.upload_headers, extra: RequestInit = {}) =>
    fetch(r.upload_url.replace(h.running.core.config.publicUrl, h.baseUrl), { method: 'PUT', headers, body, ...extra });
  const finalize = async (id: string) => (await h.api(`/v1/source-snapshots/${id}/finalize`, { method: 'POST' })).json() as Promise<{ status: string; failure_reason: string | null }>;

  it('reserves an upload target with a signed token and an expiry', async () => {
    const res = await h.api('/v1/source-snapshots', { method: 'POST', json: { format: 'tar.gz', sha256: sha256(archive), size_bytes: archive.length, metadata: { commit: 'abc123', 'ci.run': 7 } } });
    assert.equal(res.status, 201);
    const r = (await res.json()) as Reservation;
    assert.match(r.source_snapshot_id, /^snap_/);
    assert.equal(r.status, 'pending_upload');
    assert.equal(r.upload_url, `${h.running.core.config.publicUrl}/v1/source-snapshots/${r.source_snapshot_id}/upload`);
    assert.equal(r.upload_headers['Content-Type'], 'application/gzip');
    assert.match(r.upload_headers['X-Upload-Token'], /^v1\./);
    const ttl = Date.parse(r.expires_at) - Date.now();
    assert.ok(ttl > 3500_000 && ttl <= 3600_000, `expires in about an hour, got ${ttl} ms`);
    const got = (await (await h.api(`/v1/source-snapshots/${r.source_snapshot_id}`)).json()) as { metadata: unknown; status: string };
    assert.deepEqual(got.metadata, { commit: 'abc123', 'ci.run': 7 });
  });

  it('refuses a format other than tar.gz, and bad checksums or sizes', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ format: 'zip', sha256: sha256(archive), size_bytes: 10 }, 'format'],
      [{ format: 'tar.gz', sha256: sha256(archive).toUpperCase(), size_bytes: 10 }, 'sha256'],
      [{ format: 'tar.gz', sha256: sha256(archive), size_bytes: 0 }, 'size_bytes'],
      [{ format: 'tar.gz', sha256: sha256(archive), size_bytes: 1.5 }, 'size_bytes'],
    ];
    for (const [json, param] of cases) {
      const res = await h.api('/v1/source-snapshots', { method: 'POST', json });
      assert.equal(res.status, 400, param);
      assert.equal(((await res.json()) as ErrorBody).error.param, param);
    }
  });

  it('uploads with the returned headers and finalizes to ready; finalize is repeatable', async () => {
    const r = await reserve(h, archive);
    const up = await upload(r, archive);
    assert.equal(up.status, 200);
    assert.deepEqual(await up.json(), { source_snapshot_id: r.source_snapshot_id, status: 'pending_upload', received_bytes: archive.length, sha256: sha256(archive) });
    assert.deepEqual(await finalize(r.source_snapshot_id), { ...(await finalize(r.source_snapshot_id)), status: 'ready', failure_reason: null });
    const again = await upload(r, archive);
    assert.equal(again.status, 409, 'a ready snapshot is no longer writable');
  });

  it('refuses an upload without a valid token', async () => {
    const r = await reserve(h, archive);
    const other = await reserve(h, archive);
    const noToken = await upload(r, archive, { 'Content-Type': 'application/gzip' });
    assert.equal(noToken.status, 401);
    assert.equal(((await noToken.json()) as ErrorBody).error.code, 'missing_upload_token');
    const wrongSnapshot = await upload(r, archive, other.upload_headers);
    assert.equal(wrongSnapshot.status, 401);
    assert.equal(((await wrongSnapshot.json()) as ErrorBody).error.code, 'invalid_upload_token');
    const tampered = await upload(r, archive, { ...r.upload_headers, 'X-Upload-Token': r.upload_headers['X-Upload-Token'].slice(0, -3) + 'xyz' });
    assert.equal(tampered.status, 401);
    const apiKeyOnly = await upload(r, archive, { 'Content-Type': 'application/gzip', Authorization: `Bearer ${h.apiKey}` });
    assert.equal(apiKeyOnly.status, 401, 'the API key does not authorise uploads');
    assert.equal((await finalize(r.source_snapshot_id)).failure_reason, 'No object was uploaded to the upload target.');
  });

  it('refuses a wrong upload content type', async () => {
    const r = await reserve(h, archive);
    const res = await upload(r, archive, { ...r.upload_headers, 'Content-Type': 'text/plain' });
    assert.equal(res.status, 415);
  });

  it('fails finalize with the exact size difference', async () => {
    const r = await reserve(h, archive);
    assert.equal((await upload(r, archive.subarray(0, archive.length - 5))).status, 200);
    const f = await finalize(r.source_snapshot_id);
    assert.equal(f.status, 'failed');
    assert.match(f.failure_reason!, new RegExp(`Size mismatch: reserved ${archive.length} bytes, uploaded ${archive.length - 5} bytes`));
    assert.equal(await h.running.core.stores.blobs.exists('snapshots', r.source_snapshot_id), null, 'a failed snapshot keeps no object');
  });

  it('fails finalize with the exact checksum difference', async () => {
    const r = await reserve(h, archive);
    const forged = Buffer.from(archive);
    forged[forged.length - 1] ^= 0xff;
    await upload(r, forged);
    const f = await finalize(r.source_snapshot_id);
    assert.equal(f.status, 'failed');
    assert.equal(f.failure_reason, `SHA-256 mismatch: reserved ${sha256(archive)}, uploaded ${sha256(forged)}.`);
  });

  it('a re-upload before finalize replaces the object', async () => {
    const r = await reserve(h, archive);
    const forged = Buffer.alloc(archive.length, 7);
    assert.equal((await upload(r, forged)).status, 200);
    assert.equal((await upload(r, archive)).status, 200);
    assert.equal((await finalize(r.source_snapshot_id)).status, 'ready');
  });

  it('cuts an over-size upload off with 413, declared or streamed', async () => {
    const r = await reserve(h, archive);
    const declared = await upload(r, Buffer.concat([archive, Buffer.alloc(10)]));
    assert.equal(declared.status, 413);
    assert.equal(((await declared.json()) as ErrorBody).error.code, 'upload_too_large');
    const chunks = [archive, Buffer.alloc(64 * 1024), Buffer.alloc(64 * 1024)];
    const stream = new ReadableStream({
      pull(c) {
        const next = chunks.shift();
        if (next) c.enqueue(next);
        else c.close();
      },
    });
    const streamed = await upload(r, stream, r.upload_headers, { duplex: 'half' } as RequestInit);
    assert.equal(streamed.status, 413);
    await streamed.body?.cancel();
    assert.equal(await h.running.core.stores.blobs.exists('snapshots', r.source_snapshot_id), null, 'nothing of the cut-off upload is kept');
    assert.equal((await upload(r, archive)).status, 200, 'the target still accepts a correct upload');
    assert.equal((await finalize(r.source_snapshot_id)).status, 'ready');
  });

  it('deletes an unattached snapshot with its object', async () => {
    const r = await reserve(h, archive);
    await upload(r, archive);
    assert.ok(await h.running.core.stores.blobs.exists('snapshots', r.source_snapshot_id));
    const del = await h.api(`/v1/source-snapshots/${r.source_snapshot_id}`, { method: 'DELETE' });
    assert.equal(del.status, 204);
    assert.equal(await del.text(), '');
    assert.equal(await h.running.core.stores.blobs.exists('snapshots', r.source_snapshot_id), null);
    assert.equal((await h.api(`/v1/source-snapshots/${r.source_snapshot_id}`)).status, 404);
    assert.equal((await h.api(`/v1/source-snapshots/${r.source_snapshot_id}`, { method: 'DELETE' })).status, 404);
  });

  it('404s another org\u2019s snapshot', async () => {
    const r = await reserve(h, archive);
    await upload(r, archive);
    const other = await h.running.core.stores.orgs.create(`other-${Date.now()}`);
    const { key } = await h.running.core.stores.apiKeys.create(other._id, 'api');
    const asOther = { headers: { Authorization: `Bearer ${key}` } };
    for (const [method, path] of [['GET', ''], ['POST', '/finalize'], ['DELETE', '']]) {
      const res = await h.api(`/v1/source-snapshots/${r.source_snapshot_id}${path}`, { method, ...asOther });
      assert.equal(res.status, 404, `${method} ${path}`);
    }
    assert.equal((await finalize(r.source_snapshot_id)).status, 'ready', 'untouched for its owner');
  });
});

describe('source snapshot expiry', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ roles: ['web'], env: { TROUPE_UPLOAD_TTL_SECONDS: '1' } });
  });
  after(async () => {
    await h?.close();
  });

  it('refuses an upload after expires_at', async () => {
    const archive = await tarGz([{ name: 'a.js', content: 'x' }]);
    const r = await reserve(h, archive);
    await new Promise((res) => setTimeout(res, Math.max(0, Date.parse(r.expires_at) - Date.now()) + 100));
    const res = await fetch(r.upload_url.replace(h.running.core.config.publicUrl, h.baseUrl), { method: 'PUT', headers: r.upload_headers, body: archive });
    assert.equal(res.status, 403);
    const body = (await res.json()) as ErrorBody;
    assert.equal(body.error.code, 'upload_expired');
    const f = (await (await h.api(`/v1/source-snapshots/${r.source_snapshot_id}/finalize`, { method: 'POST' })).json()) as { status: string };
    assert.equal(f.status, 'failed');
  });
});
