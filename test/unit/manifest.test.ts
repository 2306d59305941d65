import assert from 'node:assert/strict';
import { validateManifest } from '../../src/app/agents/manifest.js';
import { UploadTokens } from '../../src/app/agents/upload-token.js';
import { entryPath, resolveInside } from '../../src/lib/archive/paths.js';

const base = () => ({
  name: 'm',
  sdk: 'troupe-js@1',
  entrypoint: 'src/agent.js:agent',
  llm_options: [{ id: 'main', provider: 'openai', model: 'gpt-4.1-mini' }],
});

function refused(manifest: unknown, param: string, code?: string): void {
  assert.throws(
    () => validateManifest(manifest),
    (e: { status?: number; param?: string; code?: string; message: string }) => {
      assert.equal(e.status, 400, e.message);
      assert.equal(e.param, param, e.message);
      if (code) assert.equal(e.code, code);
      return true;
    },
  );
}

describe('manifest validation', () => {
  it('applies defaults and canonical paths', () => {
    const m = validateManifest({ ...base(), entrypoint: './src/agent.js:agent', custom_tools: [{ name: 't', path: './tools/t.js' }] });
    assert.deepEqual(m.sandbox, { secrets: [], internet_access: false });
    assert.equal(m.entrypoint, 'src/agent.js:agent');
    assert.deepEqual(m.custom_tools[0], { name: 't', path: 'tools/t.js', kind: 'custom', timeout_seconds: 60 });
  });

  it('does not modify the caller\u2019s object', () => {
    const raw = base();
    validateManifest(raw);
    assert.equal('sandbox' in raw, false);
  });

  it('refuses a bad entrypoint form', () => {
    refused({ ...base(), entrypoint: 'src/agent.js' }, 'manifest.entrypoint');
    refused({ ...base(), entrypoint: 'src/agent.js:not-an-identifier' }, 'manifest.entrypoint');
    refused({ ...base(), entrypoint: '../agent.js:agent' }, 'manifest.entrypoint');
  });

  it('keeps sandbox.allowed_domains lower case without trailing dots, and leaves it absent when not given', () => {
    const m = validateManifest({ ...base(), sandbox: { internet_access: true, allowed_domains: ['API.Example.com.', '*.example.org', 'xn--bcher-kva.example'] } });
    assert.deepEqual(m.sandbox.allowed_domains, ['api.example.com', '*.example.org', 'xn--bcher-kva.example']);
    assert.equal('allowed_domains' in validateManifest(base()).sandbox, false);
    assert.deepEqual(validateManifest({ ...base(), sandbox: { allowed_domains: [] } }).sandbox.allowed_domains, []);
  });

  it('refuses a bad sandbox.allowed_domains entry with a 400 naming its index', () => {
    const bads = ['10.0.0.1', '*.com', 'a*.example.com', '*.*.example.com', 'exa mple.com', '-bad.example.com', 'bücher.example', 'http://example.com', 'example.com:443', '[::1]', '*', ''];
    for (const entry of bads) refused({ ...base(), sandbox: { allowed_domains: ['ok.example.com', entry] } }, 'manifest.sandbox.allowed_domains[1]');
    refused({ ...base(), sandbox: { allowed_domains: ['a.example.com', 'A.example.com.'] } }, 'manifest.sandbox.allowed_domains[1]', 'invalid_allowed_domain');
    refused({ ...base(), sandbox: { allowed_domains: 'example.com' } }, 'manifest.sandbox.allowed_domains');
    refused({ ...base(), sandbox: { allowed_domains: Array.from({ length: 101 }, (_, i) => `h${i}.example.com`) } }, 'manifest.sandbox.allowed_domains');
  });

  it('refuses an unsupported sdk', () => refused({ ...base(), sdk: 'troupe-rb@1' }, 'manifest.sdk'));

  it('refuses a bad secret name', () => refused({ ...base(), sandbox: { secrets: ['lower_case'] } }, 'manifest.sandbox.secrets[0]'));

  it('refuses a duplicate tool name', () =>
    refused({ ...base(), custom_tools: [{ name: 't', path: 'a.js' }, { name: 't', path: 'b.js' }] }, 'manifest.custom_tools[1].name', 'duplicate_tool_name'));

  it('refuses a timeout outside 1..3600 or not an integer', () => {
    refused({ ...base(), custom_tools: [{ name: 't', path: 'a.js', timeout_seconds: 0 }] }, 'manifest.custom_tools[0].timeout_seconds');
    refused({ ...base(), custom_tools: [{ name: 't', path: 'a.js', timeout_seconds: 1.5 }] }, 'manifest.custom_tools[0].timeout_seconds');
    refused({ ...base(), custom_tools: [{ name: 't', path: 'a.js', timeout_seconds: 3601 }] }, 'manifest.custom_tools[0].timeout_seconds');
  });

  it('refuses an unknown tool kind and a tool path outside the archive', () => {
    refused({ ...base(), custom_tools: [{ name: 't', path: 'a.js', kind: 'remote' }] }, 'manifest.custom_tools[0].kind');
    refused({ ...base(), custom_tools: [{ name: 't', path: '/etc/a.js' }] }, 'manifest.custom_tools[0].path');
  });

  it('requires at least one LLM option with unique ids', () => {
    refused({ ...base(), llm_options: [] }, 'manifest.llm_options');
    refused({ ...base(), llm_options: [{ id: 'a', provider: 'routing' }, { id: 'a', provider: 'routing' }] }, 'manifest.llm_options[1].id', 'duplicate_llm_id');
  });

  it('requires a script for scripted options and a model for vendor ones', () => {
    refused({ ...base(), llm_options: [{ id: 's', provider: 'scripted' }] }, 'manifest.llm_options[0].script');
    refused({ ...base(), llm_options: [{ id: 'o', provider: 'anthropic' }] }, 'manifest.llm_options[0].model');
    refused({ ...base(), llm_options: [{ id: 'o', provider: 'gemini', model: 'x' }] }, 'manifest.llm_options[0].provider');
  });

  it('refuses unknown fields', () => refused({ ...base(), entry_point: 'x' }, 'manifest.entry_point'));
});

