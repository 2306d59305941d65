#!/usr/bin/env node
// The build: the service, client and CLI (tsconfig.json), then the browser
// console (clients/console/tsconfig.json, ES modules for the page), then the
// package's bins made executable so `npx troupe` runs on a fresh clone.
// Plain JavaScript: it runs before anything is compiled.
'use strict';
const { spawnSync } = require('node:child_process');
const { chmodSync, cpSync, existsSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..', '..');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
// Files tsc does not emit but the built service runs: the Python tool runner (and its helpers).
const ASSET_DIRS = [join('src', 'lib', 'sandbox', 'python')];

function build() {
  for (const config of ['tsconfig.json', join('clients', 'console', 'tsconfig.json')]) {
    if (!existsSync(join(root, config))) continue;
    const r = spawnSync(process.execPath, [tsc, '-p', config], { cwd: root, stdio: 'inherit' });
    if (r.status !== 0) return r.status || 1;
  }
  for (const dir of ASSET_DIRS) {
    if (existsSync(join(root, dir))) cpSync(join(root, dir), join(root, 'dist', dir), { recursive: true, filter: (src) => !src.endsWith('.ts') && !src.includes('__pycache__') });
  }
  const { bin } = require(join(root, 'package.json'));
  for (const file of Object.values(bin)) if (existsSync(join(root, file))) chmodSync(join(root, file), 0o755);
  return 0;
}

module.exports = { build };
if (require.main === module) process.exit(build());
