import assert from 'node:assert/strict';
import { PART_LIMITS, PartRefused, resolveFileParts, type FileSource, type StoredFile } from '../../src/lib/llm/file-parts.js';

function source(files: (StoredFile & { bytes: Buffer })[]): FileSource & { reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    get: async (org, id) => (org === 'org_a' ? files.find((f) => f.id === id) ?? null : null),
    bytes: async (id) => {
      reads.push(id);
      return files.find((f) => f.id === id)!.bytes;
    },
  };
}
const file = (id: string, content_type: string, bytes: Buffer, size = bytes.length) => ({ id, filename: `${id}.bin`, content_type, size_bytes: size, bytes });

describe('file parts for model calls', () => {
  it('maps images, PDFs and text, reading each file once', async () => {
    const src = source([file('img', 'image/jpeg', Buffer.from('jpg')), file('doc', 'application/pdf', Buffer.from('%PDF')), file('txt', 'application/json', Buffer.from('{"a":1}'))]);
    const parts = await resolveFileParts(src, 'org_a', [
      { type: 'file', file_id: 'img' },
      { type: 'image', file_id: 'img' },
      { type: 'file', file_id: 'doc' },
      { type: 'file', file_id: 'txt' },
      { type: 'file', file_id: 'txt' },
    ]);
    assert.deepEqual(parts.get('image:img'), { type: 'image', source: { kind: 'base64', mediaType: 'image/jpeg', data: Buffer.from('jpg').toString('base64') } });
    assert.deepEqual(parts.get('file:doc'), { type: 'document', mediaType: 'application/pdf', filename: 'doc.bin', data: Buffer.from('%PDF').toString('base64') });
    assert.match((parts.get('file:txt') as { text: string }).text, /\{"a":1\}/);
    assert.deepEqual(src.reads.sort(), ['doc', 'img', 'img', 'txt']);
  });

  it('refuses unknown and foreign files, oversized parts, binary text and unsupported types', async () => {
    const big = file('big', 'image/png', Buffer.alloc(1), PART_LIMITS.image + 1);
    const src = source([big, file('bin', 'text/plain', Buffer.from([0xff, 0xfe, 0x00])), file('exe', 'application/octet-stream', Buffer.from('MZ'))]);
    const refused = async (id: string, type: 'file' | 'image' = 'file', org = 'org_a') => {
      const err = await resolveFileParts(src, org, [{ type, file_id: id }]).then(() => null, (e: Error) => e);
      assert.ok(err instanceof PartRefused, `${id}: ${String(err)}`);
      return err.message;
    };
    assert.match(await refused('nope'), /file nope does not exist/);
    assert.match(await refused('exe', 'file', 'org_b'), /file exe does not exist/);
    assert.match(await refused('big'), new RegExp(`image parts may be at most ${PART_LIMITS.image} bytes`));
    assert.match(await refused('bin'), /is not UTF-8 text/);
    assert.match(await refused('exe'), /application\/octet-stream, which no model provider takes/);
    assert.deepEqual(src.reads.filter((r) => r === 'big'), [], 'an oversized file is never read');
  });
});