describe('archive paths', () => {
  it('canonicalises entry names and refuses escapes', () => {
    assert.equal(entryPath('./a//b/'), 'a/b');
    assert.throws(() => entryPath('/abs'), /absolute/);
    assert.throws(() => entryPath('C:/win'), /absolute/);
    assert.throws(() => entryPath('a/../b'), /\.\./);
    assert.equal(resolveInside('tools', '../schemas/x.json'), 'schemas/x.json');
    assert.equal(resolveInside('tools', '../../x.json'), null);
  });
});

describe('upload tokens', () => {
  const keys = new Map([
    ['k1', Buffer.alloc(32, 1)],
    ['k0', Buffer.alloc(32, 2)],
  ]);
  const grant = { snapshotId: 'snap_1', orgId: 'org_1', exp: 2000 };

  it('round-trips a grant and refuses it once expired', () => {
    const t = new UploadTokens(keys, 'k1');
    const token = t.sign(grant);
    assert.deepEqual(t.verify(token, 1999), { ok: true, grant });
    assert.deepEqual(t.verify(token, 2000), { ok: false, reason: 'expired' });
  });

  it('refuses a tampered payload or signature', () => {
    const t = new UploadTokens(keys, 'k1');
    const [v, kid, payload, mac] = t.sign(grant).split('.');
    const forged = Buffer.from(JSON.stringify({ sid: 'snap_2', org: 'org_1', exp: 2000 })).toString('base64url');
    assert.deepEqual(t.verify([v, kid, forged, mac].join('.'), 0), { ok: false, reason: 'bad_signature' });
    assert.deepEqual(t.verify([v, kid, payload, mac.slice(0, -2) + 'AA'].join('.'), 0), { ok: false, reason: 'bad_signature' });
    assert.deepEqual(t.verify('garbage', 0), { ok: false, reason: 'malformed' });
  });

  it('keeps tokens signed under a rotated-out current key valid', () => {
    const old = new UploadTokens(keys, 'k0').sign(grant);
    assert.equal(new UploadTokens(keys, 'k1').verify(old, 0).ok, true);
    assert.equal(new UploadTokens(new Map([['k1', Buffer.alloc(32, 1)]]), 'k1').verify(old, 0).ok, false);
  });
});
