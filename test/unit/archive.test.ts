import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { ArchiveError, scanArchive, type ArchiveLimits } from '../../src/lib/archive/archive-scan.js';
import { validateManifest } from '../../src/app/agents/manifest.js';
import { buildVersionContent, SnapshotArchive } from '../../src/app/agents/publish.js';
import { gzipBomb, minimalAgent, tarGz, type TarEntry } from '../support/archives.js';

const SMALL: ArchiveLimits = { maxEntries: 50, maxUnpackedBytes: 256 * 1024, maxFileBytes: 4096 };

async function scan(entries: TarEntry[], want: string[] = [], limits = SMALL) {
  return scanArchive(Readable.from([await tarGz(entries)]), new Set(want), limits);
}

async function refused(p: Promise<unknown>, code: string, pattern?: RegExp): Promise<void> {
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof ArchiveError, `expected ArchiveError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    if (pattern) assert.match(e.message, pattern);
    return true;
  });
}

describe('archive inspection', () => {
  it('indexes files, directories and inner links, and keeps wanted files', async () => {
    const r = await scan(
      [
        { name: './a/', type: 'directory' },
        { name: './a/x.json', content: '{"k":1}' },
        { name: 'a/alias.json', type: 'symlink', linkname: 'x.json' },
        { name: 'hard.json', type: 'link', linkname: 'a/x.json' },
      ],
      ['a/x.json'],
    );
    assert.deepEqual([...r.index.entries.keys()].sort(), ['a', 'a/alias.json', 'a/x.json', 'hard.json']);
    assert.equal(r.files.get('a/x.json')?.toString(), '{"k":1}');
    assert.equal(r.index.realFile('a/alias.json'), 'a/x.json');
    assert.equal(r.index.realFile('hard.json'), 'a/x.json');
    assert.equal(r.index.realFile('a'), null);
  });

  it('refuses an absolute path', () => refused(scan([{ name: '/etc/passwd', content: 'x' }]), 'archive_absolute_path', /\/etc\/passwd/));

  it('refuses `..` traversal', () => refused(scan([{ name: 'ok/../../evil.js', content: 'x' }]), 'archive_path_traversal'));

  it('treats backslashes as separators: `..\\` traversal is refused', async () => {
    await refused(scan([{ name: '..\\..\\evil', content: 'x' }]), 'archive_path_traversal');
    await refused(scan([{ name: 'ok\\..\\..\\evil', content: 'x' }]), 'archive_path_traversal');
  });

  it('refuses drive letters anywhere in a name', async () => {
    for (const name of ['C:\\evil', 'C:evil', 'a/D:/evil', 'a\\c:x']) await refused(scan([{ name, content: 'x' }]), 'archive_absolute_path');
  });

  it('refuses symlinks climbing out with backslashes or naming a drive', async () => {
    await refused(scan([{ name: 'a/l', type: 'symlink', linkname: '..\\..\\outside' }]), 'archive_link_escape');
    await refused(scan([{ name: 'l', type: 'symlink', linkname: 'C:\\Windows' }]), 'archive_link_escape');
  });

  it('refuses a symlink to an absolute path', () => refused(scan([{ name: 'l', type: 'symlink', linkname: '/etc/passwd' }]), 'archive_link_escape'));

  it('refuses a symlink climbing out of the root', () => refused(scan([{ name: 'a/l', type: 'symlink', linkname: '../../outside' }]), 'archive_link_escape'));

  it('refuses an escape assembled from individually harmless links', () =>
    refused(
      scan([
        { name: 'x', type: 'symlink', linkname: '.' },
        { name: 'y', type: 'symlink', linkname: 'x/x/x/..' },
      ]),
      'archive_link_escape',
      /y ->/,
    ));

  it('refuses an entry under a symlinked directory', () =>
    refused(
      scan([
        { name: 'd', type: 'symlink', linkname: 'sub' },
        { name: 'd/f.js', content: 'x' },
      ]),
      'archive_link_escape',
    ));

  it('refuses a hardlink out of the root', () => refused(scan([{ name: 'h', type: 'link', linkname: '../etc/passwd' }]), 'archive_link_escape'));

  it('refuses device and fifo entries', () => refused(scan([{ name: 'p', type: 'fifo' }]), 'archive_unsupported_entry'));

  it('refuses more entries than the cap', () =>
    refused(
      scan(Array.from({ length: 51 }, (_, i) => ({ name: `f${i}`, content: '' }))),
      'archive_too_many_entries',
    ));

  it('refuses an entry declaring more than the unpacked cap', () => refused(scan([{ name: 'big', zeros: 300 * 1024 }]), 'archive_too_large'));

  it('cuts a gzip bomb off while inflating', async () => {
    let read = 0;
    const bomb = gzipBomb(64 * 1024 * 1024);
    const source = Readable.from(
      (function* () {
        for (let i = 0; i < bomb.length; i += 1024) {
          read += 1024;
          yield bomb.subarray(i, i + 1024);
        }
      })(),
    );
    await refused(scanArchive(source, new Set(), SMALL), 'archive_too_large');
    assert.ok(read < bomb.length, 'stopped reading before the end of the compressed stream');
  });

  it('refuses a wanted file above the per-file cap', () => refused(scan([{ name: 'big.json', content: 'x'.repeat(5000) }], ['big.json']), 'archive_file_too_large'));

  it('refuses bytes that are not gzip', () => refused(scanArchive(Readable.from([Buffer.from('plain text, not gzip')]), new Set(), SMALL), 'archive_not_gzip'));
});

describe('version content from an archive', () => {
  const build = async (manifest: unknown, entries: TarEntry[]) => {
    const bytes = await tarGz(entries);
    return buildVersionContent(validateManifest(manifest), new SnapshotArchive(() => Readable.from([bytes])));
  };

  it('compiles external tool schemas and parses scripts', async () => {
    const { manifest, entries } = minimalAgent();
    const v = await build(manifest, entries);
    const weather = v.tools.find((t) => t.name === 'get_weather')!;
    assert.equal(weather.kind, 'external');
    assert.equal(weather.timeout_seconds, 30);
    assert.equal(weather.description, 'Weather for a city.');
    assert.deepEqual(weather.input_schema?.required, ['city']);
    assert.deepEqual(weather.output_schema?.required, ['temp_c']);
    const add = v.tools.find((t) => t.name === 'add')!;
    assert.deepEqual([add.kind, add.timeout_seconds, add.input_schema], ['custom', 60, null]);
    assert.equal(v.scripts.script.turns.length, 2);
    assert.equal(v.entrypoint, 'agent.js:agent');
  });

  it('follows an inner symlink to a schema file', async () => {
    const { manifest, entries } = minimalAgent();
    const moved = entries.map((e) => (e.name === 'tools/get_weather.input.json' ? { ...e, name: 'schemas/in.json' } : e));
    moved.push({ name: 'tools/get_weather.input.json', type: 'symlink', linkname: '../schemas/in.json' });
    const v = await build(manifest, moved);
    assert.deepEqual(v.tools[0].input_schema?.required, ['city']);
  });

  const refusedWith = async (manifest: unknown, entries: TarEntry[], code: string, param?: string) => {
    await assert.rejects(build(manifest, entries), (e: { status?: number; code?: string; param?: string; message: string }) => {
      assert.equal(e.status, 400, e.message);
      assert.equal(e.code, code, e.message);
      if (param) assert.equal(e.param, param);
      return true;
    });
  };

  it('refuses a missing entrypoint file', async () => {
    const { manifest, entries } = minimalAgent();
    await refusedWith(manifest, entries.filter((e) => e.name !== 'agent.js'), 'archive_missing_file', 'manifest.entrypoint');
  });

  it('refuses an archive without troupe.json at its root', async () => {
    const { manifest, entries } = minimalAgent();
    await refusedWith(manifest, entries.filter((e) => e.name !== 'troupe.json'), 'archive_missing_file', 'source.source_snapshot_id');
  });

  it('refuses a missing tool file', async () => {
    const { manifest, entries } = minimalAgent();
    await refusedWith(manifest, entries.filter((e) => e.name !== 'tools/add.js'), 'archive_missing_file', 'manifest.custom_tools[1].path');
  });

  it('refuses a missing schema file', async () => {
    const { manifest, entries } = minimalAgent();
    await refusedWith(manifest, entries.filter((e) => e.name !== 'tools/get_weather.output.json'), 'archive_missing_file');
  });

  it('refuses an invalid JSON Schema', async () => {
    const { manifest, entries } = minimalAgent();
    const broken = entries.map((e) => (e.name === 'tools/get_weather.output.json' ? { ...e, content: '{"type":"nonsense"}' } : e));
    await refusedWith(manifest, broken, 'invalid_tool_schema');
  });

  it('refuses a definition whose name differs from the manifest', async () => {
    const { manifest, entries } = minimalAgent();
    const renamed = entries.map((e) => (e.name === 'tools/get_weather.json' ? { ...e, content: JSON.stringify({ name: 'other', description: 'd', input_schema: 'get_weather.input.json' }) } : e));
    await refusedWith(manifest, renamed, 'invalid_tool_definition');
  });

  it('refuses a script calling an undeclared tool', async () => {
    const { manifest, entries } = minimalAgent();
    const bad = entries.map((e) => (e.name === 'script.json' ? { ...e, content: JSON.stringify({ turns: [{ tool_calls: [{ name: 'nope', arguments: {} }] }] }) } : e));
    await refusedWith(manifest, bad, 'invalid_script');
  });

  it('refuses a malformed script', async () => {
    const { manifest, entries } = minimalAgent();
    const bad = entries.map((e) => (e.name === 'script.json' ? { ...e, content: JSON.stringify({ turns: [{ say: 'hi' }] }) } : e));
    await refusedWith(manifest, bad, 'invalid_request');
  });
});
