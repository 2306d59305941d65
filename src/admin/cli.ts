#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { connectMongo } from '../store/mongo.js';
import { ensureIndexes } from '../store/indexes.js';
import { ApiKeyStore, type ApiKeyDoc } from '../store/api-keys.js';
import { OrgStore, type OrgDoc } from '../store/orgs.js';
import type { OrgLimits } from '../domain/org-limits.js';
import { ConfigError, LIMIT_ENV, mongodbUrlVar, parseMasterKeys } from '../lib/config/config.js';
import { SecretBox } from '../lib/crypto/secret-box.js';
import { reseal } from './reseal.js';
import { EXIT } from '../domain/exit-codes.js';
import { BUDGET_PERIODS, MAX_BUDGET_USD, type Budget, type BudgetPeriod } from '../domain/budget.js';

const USAGE = `usage: troupe-admin <command> [options]
  org create <name>                         create an org
  org list                                  list orgs
  key create --org <name> --kind api|routing [--name <label>] [--tokens-per-min N]
                                            create a key; it is printed once, only its hash is stored
  key limits --org <name> <key id|prefix> --tokens-per-min N|default
                                            set a routing key's tokens per minute (0 = unlimited,
                                            "default" = the org's routing_key_tokens_per_min)
  key list --org <name> [--prefix <p>]      list keys (prefix, kind, status), never the key itself
  key revoke --org <name> <key id|prefix>   revoke one key
  key budget --org <name> <key id|prefix> (--amount-usd N --period day|month|total | --clear)
                                            set or clear a key's spend budget (docs/budgets.md)
  org limits <name> [--api-per-min N] [--api-key-per-min N] [--routing-per-min N]
             [--routing-key-per-min N] [--running-sessions N]
             [--routing-tokens-per-min N] [--routing-key-tokens-per-min N]
                                            show or set an org's limits; N = 0 is unlimited,
                                            "default" goes back to the environment's default
  reseal                                    seal every secret stored under an older master key again
                                            under the first key of TROUPE_MASTER_KEY, so the older
                                            keys can be removed; safe to run again (exit 5 if some
                                            value would not open)
Needs MONGODB_URL or MONGODB_URI (and TROUPE_MONGODB_DB if the database is not in the URL).
Exit codes: 0 done, 1 unexpected failure, 2 usage mistake, 3 no such org or key, or it already exists,
5 reseal left values it could not open.`;


/** A mistake in the command line (EXIT.usage), told apart from a well-formed command the data refuses (EXIT.refused): a script can act on each. */
class UsageError extends Error {}
/** A well-formed command about an org or key that is not there, or already is: one line, nothing changed. */
class RefusedError extends Error {}

const LIMIT_FIELDS = Object.keys(LIMIT_ENV) as (keyof OrgLimits)[];
/** `api_key_per_min` → `api-key-per-min` */
const flagOf = (field: string) => field.replace(/_/g, '-');

function limitChanges(values: Record<string, unknown>): Partial<Record<keyof OrgLimits, number | null>> {
  const changes: Partial<Record<keyof OrgLimits, number | null>> = {};
  for (const f of LIMIT_FIELDS) {
    const raw = values[flagOf(f)];
    if (typeof raw !== 'string') continue;
    if (raw === 'default') changes[f] = null;
    else if (/^\d{1,9}$/.test(raw)) changes[f] = Number(raw);
    else throw new UsageError(`--${flagOf(f)} must be a whole number or "default"`);
  }
  return changes;
}

/** `--amount-usd N --period P`, or `--clear` (null). */
function budgetOf(values: Record<string, unknown>): Budget | null {
  if (values.clear === true) {
    if (values['amount-usd'] !== undefined || values.period !== undefined) throw new UsageError('--clear takes no --amount-usd or --period');
    return null;
  }
  const raw = values['amount-usd'];
  const amount = typeof raw === 'string' && /^\d+(\.\d+)?$/.test(raw) ? Number(raw) : NaN;
  if (!(amount > 0 && amount <= MAX_BUDGET_USD)) throw new UsageError(`--amount-usd must be a number above 0 and at most ${MAX_BUDGET_USD}`);
  if (!BUDGET_PERIODS.includes(values.period as BudgetPeriod)) throw new UsageError(`--period must be one of ${BUDGET_PERIODS.join(', ')}`);
  return { amount_usd: amount, period: values.period as BudgetPeriod };
}

