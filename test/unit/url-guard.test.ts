import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, fetch as undiciFetch } from 'undici';
import { guardedLookup } from '../../src/lib/net/guarded-lookup.js';
import { isPublicUnicast } from '../../src/lib/net/ip-ranges.js';
import type { Resolver } from '../../src/lib/net/resolver.js';
import { validateWebhookUrl } from '../../src/lib/net/url-guard.js';
import { checkModelEndpoint } from '../../src/lib/net/model-endpoint.js';

/** Anything that looks like an IPv4 or IPv6 address. */
const ANY_IP = /\d{1,3}(\.\d{1,3}){3}|[0-9a-f]{0,4}:[0-9a-f]{0,4}:[0-9a-f:.]*/i;

/** The message of a rejection. */
async function messageOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    return (err as Error).message;
  }
  assert.fail('expected a refusal');
}

/** A resolver the test controls: name → addresses; unknown names fail like NXDOMAIN. */
function fakeResolver(table: Record<string, string[]>): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const fn = async (host: string) => {
    calls.push(host);
    const found = table[host];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return found.map((address) => ({ address, family: (address.includes(':') ? 6 : 4) as 4 | 6 }));
  };
  return Object.assign(fn, { calls });
}

async function refusedCode(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    const e = err as { status: number; code: string; param: string };
    assert.equal(e.status, 400);
    assert.equal(e.param, 'webhook_url');
    return e.code;
  }
  assert.fail('expected the URL to be refused');
}

describe('isPublicUnicast', () => {
  const notPublic = [
    '0.0.0.0', '0.1.2.3', '10.0.0.1', '10.255.255.255', '100.64.0.1', '100.127.255.254', '127.0.0.1', '127.8.9.10',
    '169.254.169.254', '169.254.0.1', '172.16.0.1', '172.31.255.255', '192.0.0.8', '192.0.2.10', '192.88.99.1',
    '192.168.1.1', '198.18.0.1', '198.19.255.255', '198.51.100.7', '203.0.113.9', '224.0.0.1', '239.255.255.250',
    '240.0.0.1', '255.255.255.255',
    '::', '::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '::ffff:a9fe:a9fe', '::ffff:192.168.0.1', '::127.0.0.1',
    '64:ff9b::10.0.0.1', '64:ff9b::7f00:1', '64:ff9b::a9fe:a9fe', '64:ff9b:1::1', '2002:0a00:0001::1', '2002:7f00:1::',
    'fc00::1', 'fd12:3456::1', 'fe80::1', 'fe80::1%eth0', 'febf::1', 'fec0::1', 'ff02::1', 'ff0e::1', '100::1',
    '2001:db8::1', '2001::1', '2001:2::1', '3fff::1', '[::1]',
    'not-an-ip', '', '1.2.3', '::ffff:999.0.0.1',
  ];
  const publicOnes = [
    '1.1.1.1', '8.8.8.8', '93.184.215.14', '100.63.255.255', '100.128.0.0', '172.15.255.255', '172.32.0.0',
    '169.253.255.255', '192.0.1.1', '192.169.0.1', '198.17.255.255', '198.20.0.0', '223.255.255.255',
    '2606:4700:4700::1111', '2a00:1450:4001:81b::200e', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:0808:0808::1',
    '2001:4860:4860::8888',
  ];
  for (const ip of notPublic) it(`refuses ${ip || '(empty)'}`, () => assert.equal(isPublicUnicast(ip), false));
  for (const ip of publicOnes) it(`accepts ${ip}`, () => assert.equal(isPublicUnicast(ip), true));
});

