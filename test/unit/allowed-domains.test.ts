import assert from 'node:assert/strict';
import { allowedDomainProblem, hostAllowed } from '../../src/domain/allowed-domains.js';

describe('sandbox.allowed_domains', () => {
  it('a plain entry matches that name only, in any case and with a trailing dot', () => {
    const list = ['api.example.com'];
    for (const h of ['api.example.com', 'API.Example.COM', 'api.example.com.']) assert.equal(hostAllowed(h, list), true, h);
    for (const h of ['example.com', 'x.api.example.com', 'api.example.com.evil.test', 'apiexample.com', 'api.example.co']) assert.equal(hostAllowed(h, list), false, h);
  });

  it('a wildcard matches every name below it at any depth, but not the domain itself nor a look-alike', () => {
    const list = ['*.example.com'];
    for (const h of ['a.example.com', 'a.b.example.com', 'A.EXAMPLE.com.']) assert.equal(hostAllowed(h, list), true, h);
    for (const h of ['example.com', 'badexample.com', 'example.com.evil.test', '.example.com']) assert.equal(hostAllowed(h, list), false, h);
  });

  it('an empty list allows nothing', () => assert.equal(hostAllowed('example.com', []), false));

  it('accepts host names and first-label wildcards, and says why anything else is not one', () => {
    for (const ok of ['example.com', 'a-b.example.com', '*.example.com', 'localhost', 'xn--bcher-kva.example', 'EXAMPLE.com.']) assert.equal(allowedDomainProblem(ok), null, ok);
    for (const bad of ['10.0.0.1', '1.2.3.999', '*.com', 'a.*.com', '**.example.com', 'ex ample.com', 'bücher.example', 'example.com:443', '-a.example.com', 'a-.example.com', `${'a'.repeat(64)}.com`, '', '.']) {
      assert.notEqual(allowedDomainProblem(bad), null, bad);
    }
  });
});
