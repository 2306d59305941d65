import { InvalidArgumentError, type Command } from 'commander';
import { TroupeClient } from '../typescript/src/client.js';
import { resolveConfig } from './config.js';
import { terminalSafe } from './terminal-text.js';

export interface GlobalOptions {
  baseUrl?: string;
  apiKey?: string;
  profile?: string;
}

/**
 * What every command gets: the client, and two channels. Results go to
 * stdout (so `ID=$(troupe …)` captures exactly them); progress and advice
 * go to stderr. Both write text through terminalSafe: what a model or a user
 * wrote cannot drive the terminal.
 */
export interface Ctx {
  client: TroupeClient;
  json: boolean;
  out(line: string): void;
  note(line: string): void;
}

export function context(cmd: Command): Ctx {
  const opts = cmd.optsWithGlobals<GlobalOptions>();
  const cfg = resolveConfig(opts);
  return {
    client: new TroupeClient({ baseUrl: cfg.baseUrl, apiKey: cfg.apiKey }),
    // Per command: `tool-result --json` takes the result instead.
    json: cmd.opts().json === true,
    out: (line) => void process.stdout.write(terminalSafe(line) + '\n'),
    note: (line) => void process.stderr.write(terminalSafe(line) + '\n'),
  };
}

/** `k=v` pairs (repeatable flag) as an object. */
export function pairs(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const eq = value.indexOf('=');
  if (eq < 1) throw new InvalidArgumentError(`expected key=value, got "${value}"`);
  return { ...previous, [value.slice(0, eq)]: value.slice(eq + 1) };
}

export function positiveSeconds(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError(`expected a number of seconds, got "${value}"`);
  return n;
}

/** A whole number from `min` to `max`, else a usage error saying what was expected (a typo fails here, not at the server). */
function wholeNumber(min: number, max: number, expected: string): (value: string) => number {
  return (value) => {
    if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) throw new InvalidArgumentError(`expected ${expected}, got "${value}"`);
    return Number(value);
  };
}

export const sequenceNumber = wholeNumber(0, Number.MAX_SAFE_INTEGER, 'a sequence number (0, 1, 2, …)');
/** A page size the API takes. */
export const pageLimit = wholeNumber(1, 100, 'a whole number from 1 to 100');
