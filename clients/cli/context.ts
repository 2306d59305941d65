import { InvalidArgumentError, type Command } from 'commander';
import { TroupeClient } from '../typescript/src/client.js';
import { resolveConfig } from './config.js';

export interface GlobalOptions {
  baseUrl?: string;
  apiKey?: string;
  profile?: string;
}

/**
 * What every command gets: the client, and two channels. Results go to
 * stdout (so `ID=$(troupe …)` captures exactly them); progress and advice
 * go to stderr.
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
    out: (line) => void process.stdout.write(line + '\n'),
    note: (line) => void process.stderr.write(line + '\n'),
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

export function sequenceNumber(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError(`expected a sequence number (0, 1, 2, …), got "${value}"`);
  return Number(value);
}

/** A page size the API takes (1-100), checked here so a typo is a usage error, not a refusal from the server. */
export function pageLimit(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 100) throw new InvalidArgumentError(`expected a whole number from 1 to 100, got "${value}"`);
  return Number(value);
}
