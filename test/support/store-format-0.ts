import { Binary, Decimal128, Long, MongoClient, ObjectId, type Db } from 'mongodb';

/**
 * The content of test/fixtures/mongo-java-server/format-0.mv.gz: a data file written by the
 * launcher of commit b9b1859, whose H2 data maps held Java-serialized documents (format 0; see
 * infra/mongo-java-server's StoreFormat). The launcher test opens it with the current launcher.
 * To rewrite the fixture, start that launcher's jar on a fresh file, run
 * `node dist/test/support/store-format-0.js mongodb://127.0.0.1:PORT/`, stop it with SIGTERM,
 * and gzip its file.
 */
export const FORMAT_0_DB = 'troupe_format';

/** Every BSON type Troupe stores, nested ones included, and keys of both index kinds. */
export function formatZeroDocuments() {
  const events = Array.from({ length: 150 }, (_, i) => ({
    _id: `evt_${String(i).padStart(3, '0')}`,
    session_id: `sess_${i % 10}`,
    sequence_number: Math.floor(i / 10) + 1,
    at: new Date(Date.UTC(2026, 10, 23, 12, 0, i % 60)),
    big: Long.fromString('9007199254740993'),
    amount: Decimal128.fromString('1.50'),
    bytes: new Binary(Buffer.from([1, 2, i % 256])),
    payload: { parts: [1, 'two', { three: 3.5 }, null], done: i % 2 === 0, empty: {} },
    text: 'é'.repeat(i % 5),
  }));
  // Like GridFS's chunks: ObjectId keys, in the _id index and in a unique compound index.
  const chunks = Array.from({ length: 6 }, (_, n) => ({
    _id: new ObjectId(`65f0a1b2c3d4e5f6a7b8c9${String(n).padStart(2, '0')}`),
    files_id: new ObjectId('65f0a1b2c3d4e5f6a7b8c9ff'),
    n,
    uploaded: new Date(Date.UTC(2026, 10, 23)),
  }));
  return { events, chunks };
}

export async function writeFormatZero(db: Db): Promise<void> {
  const { events, chunks } = formatZeroDocuments();
  await db.collection('events').createIndex({ session_id: 1, sequence_number: 1 }, { unique: true, name: 'session_sequence_unique' });
  await db.collection<(typeof events)[number]>('events').insertMany(events);
  await db.collection('fs.chunks').createIndex({ files_id: 1, n: 1 }, { unique: true, name: 'files_id_1_n_1' });
  await db.collection<(typeof chunks)[number]>('fs.chunks').insertMany(chunks);
}

if (require.main === module) {
  const client = new MongoClient(process.argv[2], { directConnection: true });
  client
    .connect()
    .then(() => writeFormatZero(client.db(FORMAT_0_DB)))
    .finally(() => client.close())
    .catch((err) => {
      console.error(err);
      process.exitCode = 1;
    });
}
