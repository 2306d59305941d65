import type { Collection, Db, Document } from 'mongodb';

/**
 * A Db that always means the connection owner's current client. The watchdog
 * (mongo-watchdog.ts) may replace a wedged MongoClient while the process runs;
 * repositories build their Collections once, in their constructors, so what
 * they hold must resolve the client on every use, never keep the first one.
 * Every property read, on the Db and on each Collection it hands out, goes to
 * the same-named object of `current()`, which returns one Db per client.
 */
export function liveDb(current: () => Db): Db {
  const collections = new Map<string, Collection<Document>>();
  const collection = (name: string, options?: Parameters<Db['collection']>[1]): Collection<Document> => {
    // A collection's options are fixed at creation: one proxy per name and options.
    const key = options ? `${name}\0${JSON.stringify(options)}` : name;
    let col = collections.get(key);
    if (!col) {
      col = forward(current, (db) => db.collection(name, options));
      collections.set(key, col);
    }
    return col;
  };
  return new Proxy(current(), {
    get(_target, prop) {
      if (prop === 'collection') return collection;
      const db = current();
      const value = Reflect.get(db, prop, db) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(db) : value;
    },
  });
}

/** A Collection of the current Db, rebuilt only when the Db (so the client) changes; methods bound to it. */
function forward(current: () => Db, make: (db: Db) => Collection<Document>): Collection<Document> {
  let db = current();
  let real = make(db);
  return new Proxy(real, {
    get(_target, prop) {
      const now = current();
      if (now !== db) [db, real] = [now, make(now)];
      const value = Reflect.get(real, prop, real) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(real) : value;
    },
  });
}
