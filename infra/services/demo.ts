import { join } from 'node:path';
import { deployFolder, TroupeClient } from '../../clients/typescript/src/index.js';

/** What the demo's stand-in for the client's forecast service answers. */
export const DEMO_FORECAST = { summary: 'light rain in the afternoon', high_c: 12, low_c: 6, precipitation_mm: 2.5 };

/**
 * The first-run demo: deploys examples/weather-agent with the TypeScript
 * client (the same path as `troupe deploy`), sends one message, answers the
 * external tool call like the client's own service would, and prints the
 * transcript. Scripted model, so no API key is needed.
 */
export async function runDemo(base: string, key: string, exampleDir: string, log: (line: string) => void): Promise<string> {
  const client = new TroupeClient({ baseUrl: base, apiKey: key });
  const { agent } = await deployFolder(client, exampleDir);
  log(`deployed ${join('examples', 'weather-agent')} as agent ${agent.id}`);
  const first = await client.sessions.start(agent.id, 'What is the weather in Oslo today, in Fahrenheit too?');
  const sid = first.session.id;
  const answered = new Set<string>();
  await client.sessions.waitForMessage(sid, first.message!.id, {
    timeoutMs: 20_000,
    pollMs: 100,
    onPoll: async () => {
      for (const c of await client.sessions.pendingToolCalls(sid)) {
        if (c.kind !== 'external' || answered.has(c.tool_call_id)) continue;
        answered.add(c.tool_call_id);
        // Stands in for the client's own forecast service.
        await client.sessions.submitToolResult(sid, c, { city: String(c.arguments.city ?? 'Oslo'), ...DEMO_FORECAST });
        log(`answered external tool call ${c.tool_name} (${c.tool_call_id})`);
      }
    },
  });
  log(`transcript of session ${sid}:`);
  for (const line of (await client.sessions.transcriptText(sid)).trimEnd().split('\n')) log(`  ${line}`);
  return agent.id;
}
