import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { devDataDir } from '../../src/domain/dev-data-dir.js';
import { CliError, EXIT } from './exit-codes.js';

export interface Resolved {
  baseUrl: string;
  apiKey: string;
  /** Where the settings came from, for `troupe config`. */
  source: string;
}

interface ProfileFile {
  profiles?: Record<string, { base_url?: string; api_key?: string }>;
}

/** ~/.config/troupe/config.json (or $XDG_CONFIG_HOME, or $TROUPE_CONFIG). */
export function configPath(): string {
  if (process.env.TROUPE_CONFIG) return resolve(process.env.TROUPE_CONFIG);
  return join(process.env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'troupe', 'config.json');
}

function readProfiles(): ProfileFile {
  const file = configPath();
  if (!existsSync(file)) return {};
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as ProfileFile;
  } catch (err) {
    throw new CliError(`${file} is not valid JSON: ${(err as Error).message}`, EXIT.usage);
  }
}

export function saveProfile(name: string, baseUrl: string, apiKey: string): string {
  const file = configPath();
  const current = readProfiles();
  const next: ProfileFile = { ...current, profiles: { ...current.profiles, [name]: { base_url: baseUrl, api_key: apiKey } } };
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(next, null, 2) + '\n', { mode: 0o600 });
  return file;
}

/** A base URL the client can call, else a usage error naming where it came from (a typo fails here, not as "cannot reach"). */
export function checkBaseUrl(url: string, from: string): void {
  let protocol = '';
  try {
    protocol = new URL(url).protocol;
  } catch {
    // not a URL at all: refused below
  }
  if (protocol !== 'http:' && protocol !== 'https:') throw new CliError(`${from} "${url}" is not an http(s) URL, e.g. http://localhost:8080`, EXIT.usage);
}

/** The checkout this CLI was built in (dist/clients/cli/ is three levels down), where `npm start` runs. */
const CHECKOUT = resolve(__dirname, '../../..');

/** `npm start`'s dev-keys file in its TROUPE_DATA_DIR (the same variable, resolved the same way), when one is set. */
function dataDirKeys(): string | null {
  return process.env.TROUPE_DATA_DIR ? join(devDataDir(CHECKOUT), 'dev-keys.json') : null;
}

/** Where `npm start` keeps its dev keys: its TROUPE_DATA_DIR when one is set, else .data/ of the checkout. */
function devKeysWhere(): string {
  const file = dataDirKeys();
  return file ? `${file} (TROUPE_DATA_DIR)` : '.data/dev-keys.json';
}

function readDevKeys(file: string): { file: string; api: string; base_url?: string } | null {
  if (!existsSync(file)) return null;
  try {
    return { file, ...(JSON.parse(readFileSync(file, 'utf8')) as { api: string; base_url?: string }) };
  } catch {
    return null;
  }
}

/**
 * The dev-keys.json that `npm start` writes: in $TROUPE_DATA_DIR when it is set, and then only there (another
 * folder's keys would be another stack's), else in .data/ found from the working directory upwards.
 */
function devKeys(): { file: string; api: string; base_url?: string } | null {
  const inDataDir = dataDirKeys();
  if (inDataDir) return readDevKeys(inDataDir);
  for (let dir = process.cwd(), i = 0; i < 20; i++) {
    const file = join(dir, '.data', 'dev-keys.json');
    if (existsSync(file)) return readDevKeys(file);
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return null;
}

/**
 * Settings in order of precedence: flags, TROUPE_BASE_URL / TROUPE_API_KEY,
 * the named (or `default`) profile, and last the dev keys of a local
 * `npm start` (in $TROUPE_DATA_DIR, else .data/ of this checkout). Each of base URL and key is taken from the
 * first place that has it.
 */
export function resolveConfig(flags: { baseUrl?: string; apiKey?: string; profile?: string }): Resolved {
  const profileName = flags.profile ?? process.env.TROUPE_PROFILE ?? 'default';
  const profile = readProfiles().profiles?.[profileName];
  if (flags.profile && !profile) throw new CliError(`No profile "${flags.profile}" in ${configPath()}. Create it with: troupe login --profile ${flags.profile} --base-url URL --api-key KEY`, EXIT.usage);
  const dev = devKeys();
  const pick = (...c: [string | undefined, string][]) => c.find(([v]) => !!v) ?? [undefined, ''];
  const [baseUrl, baseFrom] = pick([flags.baseUrl, '--base-url'], [process.env.TROUPE_BASE_URL, 'TROUPE_BASE_URL'], [profile?.base_url, `profile ${profileName}`], [dev?.base_url ?? (dev ? 'http://localhost:8080' : undefined), dev?.file ?? '']);
  const [apiKey, keyFrom] = pick([flags.apiKey, '--api-key'], [process.env.TROUPE_API_KEY, 'TROUPE_API_KEY'], [profile?.api_key, `profile ${profileName}`], [dev?.api, dev?.file ?? '']);
  if (baseUrl) checkBaseUrl(baseUrl, baseFrom);
  if (!baseUrl || !apiKey) {
    throw new CliError(
      `No ${!baseUrl ? 'base URL' : 'API key'} configured. Set TROUPE_BASE_URL and TROUPE_API_KEY, run \`troupe login --base-url URL --api-key KEY\`, or run the CLI where \`npm start\` is running (no dev keys in ${devKeysWhere()}).`,
      EXIT.usage,
    );
  }
  return { baseUrl, apiKey, source: baseFrom === keyFrom ? baseFrom : `${baseFrom} (base URL), ${keyFrom} (key)` };
}
