import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/lib/log/logger.js';
import { installProcessGuards, type ProcessErrorKind } from '../../src/lib/lifecycle/process-guards.js';
import { routingEnvelope } from '../../src/edge/router/envelope.js';
import { guardedListener } from '../../src/roles/guarded-listener.js';

function sink(): { log: ReturnType<typeof createLogger>; lines: () => Record<string, unknown>[] } {
  let text = '';
  const out = new Writable({ write: (c, _e, cb) => ((text += c.toString()), cb()) });
  return { log: createLogger('debug', out), lines: () => text.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) };
}

async function served(listener: RequestListener, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const server = createServer(listener).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`, { method: 'POST', body: '{}' });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}

describe('guardedListener: a throw escaping an app becomes an answer, not a crash', () => {
  it('answers a synchronous throw with a 500 in the ingress envelope and logs it once', async () => {
    const { log, lines } = sink();
    const boom: RequestListener = () => {
      throw new TypeError('a bug in a listener');
    };
    const { status, body } = await served(guardedListener(boom, log, routingEnvelope), '/v1/messages');
    assert.equal(status, 500);
    assert.equal(body.type, 'error'); // Anthropic's envelope on a Messages path
    assert.equal((body.error as { code: string }).code, 'internal_error');
    assert.equal(lines().filter((l) => l.msg === 'unhandled error').length, 1);
  });

  it('answers a rejected promise from the listener the same way, in the OpenAI envelope on a chat path', async () => {
    const { log } = sink();
    const boom = (() => Promise.reject(new Error('async bug'))) as unknown as RequestListener;
    const { status, body } = await served(guardedListener(boom, log, routingEnvelope), '/r1/chat/completions');
    assert.equal(status, 500);
    assert.deepEqual(Object.keys(body), ['error']);
    assert.equal((body.error as { code: string; param: unknown }).param, null);
  });
});

describe('installProcessGuards', () => {
  it('counts and logs an unhandled rejection without calling fatal; an uncaught exception calls fatal once', () => {
    const { log, lines } = sink();
    const proc = new EventEmitter();
    const counted: ProcessErrorKind[] = [];
    const fatal: unknown[] = [];
    const uninstall = installProcessGuards({ log, count: (k) => counted.push(k), fatal: (e) => fatal.push(e) }, proc);
    proc.emit('unhandledRejection', new Error('r'));
    assert.deepEqual(fatal, []);
    proc.emit('uncaughtException', new Error('x1'));
    proc.emit('uncaughtException', new Error('x2'));
    assert.deepEqual(counted, ['unhandled_rejection', 'uncaught_exception', 'uncaught_exception']);
    assert.equal(fatal.length, 1);
    assert.deepEqual(lines().map((l) => l.msg), ['unhandled promise rejection; still serving', 'uncaught exception; draining and exiting', 'uncaught exception while exiting']);
    uninstall();
    assert.equal(proc.listenerCount('uncaughtException') + proc.listenerCount('unhandledRejection'), 0);
  });
});