describe('validateWebhookUrl', () => {
  const resolver = fakeResolver({
    'hooks.example.com': ['93.184.215.14', '2606:4700:4700::1111'],
    'internal.example.com': ['10.1.2.3'],
    'mixed.example.com': ['93.184.215.14', '127.0.0.1'],
    'metadata.example.com': ['169.254.169.254'],
    'mapped.example.com': ['::ffff:192.168.1.1'],
    'nat64.example.com': ['64:ff9b::a9fe:a9fe'],
    'empty.example.com': [],
  });
  const strict = { allowPrivate: false, resolver };

  it('accepts an https URL whose name resolves only to public addresses', async () => {
    const { url, addresses } = await validateWebhookUrl('https://hooks.example.com/troupe?x=1', strict);
    assert.equal(url.hostname, 'hooks.example.com');
    assert.deepEqual(addresses.map((a) => a.address), ['93.184.215.14', '2606:4700:4700::1111']);
  });

  it('accepts a public IP literal without resolving it', async () => {
    const before = resolver.calls.length;
    await validateWebhookUrl('https://93.184.215.14:8443/h', strict);
    await validateWebhookUrl('https://[2606:4700:4700::1111]/h', strict);
    assert.equal(resolver.calls.length, before);
  });

  it('refuses http, other schemes and relative URLs', async () => {
    assert.equal(await refusedCode(validateWebhookUrl('http://hooks.example.com/', strict)), 'webhook_url_not_https');
    assert.equal(await refusedCode(validateWebhookUrl('ftp://hooks.example.com/', strict)), 'webhook_url_not_https');
    assert.equal(await refusedCode(validateWebhookUrl('/relative/path', strict)), 'invalid_webhook_url');
    assert.equal(await refusedCode(validateWebhookUrl('not a url', strict)), 'invalid_webhook_url');
  });

  it('refuses credentials in the URL, even when private addresses are allowed', async () => {
    for (const u of ['https://user:pass@hooks.example.com/', 'https://user@hooks.example.com/', 'https://:pw@hooks.example.com/']) {
      assert.equal(await refusedCode(validateWebhookUrl(u, strict)), 'webhook_url_has_credentials', u);
      assert.equal(await refusedCode(validateWebhookUrl(u, { allowPrivate: true })), 'webhook_url_has_credentials', u);
    }
  });

  it('refuses private, loopback, link-local, mapped and NAT64 literals', async () => {
    for (const host of ['127.0.0.1', '10.0.0.5', '172.20.1.1', '192.168.0.10', '169.254.169.254', '100.64.1.1', '0.0.0.0',
      '[::1]', '[::ffff:127.0.0.1]', '[::ffff:10.0.0.1]', '[64:ff9b::a00:1]', '[fd00::1]', '[fe80::1]', '[ff02::1]']) {
      assert.equal(await refusedCode(validateWebhookUrl(`https://${host}/hook`, strict)), 'webhook_url_not_public', host);
    }
  });

  it('refuses names that resolve to a non-public address, even one among public ones', async () => {
    for (const host of ['internal.example.com', 'mixed.example.com', 'metadata.example.com', 'mapped.example.com', 'nat64.example.com']) {
      assert.equal(await refusedCode(validateWebhookUrl(`https://${host}/`, strict)), 'webhook_url_not_public', host);
    }
  });

  it('never says what address a refused name resolved to (it would map the internal DNS)', async () => {
    for (const host of ['internal.example.com', 'mixed.example.com', 'metadata.example.com', 'mapped.example.com', 'nat64.example.com']) {
      for (const message of [
        await messageOf(validateWebhookUrl(`https://${host}/`, strict)),
        await messageOf(checkModelEndpoint(`https://${host}/v1`, 'llm_options[0].base_url', { allowPrivate: false, resolver })),
      ]) {
        assert.match(message, new RegExp(host.replace(/\./g, '\\.')), 'the host the caller gave is named');
        assert.doesNotMatch(message, ANY_IP, `${host}: ${message}`);
      }
    }
  });

  it('refuses a name that does not resolve, or resolves to nothing', async () => {
    assert.equal(await refusedCode(validateWebhookUrl('https://nope.example.com/', strict)), 'webhook_url_unresolvable');
    assert.equal(await refusedCode(validateWebhookUrl('https://empty.example.com/', strict)), 'webhook_url_unresolvable');
  });

  it('with allowPrivate accepts http and private hosts without resolving', async () => {
    const before = resolver.calls.length;
    const { url, addresses } = await validateWebhookUrl('http://127.0.0.1:9000/hook', { allowPrivate: true, resolver });
    assert.equal(url.port, '9000');
    assert.deepEqual(addresses, []);
    await validateWebhookUrl('https://internal.example.com/', { allowPrivate: true, resolver });
    assert.equal(resolver.calls.length, before);
  });
});