/** Stored overrides only; unset fields follow the environment of the running processes. */
function limitsRow(o: OrgDoc) {
  return { id: o._id, name: o.name, limits: o.limits ?? {}, note: `Unset limits take the defaults from ${Object.values(LIMIT_ENV).join(', ')}; changes apply within 5 s.` };
}

function keyRow(k: ApiKeyDoc) {
  return { id: k._id, prefix: k.prefix, kind: k.kind, name: k.name, created_at: k.created_at.toISOString(), revoked_at: k.revoked_at?.toISOString() ?? null, ...(k.tokens_per_min != null ? { tokens_per_min: k.tokens_per_min } : {}) };
}

/** `--tokens-per-min`: a whole number, or "default" (null) where `allowDefault`; undefined when not given. */
function tokensFlag(raw: unknown, allowDefault: boolean): number | null | undefined {
  if (typeof raw !== 'string') return undefined;
  if (allowDefault && raw === 'default') return null;
  if (/^\d{1,12}$/.test(raw)) return Number(raw);
  throw new UsageError(`--tokens-per-min must be a whole number${allowDefault ? ' or "default"' : ''}`);
}

function parse(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: { help: { type: 'boolean', short: 'h' }, org: { type: 'string' }, kind: { type: 'string' }, name: { type: 'string' }, prefix: { type: 'string' }, 'tokens-per-min': { type: 'string' }, 'amount-usd': { type: 'string' }, period: { type: 'string' }, clear: { type: 'boolean' }, ...Object.fromEntries(LIMIT_FIELDS.map((f) => [flagOf(f), { type: 'string' as const }])) },
    });
  } catch (err) {
    // An unknown or malformed option is the command line's mistake, not a failure of the tool.
    throw new UsageError((err as Error).message);
  }
}

