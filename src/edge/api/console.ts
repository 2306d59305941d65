import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Middleware } from 'koa';
import type { AppState } from './types.js';

const ROOT = resolve(__dirname, '../../../..');
const STATIC_DIR = join(ROOT, 'clients', 'console', 'static');
/** tsc output of clients/console/tsconfig.json: the page's modules and the client they import. */
const JS_DIR = join(ROOT, 'dist', 'console');

/**
 * Strict: scripts, styles and connections only from this origin, nothing
 * inline, no frames, no forms posting elsewhere. The page's only network use
 * is fetch() to the API it is served by.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const FILES: Record<string, { file: string; type: string }> = {
  '/console': { file: join(STATIC_DIR, 'index.html'), type: 'text/html; charset=utf-8' },
  '/console/': { file: join(STATIC_DIR, 'index.html'), type: 'text/html; charset=utf-8' },
  '/console/console.css': { file: join(STATIC_DIR, 'console.css'), type: 'text/css; charset=utf-8' },
};

/** `/console/js/<path>.js` → dist/console/<path>.js; only plain relative names, so nothing outside it is reachable. */
function jsFile(path: string): string | null {
  const m = /^\/console\/js\/((?:[A-Za-z0-9_-]+\/)*[A-Za-z0-9_.-]+\.js)$/.exec(path);
  if (!m || m[1].split('/').some((seg) => seg.startsWith('.'))) return null;
  return join(JS_DIR, m[1]);
}

/**
 * Serves the browser console at /console: static files only (no server-side
 * rendering, no API access of its own). The page talks to the public API
 * with the key the person enters, like any other client.
 */
export function consoleAssets(): Middleware<AppState> {
  return async (ctx, next) => {
    if (!ctx.path.startsWith('/console') || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return next();
    const known = FILES[ctx.path];
    const file = known?.file ?? jsFile(ctx.path);
    if (!file) return next();
    let body: Buffer;
    try {
      body = await readFile(file);
    } catch {
      return next();
    }
    ctx.set({
      'Content-Security-Policy': CONSOLE_CSP,
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
      'Cache-Control': 'no-cache',
    });
    ctx.type = known?.type ?? 'text/javascript; charset=utf-8';
    ctx.body = body;
  };
}
