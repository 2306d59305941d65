import { renameSync, writeFileSync } from 'node:fs';
import { Pipeline, Redis } from 'ioredis';
import type { MongoClient } from 'mongodb';

/**
 * Counts this process's client round trips to MongoDB and Redis, for the
 * benchmarks (TROUPE_ROUND_TRIPS_FILE). MongoDB: one per command the driver
 * sends (its command monitoring). Redis: one per command sent on its own,
 * one per pipeline however many commands it carries (an ioredis hook).
 * The counts are written to the file twice a second, as JSON.
 */
export interface RoundTrips {
  /** `shapes`: per statement, `command collection {filter keys:operators} sort`, to find collection scans. */
  mongo: { total: number; commands: Record<string, number>; shapes: Record<string, number> };
  /**
   * `fetches`: what BullMQ's job fetches found, per queue kind (shard number dropped), e.g.
   * `moveToActive session: empty`, `bzpopmin router-proxy: marker`, `moveToFinished session: next`. A fetch that
   * finds nothing is a round trip spent on a queue that had no job for this worker.
   */
  redis: { total: number; commands: Record<string, number>; pipelines: number; fetches: Record<string, number> };
}

/** Counts before the first round trip (a process's start, or the sum of several processes' files). */
export function noRoundTrips(): RoundTrips {
  return { mongo: { total: 0, commands: {}, shapes: {} }, redis: { total: 0, commands: {}, pipelines: 0, fetches: {} } };
}

const counts = noRoundTrips();
let installed = false;

function bump(map: Record<string, number>, key: string): void {
  map[key] = (map[key] ?? 0) + 1;
}

/** Script sha -> the name it was defined under (BullMQ's scripts, e.g. `moveToFinished-14`), learnt per client. */
const scriptNames = new Map<string, string>();

function nameOf(client: Redis, command: { name: string; args?: unknown[] }): string {
  if (command.name !== 'evalsha') return command.name;
  const sha = String(command.args?.[0] ?? '');
  if (!scriptNames.has(sha)) {
    const set = (client as unknown as { scriptsSet?: Record<string, { sha: string }> }).scriptsSet ?? {};
    for (const [name, script] of Object.entries(set)) scriptNames.set(script.sha, name.replace(/(-\d+)?(:[\d.]+)?$/, ''));
  }
  return `evalsha ${scriptNames.get(sha) ?? sha.slice(0, 8)}`;
}

/** `{troupe:q:session-12}:session-12:wait` -> `session`: the queue a BullMQ key belongs to, shard number dropped. */
function queueKind(key: unknown): string {
  const parts = String(key ?? '').split(':');
  return (parts[parts.length - 2] ?? '?').replace(/-\d+$/, '');
}

/** BullMQ's fetches and what each found: a job, or nothing (and, for the blocking wait, a marker or the timeout). */
function fetchOutcome(name: string, args: unknown[], reply: unknown): string | null {
  const got = (r: unknown) => (Array.isArray(r) && r[0] && r[1] ? 'job' : 'empty');
  switch (name) {
    case 'evalsha moveToActive': return `moveToActive ${queueKind(args[2])}: ${got(reply)}`;
    // Completing a job fetches the next one in the same script when the worker has room: `next` or `none`.
    case 'evalsha moveToFinished': return `moveToFinished ${queueKind(args[2])}: ${Array.isArray(reply) && reply[0] ? 'next' : 'none'}`;
    case 'bzpopmin': return `bzpopmin ${queueKind(args[0])}: ${reply ? 'marker' : 'timeout'}`;
    default: return null;
  }
}

function hookRedis(): void {
  type Command = { name: string; args?: unknown[]; promise?: Promise<unknown> };
  type Send = (this: Redis, command: Command, stream?: { isPipeline?: boolean }) => unknown;
  const send = Redis.prototype.sendCommand as unknown as Send;
  (Redis.prototype as unknown as { sendCommand: Send }).sendCommand = function (command, stream) {
    const name = nameOf(this, command);
    bump(counts.redis.commands, name);
    if (!stream?.isPipeline) counts.redis.total++;
    if (name === 'evalsha moveToActive' || name === 'evalsha moveToFinished' || name === 'bzpopmin') {
      command.promise?.then(
        (reply) => {
          const outcome = fetchOutcome(name, command.args ?? [], reply);
          if (outcome) bump(counts.redis.fetches, outcome);
        },
        () => undefined,
      );
    }
    return send.call(this, command, stream);
  };
  const exec = Pipeline.prototype.exec;
  Pipeline.prototype.exec = function (this: Pipeline, ...args: Parameters<typeof exec>) {
    counts.redis.total++;
    counts.redis.pipelines++;
    return exec.apply(this, args);
  } as typeof exec;
}

/** Installs the Redis hook and starts writing the counts; a no-op without the env var. */
export function startRoundTripCounter(env: NodeJS.ProcessEnv): boolean {
  const file = env.TROUPE_ROUND_TRIPS_FILE;
  if (!file || installed) return installed;
  installed = true;
  hookRedis();
  // Written aside and renamed over: the bench reads the file at any moment, and a half-written one is not JSON.
  const timer = setInterval(() => {
    writeFileSync(`${file}.tmp`, JSON.stringify(counts));
    renameSync(`${file}.tmp`, file);
  }, 500);
  timer.unref();
  return true;
}

/** Counts a client's commands; the client must have been made with `monitorCommands: true`. */
export function countMongo(client: MongoClient): void {
  if (!installed) return;
  client.on('commandStarted', (e) => {
    counts.mongo.total++;
    bump(counts.mongo.commands, e.commandName);
    for (const s of shapes(e.commandName, e.command)) bump(counts.mongo.shapes, s);
  });
}

type Filter = Record<string, unknown> | undefined;

/** `{a,b:$gt}`: the filter's fields, with the operators used on each. */
function keys(filter: Filter): string {
  return `{${Object.entries(filter ?? {}).map(([k, v]) => {
    const ops = v && typeof v === 'object' && !Array.isArray(v) ? Object.keys(v).filter((o) => o.startsWith('$')) : [];
    return ops.length ? `${k}:${ops.join('|')}` : k;
  }).join(',')}}`;
}

/**
 * The filter shape of each statement of a command. mongo-java-server uses an
 * index only when the filter's fields are exactly a unique index's (or `_id`),
 * so the shapes tell which queries scan a collection there.
 */
function shapes(name: string, command: Record<string, unknown>): string[] {
  const coll = String(command[name]);
  const sort = (s: unknown) => (s && Object.keys(s).length ? ` sort ${Object.keys(s).join(',')}` : '');
  const one = (f: Filter, extra = '') => `${name} ${coll} ${keys(f)}${extra}`;
  switch (name) {
    case 'insert': return [`insert ${coll}`];
    case 'find': return [one(command.filter as Filter, sort(command.sort))];
    case 'update': return (command.updates as { q: Filter }[]).map((u) => one(u.q));
    case 'delete': return (command.deletes as { q: Filter }[]).map((d) => one(d.q));
    case 'findAndModify': case 'count': case 'distinct': return [one(command.query as Filter, sort(command.sort))];
    case 'aggregate': return [one(((command.pipeline as Record<string, Filter>[])[0] ?? {}).$match)];
    default: return [];
  }
}