async function run(argv: string[]): Promise<unknown> {
  const { values, positionals } = parse(argv);
  if (values.help) return USAGE;
  const [noun, verb, arg] = positionals;
  if (!noun || (!verb && noun !== 'reseal')) throw new UsageError('missing command');
  let url: string | undefined;
  try {
    url = process.env[mongodbUrlVar(process.env)];
  } catch (err) {
    throw err instanceof ConfigError ? new UsageError(err.message) : err;
  }
  if (!url) throw new UsageError('MONGODB_URL is not set (nor MONGODB_URI)');
  const dbName = process.env.TROUPE_MONGODB_DB || new URL(url.replace(/^mongodb(\+srv)?:/, 'http:')).pathname.slice(1) || 'troupe';
  const mongo = await connectMongo(url, dbName, 'troupe-admin');
  try {
    await ensureIndexes(mongo.db);
    const orgs = new OrgStore(mongo.db);
    const keys = new ApiKeyStore(mongo.db);
    const org = async () => {
      if (!values.org) throw new UsageError('--org is required');
      const found = await orgs.byName(values.org);
      if (!found) throw new RefusedError(`no org named ${JSON.stringify(values.org)}`);
      return found;
    };
    if (noun === 'reseal') {
      if (verb) throw new UsageError('reseal takes no arguments');
      return await resealAll(mongo.db);
    }
    switch (`${noun} ${verb}`) {
      case 'org create': {
        if (!arg) throw new UsageError('org create needs a name');
        if (await orgs.byName(arg)) throw new RefusedError(`org ${JSON.stringify(arg)} already exists`);
        const o = await orgs.create(arg);
        return { id: o._id, name: o.name, created_at: o.created_at.toISOString() };
      }
      case 'org limits': {
        if (!arg) throw new UsageError('org limits needs an org name');
        const found = await orgs.byName(arg);
        if (!found) throw new RefusedError(`no org named ${JSON.stringify(arg)}`);
        return limitsRow((await orgs.setLimits(found._id, limitChanges(values)))!);
      }
      case 'org list':
        return (await orgs.list()).map((o) => ({ id: o._id, name: o.name }));
      case 'key create': {
        if (values.kind !== 'api' && values.kind !== 'routing') throw new UsageError('--kind must be api or routing');
        const tpm = tokensFlag(values['tokens-per-min'], false);
        if (tpm !== undefined && values.kind !== 'routing') throw new UsageError('--tokens-per-min applies to routing keys');
        const o = await org();
        let { key, doc } = await keys.create(o._id, values.kind, { name: values.name });
        if (tpm != null) doc = (await keys.setTokensPerMin(o._id, doc._id, tpm)) ?? doc;
        return { key, ...keyRow(doc), note: 'Store this key now; it cannot be shown again.' };
      }
      case 'key list':
        return (await keys.list((await org())._id, values.prefix)).map(keyRow);
      case 'key limits': {
        if (!arg) throw new UsageError('key limits needs a key id or prefix');
        const tpm = tokensFlag(values['tokens-per-min'], true);
        if (tpm === undefined) throw new UsageError('key limits needs --tokens-per-min N|default');
        const o = await org();
        const all = await keys.list(o._id);
        const byId = all.find((x) => x._id === arg);
        const matches = byId ? [byId] : all.filter((x) => x.prefix.startsWith(arg));
        if (matches.length !== 1) throw new RefusedError(`no single key matches ${JSON.stringify(arg)}`);
        if (matches[0].kind !== 'routing') throw new RefusedError('token limits apply to routing keys only');
        const changed = (await keys.setTokensPerMin(o._id, matches[0]._id, tpm))!;
        return keyRow(changed);
      }
      case 'key revoke': {
        if (!arg) throw new UsageError('key revoke needs a key id or prefix');
        const revoked = await keys.revoke((await org())._id, arg);
        if (!revoked) throw new RefusedError(`no single key matches ${JSON.stringify(arg)}`);
        return keyRow(revoked);
      }
      case 'key budget': {
        if (!arg) throw new UsageError('key budget needs a key id or prefix');
        const budget = budgetOf(values);
        const key = await keys.setBudget((await org())._id, arg, budget);
        if (!key) throw new RefusedError(`no single key matches ${JSON.stringify(arg)}`);
        return { ...keyRow(key), budget: key.budget ?? null, note: 'Applies within 5 s.' };
      }
      default:
        throw new UsageError(`unknown command ${noun} ${verb}`);
    }
  } finally {
    await mongo.close();
  }
}

/** A reseal that left values under an old key: the report is printed, and the exit says not to drop the key yet. */
class IncompleteError extends Error {
  constructor(readonly report: unknown) {
    super('some values would not open; keep the older keys until they are looked at');
  }
}

async function resealAll(db: Parameters<typeof reseal>[0]): Promise<unknown> {
  const raw = process.env.TROUPE_MASTER_KEY;
  if (!raw) throw new UsageError('TROUPE_MASTER_KEY is not set (the new key first, then every key still in use)');
  let parsed: ReturnType<typeof parseMasterKeys>;
  try {
    parsed = parseMasterKeys(raw);
  } catch (err) {
    throw err instanceof ConfigError ? new UsageError(err.message) : err;
  }
  const report = await reseal(db, new SecretBox(parsed.keys, parsed.currentId), parsed.currentId);
  if (report.fields.some((f) => f.failed > 0)) throw new IncompleteError(report);
  return report;
}

run(process.argv.slice(2)).then(
  (out) => {
    process.stdout.write((out === USAGE ? USAGE : JSON.stringify(out, null, 2)) + '\n');
  },
  (err: unknown) => {
    if (err instanceof IncompleteError) {
      process.stdout.write(JSON.stringify(err.report, null, 2) + '\n');
      process.stderr.write(`troupe-admin: ${err.message}\n`);
      process.exit(EXIT.failed);
    }
    if (err instanceof UsageError) process.stderr.write(`troupe-admin: ${err.message}\n${USAGE}\n`);
    else process.stderr.write(`troupe-admin: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(err instanceof UsageError ? EXIT.usage : err instanceof RefusedError ? EXIT.refused : EXIT.internal);
  },
);
