import assert from 'node:assert/strict';
import type { Resolver } from '../../src/lib/net/resolver.js';
import { verifyWebhook } from '../../src/lib/webhooks/verify.js';
import { WebhookSender, type AttemptOutcome } from '../../actors/webhook/send.js';
import { WebhookReceiver } from '../fakes/webhook-receiver.js';

const SECRET = 'whsec_unit_test_secret';
const BODY = '{"id":"evt_1","type":"session.completed","data":{"k":"v"}}';

/** name → addresses, answered in turn per call (the last answer repeats); unknown names fail. */
function resolverOf(table: Record<string, string[][]>): Resolver {
  const calls = new Map<string, number>();
  return async (host) => {
    const answers = table[host];
    if (!answers) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    const n = calls.get(host) ?? 0;
    calls.set(host, n + 1);
    return answers[Math.min(n, answers.length - 1)].map((address) => ({ address, family: (address.includes(':') ? 6 : 4) as 4 | 6 }));
  };
}

describe('webhook sender', () => {
  let rx: WebhookReceiver;
  let other: WebhookReceiver;
  const senders: WebhookSender[] = [];
  const sender = (o: Partial<ConstructorParameters<typeof WebhookSender>[0]> = {}) => {
    const s = new WebhookSender({ allowPrivate: true, timeoutMs: 2000, ...o });
    senders.push(s);
    return s;
  };
  const send = (s: WebhookSender, url: string, secrets = [SECRET]): Promise<AttemptOutcome> => s.send({ url, eventId: 'evt_1', body: BODY, secrets });

  before(async () => {
    rx = await WebhookReceiver.start();
    other = await WebhookReceiver.start();
  });
  beforeEach(() => {
    rx.reset();
    other.reset();
  });
  after(async () => {
    await Promise.all(senders.map((s) => s.close()));
    await rx.close();
    await other.close();
  });

  it("reads at most a little of the receiver's answer: a 200 MiB body is cut, the attempt still counts", async () => {
    rx.answer({ status: 200, bodyBytes: 200 * 2 ** 20 });
    const started = Date.now();
    const out = await send(sender({ timeoutMs: 10_000 }), `${rx.url}/hook`);
    assert.equal(out.ok, true);
    assert.equal(out.status_code, 200);
    assert.ok(Date.now() - started < 5000, 'not read to its end');
    for (let i = 0; i < 100 && rx.answerSent < 200 * 2 ** 20; i++) await new Promise((r) => setTimeout(r, 10));
    // The sender's cap (64 KiB) plus what the sockets' buffers held when it cut the connection.
    assert.ok(rx.answerSent < 16 * 2 ** 20, `the receiver wrote ${rx.answerSent} bytes`);
  });

  it('posts the exact body with the spec headers and a signature the helper verifies', async () => {
    const out = await send(sender(), `${rx.url}/hook`);
    assert.equal(out.ok, true);
    assert.equal(out.status_code, 200);
    const [got] = rx.received;
    assert.equal(got.rawBody, BODY);
    assert.equal(got.headers['user-agent'], 'Service-Webhook/1.0');
    assert.equal(got.headers['content-type'], 'application/json');
    assert.equal(got.headers['service-webhook-id'], 'evt_1');
    assert.match(String(got.headers['service-webhook-timestamp']), /^\d{10}$/);
    assert.match(String(got.headers['service-webhook-signature']), /^v1=[0-9a-f]{64}$/);
    assert.equal(verifyWebhook({ secret: SECRET, headers: got.headers, rawBody: got.rawBody }).id, 'evt_1');
  });

  it('signs with both secrets during a rotation', async () => {
    await send(sender(), rx.url, ['whsec_new', 'whsec_old']);
    const sig = String(rx.received[0].headers['service-webhook-signature']);
    assert.match(sig, /^v1=[0-9a-f]{64} v1=[0-9a-f]{64}$/);
    for (const secret of ['whsec_new', 'whsec_old']) verifyWebhook({ secret, headers: rx.received[0].headers, rawBody: rx.received[0].rawBody });
  });

  it('counts a 3xx as a failure and does not follow the redirect', async () => {
    rx.answer({ status: 302, headers: { location: `${other.url}/internal` } });
    const out = await send(sender(), rx.url);
    assert.equal(out.ok, false);
    assert.equal(out.status_code, 302);
    assert.match(out.error!, /redirect/);
    assert.equal(other.connections, 0, 'the redirect target was never contacted');
    rx.answer({ status: 307, headers: { location: 'http://169.254.169.254/latest/meta-data' } });
    assert.equal((await send(sender(), rx.url)).ok, false);
  });

  it('reports 410 as gone, 5xx as failure, and Retry-After', async () => {
    rx.answer({ status: 410 }, { status: 503, headers: { 'retry-after': '2' } }, { status: 500 });
    const gone = await send(sender(), rx.url);
    assert.equal(gone.gone, true);
    assert.equal(gone.ok, false);
    const busy = await send(sender(), rx.url);
    assert.equal(busy.retry_after_ms, 2000);
    assert.equal(busy.gone, false);
    const broken = await send(sender(), rx.url);
    assert.deepEqual([broken.ok, broken.status_code, broken.error], [false, 500, 'HTTP 500']);
  });

  it('gives up on an attempt at the timeout', async () => {
    rx.answer({ status: 200, delayMs: 1500 });
    const started = Date.now();
    const out = await send(sender({ timeoutMs: 300 }), rx.url);
    assert.equal(out.ok, false);
    assert.match(out.error!, /timed out|timeout/i);
    assert.ok(Date.now() - started < 1400, 'did not wait for the slow answer');
  });

  describe('SSRF guard (production rules)', () => {
    const port = () => new URL(rx.url).port;
    const guarded = (table: Record<string, string[][]> = {}) => sender({ allowPrivate: false, resolver: resolverOf(table) });

    async function refused(s: WebhookSender, url: string, pattern: RegExp): Promise<void> {
      const out = await send(s, url);
      assert.equal(out.ok, false, url);
      assert.equal(out.refused, true, `${url}: ${out.error}`);
      assert.match(out.error!, pattern, url);
      assert.equal(out.status_code, null);
      assert.equal(rx.connections, 0, `${url} reached the receiver`);
    }

    it('refuses loopback, private, link-local and metadata addresses given as literals', async () => {
      const s = guarded();
      for (const host of ['127.0.0.1', '10.0.0.5', '172.16.3.4', '192.168.1.10', '169.254.10.1', '169.254.169.254', '[::1]', '[fe80::1]', '[fd00::1]', '0.0.0.0', '100.64.0.1']) {
        await refused(s, `https://${host}:${port()}/hook`, /not a public address/);
      }
    });

    it('refuses IPv4-mapped and NAT64 IPv6 forms of private addresses', async () => {
      const s = guarded();
      for (const host of ['[::ffff:127.0.0.1]', '[::ffff:a9fe:a9fe]', '[::ffff:10.0.0.1]', '[64:ff9b::7f00:1]', '[64:ff9b::169.254.169.254]', '[64:ff9b::10.0.0.1]']) {
        await refused(s, `https://${host}:${port()}/hook`, /not a public address/);
      }
    });

    it('refuses a name that resolves to a private address, or to any private address among public ones', async () => {
      const s = guarded({ 'internal.test': [['10.1.2.3']], 'loop.test': [['127.0.0.1']], 'mixed.test': [['93.184.215.14', '127.0.0.1']], 'meta.test': [['::ffff:169.254.169.254']] });
      for (const host of ['internal.test', 'loop.test', 'mixed.test', 'meta.test']) await refused(s, `https://${host}:${port()}/hook`, /not a public address/);
    });

    it('checks again at connect time: a name that turns private after the check is refused (DNS rebinding)', async () => {
      const s = guarded({ 'rebind.test': [['93.184.215.14'], ['127.0.0.1']] });
      await refused(s, `https://rebind.test:${port()}/hook`, /^ERR_ADDRESS_REFUSED: rebind.test resolves to an address that is not a public address$/);
    });

    it('refuses plain HTTP and credentials; TROUPE_WEBHOOKS_ALLOW_PRIVATE lifts only the address and scheme rules', async () => {
      await refused(guarded(), `${rx.url}/hook`, /https/);
      const local = sender({ allowPrivate: true });
      const withCreds = await send(local, rx.url.replace('http://', 'http://user:pw@'));
      assert.equal(withCreds.refused, true);
      assert.equal(rx.connections, 0);
      assert.equal((await send(local, rx.url)).ok, true);
    });
  });
});
