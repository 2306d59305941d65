import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { clientAddress } from '../../src/edge/api/client-address.js';

const req = (peer: string | undefined, xff?: string | string[]) => ({ socket: { remoteAddress: peer }, headers: xff === undefined ? {} : { 'x-forwarded-for': xff } }) as unknown as IncomingMessage;

describe('clientAddress: the address limits per client are kept under', () => {
  it('is the public peer itself, whatever X-Forwarded-For says', () => {
    assert.equal(clientAddress(req('8.8.8.8', '203.0.113.1')), '8.8.8.8');
    assert.equal(clientAddress(req('::ffff:8.8.4.4')), '8.8.4.4');
  });

  it('behind a private or loopback peer (a proxy), the last X-Forwarded-For entry, never one the client wrote before it', () => {
    assert.equal(clientAddress(req('10.0.0.5', '203.0.113.9')), '203.0.113.9');
    assert.equal(clientAddress(req('127.0.0.1', '1.2.3.4, 203.0.113.9')), '203.0.113.9');
    assert.equal(clientAddress(req('::1', ['1.2.3.4', '2001:db8::1'])), '2001:db8::1');
  });

  it('falls back to the peer when the header is absent or its last entry is not an address', () => {
    assert.equal(clientAddress(req('10.0.0.5')), '10.0.0.5');
    assert.equal(clientAddress(req('10.0.0.5', '203.0.113.9, %ZZ')), '10.0.0.5');
    assert.equal(clientAddress(req(undefined)), 'unknown');
  });
});
