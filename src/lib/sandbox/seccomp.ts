/**
 * The seccomp filter every sandboxed call runs under, as the classic-BPF
 * program bwrap loads from `--seccomp FD`. Generated here (no libseccomp at
 * build or run time, see docs/decisions.md) from two syscall tables, so a
 * unit test can run the very bytes bwrap gets through a BPF interpreter.
 *
 * Denied calls return EPERM, so a runtime that probes a feature (io_uring,
 * userfaultfd) falls back instead of dying. clone3 returns ENOSYS: its flags
 * sit behind a pointer BPF cannot read, and glibc falls back to clone, whose
 * flags we can check. Any other ABI (x32, i386 via int 0x80, arm32) is killed.
 */
import { endianness } from 'node:os';

/** Calls that only serve escapes or host administration: namespaces, mounts, kernel keyrings, tracing, modules. */
const DENIED = [
  'ptrace', 'mount', 'umount2', 'pivot_root', 'chroot', 'keyctl', 'add_key', 'request_key', 'bpf', 'perf_event_open',
  'kexec_load', 'kexec_file_load', 'init_module', 'finit_module', 'delete_module', 'unshare', 'setns', 'userfaultfd',
  'process_vm_readv', 'process_vm_writev', 'open_by_handle_at', 'name_to_handle_at', 'acct', 'swapon', 'swapoff', 'reboot',
  'io_uring_setup', 'io_uring_enter', 'io_uring_register', 'open_tree', 'move_mount', 'fsopen', 'fsconfig', 'fsmount', 'fspick',
  'mount_setattr', 'quotactl', 'lookup_dcookie', 'syslog', 'settimeofday', 'clock_settime', 'adjtimex', 'clock_adjtime',
  'vhangup', 'kcmp',
] as const;

type Syscall = (typeof DENIED)[number] | 'clone' | 'clone3';

interface Arch {
  /** AUDIT_ARCH_* as seccomp_data.arch reports it. */
  audit: number;
  numbers: Record<Syscall, number>;
  /** Syscall numbers at or above this are another ABI on the same arch (x32 on x86_64). */
  abiBit?: number;
}

export const X86_64: Arch = {
  audit: 0xc000003e,
  abiBit: 0x40000000,
  numbers: {
    ptrace: 101, mount: 165, umount2: 166, pivot_root: 155, chroot: 161, keyctl: 250, add_key: 248, request_key: 249, bpf: 321,
    perf_event_open: 298, kexec_load: 246, kexec_file_load: 320, init_module: 175, finit_module: 313, delete_module: 176,
    unshare: 272, setns: 308, userfaultfd: 323, process_vm_readv: 310, process_vm_writev: 311, open_by_handle_at: 304,
    name_to_handle_at: 303, acct: 163, swapon: 167, swapoff: 168, reboot: 169, io_uring_setup: 425, io_uring_enter: 426,
    io_uring_register: 427, open_tree: 428, move_mount: 429, fsopen: 430, fsconfig: 431, fsmount: 432, fspick: 433,
    mount_setattr: 442, quotactl: 179, lookup_dcookie: 212, syslog: 103, settimeofday: 164, clock_settime: 227, adjtimex: 159,
    clock_adjtime: 305, vhangup: 153, kcmp: 312, clone: 56, clone3: 435,
  },
};

/** asm-generic numbering. */
export const AARCH64: Arch = {
  audit: 0xc00000b7,
  numbers: {
    ptrace: 117, mount: 40, umount2: 39, pivot_root: 41, chroot: 51, keyctl: 219, add_key: 217, request_key: 218, bpf: 280,
    perf_event_open: 241, kexec_load: 104, kexec_file_load: 294, init_module: 105, finit_module: 273, delete_module: 106,
    unshare: 97, setns: 268, userfaultfd: 282, process_vm_readv: 270, process_vm_writev: 271, open_by_handle_at: 265,
    name_to_handle_at: 264, acct: 89, swapon: 224, swapoff: 225, reboot: 142, io_uring_setup: 425, io_uring_enter: 426,
    io_uring_register: 427, open_tree: 428, move_mount: 429, fsopen: 430, fsconfig: 431, fsmount: 432, fspick: 433,
    mount_setattr: 442, quotactl: 60, lookup_dcookie: 18, syslog: 116, settimeofday: 170, clock_settime: 112, adjtimex: 171,
    clock_adjtime: 266, vhangup: 58, kcmp: 272, clone: 220, clone3: 435,
  },
};

/** CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET: clone may make threads and processes, not namespaces. */
export const CLONE_NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000;

export const RET = Object.freeze({ allow: 0x7fff0000, eperm: 0x00050000 | 1, enosys: 0x00050000 | 38, kill: 0x80000000 });

/** seccomp_data offsets: nr, arch, then 6 u64 args from 16 (the low word first on little-endian hosts). */
const OFF = { nr: 0, arch: 4, arg0: 16 } as const;
const OP = { ld: 0x20, jeq: 0x15, jge: 0x35, jset: 0x45, ret: 0x06 } as const;

export interface Insn {
  code: number;
  jt: number;
  jf: number;
  k: number;
}

/** An instruction whose jump targets are still labels. */
type Draft = { code: number; k: number; jt?: string; jf?: string; label?: string };

function archBlock(a: Arch, p: string): Draft[] {
  const n = a.numbers;
  const out: Draft[] = [{ code: OP.ld, k: OFF.nr, label: p }];
  if (a.abiBit) out.push({ code: OP.jge, k: a.abiBit, jt: 'kill' });
  out.push({ code: OP.jeq, k: n.clone3, jt: 'enosys' }, { code: OP.jeq, k: n.clone, jt: `${p}-clone` });
  for (const s of DENIED) out.push({ code: OP.jeq, k: n[s], jt: 'eperm' });
  out.push({ code: OP.ret, k: RET.allow });
  out.push({ code: OP.ld, k: OFF.arg0, label: `${p}-clone` }, { code: OP.jset, k: CLONE_NAMESPACE_FLAGS, jt: 'eperm' }, { code: OP.ret, k: RET.allow });
  return out;
}

/** Resolves labels to the relative offsets BPF wants (forward only, at most 255). */
function assemble(drafts: Draft[]): Insn[] {
  const at = new Map<string, number>();
  drafts.forEach((d, i) => d.label && at.set(d.label, i));
  const rel = (i: number, label?: string): number => {
    if (!label) return 0;
    const off = at.get(label)! - i - 1;
    if (!(off >= 0 && off <= 255)) throw new Error(`seccomp jump to ${label} out of range`);
    return off;
  };
  return drafts.map((d, i) => ({ code: d.code, k: d.k >>> 0, jt: rel(i, d.jt), jf: rel(i, d.jf) }));
}

/** The filter as instructions: dispatch on arch, then each arch's deny list. */
export function seccompProgram(): Insn[] {
  return assemble([
    { code: OP.ld, k: OFF.arch },
    { code: OP.jeq, k: X86_64.audit, jt: 'x86_64' },
    { code: OP.jeq, k: AARCH64.audit, jt: 'aarch64' },
    { code: OP.ret, k: RET.kill },
    ...archBlock(X86_64, 'x86_64'),
    ...archBlock(AARCH64, 'aarch64'),
    { code: OP.ret, k: RET.kill, label: 'kill' },
    { code: OP.ret, k: RET.eperm, label: 'eperm' },
    { code: OP.ret, k: RET.enosys, label: 'enosys' },
  ]);
}

/** struct sock_filter[] in the host's byte order, as the kernel reads it. */
export function encode(prog: Insn[], le = endianness() === 'LE'): Buffer {
  const buf = Buffer.alloc(prog.length * 8);
  prog.forEach((p, i) => {
    const o = i * 8;
    if (le) buf.writeUInt16LE(p.code, o), buf.writeUInt32LE(p.k, o + 4);
    else buf.writeUInt16BE(p.code, o), buf.writeUInt32BE(p.k, o + 4);
    buf.writeUInt8(p.jt, o + 2);
    buf.writeUInt8(p.jf, o + 3);
  });
  return buf;
}

let compiled: Buffer | null = null;

/** The bytes handed to bwrap, built once per process. */
export function seccompFilter(): Buffer {
  compiled ??= encode(seccompProgram());
  return compiled;
}

export const DENIED_SYSCALLS: readonly string[] = DENIED;
