import assert from 'node:assert/strict';
import { EGRESS_SANDBOX_FILES, ownEndpoints, withEgress } from '../../src/lib/sandbox/egress.js';
import type { Runtime } from '../../src/lib/sandbox/runtimes.js';

describe('sandbox egress wiring', () => {
  it("lists Troupe's own services from the configuration: every Redis node and MongoDB host with its port, and the listeners' ports on this machine", () => {
    assert.deepEqual(ownEndpoints({ redisUrl: 'redis-cluster://u:p@r1:7000,[fd00::2]:7001', mongodbUrl: 'mongodb://a:b@m1:27018,m2,[::1]:27019/db?replicaSet=rs', ports: [8080, 0, 9091] }), [
      { host: 'r1', port: 7000 },
      { host: 'fd00::2', port: 7001 },
      { host: 'm1', port: 27018 },
      { host: 'm2', port: 27017 },
      { host: '::1', port: 27019 },
      { host: '*', port: 8080 },
      { host: '*', port: 9091 },
    ]);
    assert.deepEqual(ownEndpoints({ redisUrl: 'redis://127.0.0.1', mongodbUrl: 'mongodb+srv://cluster0.example.net/db', ports: [] }), [
      { host: '127.0.0.1', port: 6379 },
      { host: 'cluster0.example.net', port: 27017 },
    ]);
  });

  it('gives a Node runtime the bridge preloaded (readable under the permission model), and any runtime the socket, the bridges and undici', () => {
    const node: Runtime = { argv: ['/usr/bin/node', '--experimental-permission', '--allow-fs-read=/agent', '/run/troupe/runner.js'], readOnlyPaths: ['/usr/bin/node'], files: { '/run/troupe/runner.js': '/x/runner.js' }, env: { A: '1' } };
    const n = withEgress(node);
    assert.deepEqual(n.argv, ['/usr/bin/node', `--allow-fs-read=${EGRESS_SANDBOX_FILES.nodeBridge}`, `--allow-fs-read=${EGRESS_SANDBOX_FILES.undici}`, '--require', EGRESS_SANDBOX_FILES.nodeBridge, '--experimental-permission', '--allow-fs-read=/agent', '/run/troupe/runner.js']);
    assert.equal(n.env.TROUPE_EGRESS_SOCKET, '/run/troupe/egress.sock');
    assert.equal(n.env.TROUPE_EGRESS_UNDICI, EGRESS_SANDBOX_FILES.undici);
    assert.equal(n.env.A, '1');
    assert.ok(n.files[EGRESS_SANDBOX_FILES.nodeBridge].endsWith('egress-bridge.js'));
    assert.ok(n.files[EGRESS_SANDBOX_FILES.pythonBridge].endsWith('egress_bridge.py'));
    const bare = withEgress({ ...node, argv: ['/usr/bin/node', '/run/troupe/runner.js'] });
    assert.deepEqual(bare.argv, ['/usr/bin/node', '--require', EGRESS_SANDBOX_FILES.nodeBridge, '/run/troupe/runner.js']);
    const py = withEgress({ ...node, argv: ['/usr/bin/python3', '/run/troupe/runner.py'] });
    assert.deepEqual(py.argv, ['/usr/bin/python3', '/run/troupe/runner.py'], 'a Python runner starts its bridge itself');
    assert.equal(py.env.TROUPE_EGRESS_SOCKET, '/run/troupe/egress.sock');
  });
});
