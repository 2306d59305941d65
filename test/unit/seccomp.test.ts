import assert from 'node:assert/strict';
import { AARCH64, CLONE_NAMESPACE_FLAGS, DENIED_SYSCALLS, encode, RET, seccompFilter, seccompProgram, X86_64 } from '../../src/lib/sandbox/seccomp.js';

/** seccomp_data as the kernel lays it out on a little-endian host. */
function data(arch: number, nr: number, arg0 = 0): Buffer {
  const b = Buffer.alloc(64);
  b.writeUInt32LE(nr, 0);
  b.writeUInt32LE(arch >>> 0, 4);
  b.writeUInt32LE(arg0 >>> 0, 16);
  return b;
}

/** A classic-BPF interpreter for the opcodes a seccomp filter may use, reading the encoded bytes. */
function run(bytes: Buffer, input: Buffer): number {
  let a = 0;
  for (let pc = 0, steps = 0; steps < 1000; steps++) {
    const code = bytes.readUInt16LE(pc * 8);
    const jt = bytes.readUInt8(pc * 8 + 2);
    const jf = bytes.readUInt8(pc * 8 + 3);
    const k = bytes.readUInt32LE(pc * 8 + 4);
    switch (code) {
      case 0x20: a = input.readUInt32LE(k); pc++; break;
      case 0x15: pc += 1 + (a === k ? jt : jf); break;
      case 0x35: pc += 1 + (a >= k ? jt : jf); break;
      case 0x45: pc += 1 + ((a & k) !== 0 ? jt : jf); break;
      case 0x06: return k;
      default: throw new Error(`unexpected opcode ${code.toString(16)} at ${pc}`);
    }
  }
  throw new Error('no return');
}

describe('seccomp filter', () => {
  const bytes = encode(seccompProgram(), true);

  it('is whole struct sock_filters the kernel will take', () => {
    assert.equal(bytes.length % 8, 0);
    assert.ok(bytes.length / 8 < 4096, 'BPF_MAXINSNS');
    assert.equal(seccompFilter().length, bytes.length);
  });

  it('denies every listed call with EPERM on both arches, and allows ordinary ones', () => {
    for (const arch of [X86_64, AARCH64]) {
      for (const name of DENIED_SYSCALLS) assert.equal(run(bytes, data(arch.audit, arch.numbers[name as keyof typeof arch.numbers])), RET.eperm, name);
    }
    for (const nr of [0, 1, 2, 3, 9, 59, 60, 231, 257]) assert.equal(run(bytes, data(X86_64.audit, nr)), RET.allow, `x86_64 ${nr}`);
    for (const nr of [56, 57, 63, 64, 221, 222, 93, 94]) assert.equal(run(bytes, data(AARCH64.audit, nr)), RET.allow, `aarch64 ${nr}`);
  });

  it('lets clone make threads but no namespace, and sends clone3 back to clone', () => {
    const thread = 0x3d0f00; // CLONE_VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|SETTLS|PARENT_SETTID|CHILD_CLEARTID, as glibc asks
    for (const arch of [X86_64, AARCH64]) {
      assert.equal(run(bytes, data(arch.audit, arch.numbers.clone, thread)), RET.allow);
      assert.equal(run(bytes, data(arch.audit, arch.numbers.clone, 17 /* SIGCHLD: fork */)), RET.allow);
      for (const flag of [0x10000000, 0x20000000, 0x40000000, 0x00020000]) assert.equal(run(bytes, data(arch.audit, arch.numbers.clone, thread | flag)), RET.eperm);
      assert.equal(run(bytes, data(arch.audit, arch.numbers.clone3)), RET.enosys);
    }
    assert.equal(CLONE_NAMESPACE_FLAGS & thread, 0);
  });

  it('kills the x32 ABI and any other arch (i386, arm32)', () => {
    assert.equal(run(bytes, data(X86_64.audit, 0x40000000 + 1)), RET.kill);
    assert.equal(run(bytes, data(X86_64.audit, 0x40000000 + 101)), RET.kill);
    assert.equal(run(bytes, data(0x40000003, 1)), RET.kill);
    assert.equal(run(bytes, data(0x40000028, 1)), RET.kill);
  });
});
