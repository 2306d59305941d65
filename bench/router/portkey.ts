/**
 * Portkey's open-source AI gateway (`@portkey-ai/gateway` on npm) as a second
 * peer: installed into the git-ignored bench/.portkey on first use (never a
 * project dependency, so `npm test` does not pay for it), run as its own
 * process against the same fake upstream. It routes by headers: the provider
 * and a custom host per call.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const DIR = resolve(__dirname, '../../../bench/.portkey');
const VERSION = '1.15.2';
/**
 * @hono/node-server 1.14.2 and later hand a proxied fetch Response's own
 * (immutable) headers to the Response built around it, and the gateway then
 * appends its x-portkey-* headers to them: every streamed call fails with
 * "TypeError: immutable". 1.14.1 is the last release that copies them, so the
 * gateway runs on it (its dependency range, ^1.3.3, allows it).
 */
const NODE_SERVER = '1.14.1';
const SERVER = join(DIR, 'node_modules/@portkey-ai/gateway/build/start-server.js');

function installed(name: string): string | null {
  const file = join(DIR, 'node_modules', name, 'package.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version : null;
}

export function ensurePortkey(): string {
  if (installed('@portkey-ai/gateway') === VERSION && installed('@hono/node-server') === NODE_SERVER) return SERVER;
  process.stderr.write(`[bench] installing @portkey-ai/gateway@${VERSION} into bench/.portkey (once)\n`);
  mkdirSync(DIR, { recursive: true });
  const manifest = { private: true, dependencies: { '@portkey-ai/gateway': VERSION }, overrides: { '@hono/node-server': NODE_SERVER } };
  writeFileSync(join(DIR, 'package.json'), JSON.stringify(manifest, null, 2) + '\n');
  execFileSync('npm', ['install', '--prefix', DIR, '--no-audit', '--no-fund', '--ignore-scripts'], { stdio: 'inherit' });
  return SERVER;
}

export function startPortkey(port: number): ChildProcess {
  // --headless and NODE_ENV=production: no log console, no UI routes; only the gateway.
  const child = spawn(process.execPath, [ensurePortkey(), `--port=${port}`, '--headless'], { env: { ...process.env, NODE_ENV: 'production' }, stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr!.on('data', (d: Buffer) => process.stderr.write(`[portkey] ${d}`));
  return child;
}

/** Headers that send one chat call through Portkey to the fake's OpenAI or Anthropic endpoint. */
export function portkeyHeaders(provider: 'openai' | 'anthropic', fakeUrl: string): Record<string, string> {
  return { 'content-type': 'application/json', authorization: 'Bearer sk-bench', 'x-portkey-provider': provider, 'x-portkey-custom-host': `${fakeUrl}/v1` };
}
