import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { VersionFiles } from '../../src/lib/sandbox/version-files.js';
import { tarGz } from '../support/archives.js';

const FILE_BYTES = 40_000;
/** Two versions fit, three do not. */
const CAP = 100_000;

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Extracted versions are evicted least recently used under a disk cap, and
 * extracted again when used next; a version under lease (a running call, in
 * this process or another sharing the directory) is never evicted.
 */
describe('extracted versions under a disk cap', () => {
  let base: string;
  let archives: Map<string, Buffer>;
  let opened: string[];

  const open = (id: string) => {
    opened.push(id);
    return Readable.from([archives.get(id)!]);
  };
  const files = () => new VersionFiles(base, open, false, CAP);
  const ref = (n: number) => ({ _id: `ver_${n}`, snapshot_id: `snap_${n}` });
  const present = async () => (await readdir(join(base, 'versions'))).filter((n) => !n.startsWith('.')).sort();
  /** Leases and releases one version, a little apart from the last so mtimes order them. */
  const use = async (f: VersionFiles, n: number) => {
    await pause(20);
    (await f.lease(ref(n))).release();
  };

  before(async () => {
    archives = new Map();
    for (const n of [1, 2, 3]) archives.set(`snap_${n}`, await tarGz([{ name: 'tool.js', content: `exports.handler = () => ${n}; //`.padEnd(FILE_BYTES, 'x') }]));
  });
  beforeEach(async () => {
    base = await mkdtemp(join(tmpdir(), 'troupe-versions-test-'));
    opened = [];
  });
  afterEach(async () => rm(base, { recursive: true, force: true }));

  it('evicts the least recently used version, and extracts it again on its next use', async () => {
    const f = files();
    await use(f, 1);
    await use(f, 2);
    await use(f, 1); // 1 is now the more recent of the two
    await use(f, 3);
    assert.deepEqual(await present(), ['ver_1', 'ver_3'], 'version 2, least recently used, was evicted');
    const again = await f.lease(ref(2));
    assert.equal((await stat(join(again.dir, 'tool.js'))).size, FILE_BYTES, 'extracted again, whole');
    again.release();
    // An extraction reads its archive a set number of times (scan, then unpack): version 2 was extracted twice.
    const reads = (id: string) => opened.filter((o) => o === id).length;
    assert.ok(reads('snap_3') > 0);
    assert.deepEqual([reads('snap_1'), reads('snap_2')], [reads('snap_3'), 2 * reads('snap_3')]);
    assert.deepEqual(await present(), ['ver_2', 'ver_3'], 'then version 1 went');
  });

  it('never evicts a version a running call holds, in this process or another', async () => {
    const f = files();
    const held = await f.lease(ref(1));
    await use(f, 2);
    await use(f, 3);
    assert.deepEqual(await present(), ['ver_1', 'ver_3'], 'the held version stays, though least recently used');
    held.release();

    // Another process (here a second instance, and a live child's pid) holds version 3 through its lease file.
    const other = files();
    const held3 = await other.lease(ref(3));
    await pause(20);
    await use(f, 1);
    await use(f, 2);
    assert.deepEqual(await present(), ['ver_2', 'ver_3'], "another instance's lease keeps version 3, least recently used");
    held3.release();

    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 20000)'], { stdio: 'ignore' });
    try {
      const { pid } = child;
      await writeFile(join(base, 'leases', `ver_3.${pid}-other`), '');
      await writeFile(join(base, 'leases', 'ver_2.999999999-dead'), '');
      await use(f, 1);
      assert.deepEqual(await present(), ['ver_1', 'ver_3'], "a live process's lease keeps version 3; a dead one's does not keep version 2");
      assert.ok(!(await readdir(join(base, 'leases'))).includes('ver_2.999999999-dead'), "the dead process's lease file is removed");
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('keeps everything without a cap', async () => {
    const f = new VersionFiles(base, open, false);
    for (const n of [1, 2, 3]) await use(f, n);
    assert.deepEqual(await present(), ['ver_1', 'ver_2', 'ver_3']);
  });
});
