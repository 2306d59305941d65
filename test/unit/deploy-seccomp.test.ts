import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// The container's seccomp profile for the roles that run tools under bubblewrap (docs/operations.md, Docker).
const ROOT = process.cwd();
const read = (p: string): string => readFileSync(join(ROOT, p), 'utf8');

interface Rule { names: string[]; action: string; args?: unknown[]; includes?: Record<string, unknown>; excludes?: Record<string, unknown>; comment?: string }
interface Profile { defaultAction: string; syscalls: Rule[] }

const profile = JSON.parse(read('infra/deploy/seccomp-sandbox.json')) as Profile;
const ADDED = ['clone', 'mount', 'pivot_root', 'sethostname', 'umount2', 'unshare'];
const unconditional = (r: Rule): boolean =>
  r.action === 'SCMP_ACT_ALLOW' && !r.args && !r.includes && !r.excludes;
const allowedAlways = new Set(profile.syscalls.filter(unconditional).flatMap((r) => r.names));
const additions = profile.syscalls.filter((r) => r.comment?.startsWith('troupe-bwrap:'));

describe('deploy: seccomp-sandbox.json', () => {
  it('has the shape Docker reads: deny by default, rules of names and an action', () => {
    assert.equal(profile.defaultAction, 'SCMP_ACT_ERRNO');
    assert.ok(profile.syscalls.length > 20);
    for (const r of profile.syscalls) {
      assert.ok(Array.isArray(r.names) && r.names.length > 0 && r.names.every((n) => typeof n === 'string'));
      assert.match(r.action, /^SCMP_ACT_(ALLOW|ERRNO)$/);
    }
  });

  it('adds exactly clone, unshare, mount, umount2, pivot_root and sethostname, each with a reason', () => {
    assert.deepEqual(additions.flatMap((r) => r.names).sort(), ADDED);
    for (const r of additions) assert.ok(unconditional(r) && (r.comment ?? '').length > 40, r.names[0]);
  });

  it('keeps the default denials of keyctl, bpf, ptrace, kexec_load, open_by_handle_at and friends', () => {
    for (const n of ['keyctl', 'add_key', 'request_key', 'bpf', 'ptrace', 'kexec_load', 'open_by_handle_at',
      'setns', 'init_module', 'perf_event_open', 'userfaultfd', 'clone3', 'chroot', 'fsopen', 'move_mount']) {
      assert.ok(!allowedAlways.has(n), `${n} must not be allowed unconditionally`);
    }
    // clone3 keeps the default's ENOSYS so libc falls back to clone, whose flags seccomp can see.
    assert.ok(profile.syscalls.some((r) => r.names.includes('clone3') && r.action === 'SCMP_ACT_ERRNO'));
  });

  it('allows every syscall bwrap made under strace (test/fixtures/bwrap-syscalls.txt)', () => {
    const used = read('test/fixtures/bwrap-syscalls.txt').split('\n').map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    assert.ok(used.length > 30 && used.includes('pivot_root') && used.includes('unshare'));
    // On amd64 without added capabilities: arch-only rules for amd64 count, and socket's rule, which only refuses
    // a few families (e.g. AF_ALG 38, AF_VSOCK 40); bwrap's sockets are AF_UNIX (1) and AF_NETLINK (16), the latter
    // to bring up loopback in its network namespace.
    const here = new Set(allowedAlways);
    for (const r of profile.syscalls) {
      const arches = r.includes?.arches as string[] | undefined;
      if (r.action === 'SCMP_ACT_ALLOW' && !r.args && !r.excludes && arches && Object.keys(r.includes ?? {}).length === 1
        && arches.includes('amd64')) r.names.forEach((n) => here.add(n));
    }
    const socketLt = profile.syscalls.find((r) => r.names.includes('socket') && r.action === 'SCMP_ACT_ALLOW'
      && JSON.stringify(r.args) === JSON.stringify([{ index: 0, value: 38, op: 'SCMP_CMP_LT' }]));
    assert.ok(socketLt, 'socket for families below 38 (AF_UNIX, AF_NETLINK)');
    here.add('socket');
    const missing = used.filter((n) => !here.has(n));
    assert.deepEqual(missing, []);
  });

  it('is the profile of web and worker, and of neither router nor webhooks', () => {
    const compose = read('infra/deploy/docker-compose.yml');
    const anchor = /x-sandbox: &sandbox\n((?: {2}.*\n)+)/.exec(compose);
    assert.ok(anchor);
    assert.match(anchor[1], /- seccomp=\.\/seccomp-sandbox\.json\n/);
    assert.doesNotMatch(compose, /seccomp[=:]unconfined/);
    const merges = (svc: string): string => {
      const m = new RegExp(`\\n  ${svc}:\\n    <<: (.*)\\n`).exec(compose);
      assert.ok(m, svc);
      return m[1];
    };
    for (const s of ['web', 'worker']) assert.match(merges(s), /\*sandbox\b/, s);
    for (const s of ['router', 'webhooks']) assert.doesNotMatch(merges(s), /sandbox/, s);
    assert.equal(compose.match(/seccomp-sandbox\.json/g)?.length, 1);
  });
});