describe('guardedLookup', () => {
  let server: Server;
  let port: number;
  let connections = 0;
  before(async () => {
    server = createServer((_req, res) => res.end('ok'));
    server.on('connection', () => connections++);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  function get(host: string, lookup: ReturnType<typeof guardedLookup>): Promise<string> {
    return new Promise((resolve, reject) => {
      const req = request({ host, port, path: '/', lookup, agent: false }, (res) => {
        res.setEncoding('utf8');
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve(text));
      });
      req.on('error', reject);
      req.end();
    });
  }

  it('refuses to connect when the name resolves to a private address', async () => {
    const before = connections;
    const lookup = guardedLookup({ resolver: fakeResolver({ 'hook.test': ['127.0.0.1'] }) });
    await assert.rejects(get('hook.test', lookup), (err: NodeJS.ErrnoException) => err.code === 'ERR_ADDRESS_REFUSED' && !ANY_IP.test(err.message) && !('address' in err));
    assert.equal(connections, before, 'no connection was made');
  });

  it('connects to exactly the address it checked', async () => {
    const resolver = fakeResolver({ 'hook.test': ['127.0.0.1'] });
    const text = await get('hook.test', guardedLookup({ allowPrivate: true, resolver }));
    assert.equal(text, 'ok');
    assert.deepEqual(resolver.calls, ['hook.test'], 'resolved once, by the guard');
  });

  it('plugs into undici as the connect lookup', async () => {
    const refusing = new Agent({ connect: { lookup: guardedLookup({ resolver: fakeResolver({ 'hook.test': ['127.0.0.1'] }) }) } });
    const allowing = new Agent({ connect: { lookup: guardedLookup({ allowPrivate: true, resolver: fakeResolver({ 'hook.test': ['127.0.0.1'] }) }) } });
    try {
      await assert.rejects(
        undiciFetch(`http://hook.test:${port}/`, { dispatcher: refusing }),
        (err: Error & { cause?: NodeJS.ErrnoException }) => err.cause?.code === 'ERR_ADDRESS_REFUSED',
      );
      const res = await undiciFetch(`http://hook.test:${port}/`, { dispatcher: allowing });
      assert.equal(await res.text(), 'ok');
    } finally {
      await Promise.all([refusing.close(), allowing.close()]);
    }
  });

  it('answers both the single and the all-addresses lookup forms', async () => {
    const lookup = guardedLookup({ resolver: fakeResolver({ 'pub.test': ['93.184.215.14', '2606:4700:4700::1111'] }) });
    const single = await new Promise<[string, number]>((r, j) => lookup('pub.test', {}, (e, a, f) => (e ? j(e) : r([a as string, f!]))));
    assert.deepEqual(single, ['93.184.215.14', 4]);
    const v6 = await new Promise<string>((r, j) => lookup('pub.test', { family: 6 }, (e, a) => (e ? j(e) : r(a as string))));
    assert.equal(v6, '2606:4700:4700::1111');
    const all = await new Promise<LookupAddress[]>((r, j) => lookup('pub.test', { all: true }, (e, a) => (e ? j(e) : r(a as LookupAddress[]))));
    assert.deepEqual(all.map((a) => a.address), ['93.184.215.14', '2606:4700:4700::1111']);
  });

  it('fails a name that does not resolve', async () => {
    const lookup = guardedLookup({ resolver: fakeResolver({}) });
    const err = await new Promise<NodeJS.ErrnoException | null>((r) => lookup('gone.test', {}, (e) => r(e)));
    assert.equal(err?.code, 'ENOTFOUND');
  });
});
