/** The fake upstream in its own process, so it does not share an event loop with the router or the client. */
import { FakeLlmUpstream } from '../../test/fakes/llm-upstream.js';

async function run(): Promise<void> {
  const fake = await FakeLlmUpstream.start();
  fake.reply = { text: 'Hello world, this is a benchmark answer of a few words.' };
  process.stdout.write(`${fake.url}\n`);
  const stop = () => void fake.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

run().catch((err) => {
  console.error(err);
  process.exit(1);
});
