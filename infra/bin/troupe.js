#!/usr/bin/env node
// Entry point for the README's two commands on a fresh clone:
//   npm start  -> install dependencies if needed, build, start Troupe with local services
//   npm test   -> install dependencies if needed, build, run unit + integration tests
// Plain JavaScript on purpose: it has to run before anything is installed or compiled.
'use strict';
const { spawnSync } = require('node:child_process');
const { existsSync, statSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..', '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) {
    process.stderr.write(`troupe: ${cmd} ${args.join(' ')} failed (exit ${r.status ?? r.signal})\n`);
    process.exit(r.status || 1);
  }
}

function mtime(p) {
  return existsSync(p) ? statSync(p).mtimeMs : 0;
}

function ensureDependencies() {
  const installed = join(root, 'node_modules', '.package-lock.json');
  const lock = join(root, 'package-lock.json');
  if (mtime(installed) >= Math.max(mtime(lock), mtime(join(root, 'package.json')))) return;
  process.stderr.write('troupe: installing npm dependencies\n');
  // `npm install`, not `npm ci`: the lock omits other platforms' optional binaries
  // (msgpackr-extract), which makes `npm ci` refuse it; install still honours the lock.
  run(npm, ['install', '--no-audit', '--no-fund']);
}

function build() {
  const code = require('./build.js').build();
  if (code !== 0) {
    process.stderr.write(`troupe: the build failed (exit ${code})\n`);
    process.exit(code);
  }
}

const [command, ...rest] = process.argv.slice(2);
ensureDependencies();
build();
if (command === 'start') {
  require(join(root, 'dist', 'infra', 'services', 'dev.js'))
    .main(rest)
    .catch((err) => {
      // A setting to change (a bad value, a port in use) is one line; anything else keeps its stack.
      process.stderr.write(`troupe: ${err && err.name === 'ConfigError' ? err.message : (err && err.stack) || err}\n`);
      process.exit(1);
    });
} else if (command === 'test') {
  const r = spawnSync(process.execPath, [join(root, 'dist', 'infra', 'services', 'run-tests.js'), ...rest], { cwd: root, stdio: 'inherit' });
  process.exit(r.status ?? 1);
} else {
  process.stderr.write('usage: node infra/bin/troupe.js start|test\n');
  process.exit(2);
}
