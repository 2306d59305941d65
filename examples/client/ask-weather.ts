/**
 * The TypeScript client in a small script: ask the weather agent a question,
 * follow the session's events live, and answer its external tool call the way
 * your own forecast service would.
 *
 *   npm run build
 *   TROUPE_BASE_URL=http://localhost:8080 TROUPE_API_KEY=tr_sk_... node dist/examples/client/ask-weather.js "What is the weather in Oslo today?"
 */
import { TroupeClient } from '../../clients/typescript/src/index.js';

/** Your side of the external tool: here a fixed answer, in real life your own service. */
function forecast(city: string) {
  return { city, summary: 'sunny spells', high_c: 17, low_c: 9, precipitation_mm: 0 };
}

async function main(): Promise<void> {
  const { TROUPE_BASE_URL: baseUrl, TROUPE_API_KEY: apiKey } = process.env;
  if (!baseUrl || !apiKey) throw new Error('set TROUPE_BASE_URL and TROUPE_API_KEY');
  const troupe = new TroupeClient({ baseUrl, apiKey });

  const agent = (await troupe.agents.all()).find((a) => a.name === 'weather-agent');
  if (!agent) throw new Error('deploy it first: npx troupe deploy examples/weather-agent');

  const { session } = await troupe.sessions.start(agent.id, process.argv[2] ?? 'What is the weather in Oslo today?');
  console.log(`session ${session.id}`);

  // The stream resumes by itself if the connection drops; each event arrives once, in order.
  // Narrowing on `ev.type` types `ev.data`: no casts.
  for await (const ev of troupe.sessions.stream(session.id)) {
    if (ev.type === 'tool.call_requested') {
      const call = ev.data;
      console.log(`${call.tool_name}(${JSON.stringify(call.arguments)}) -> answering`);
      const city = typeof call.arguments.city === 'string' ? call.arguments.city : 'Oslo';
      await troupe.sessions.submitToolResult(session.id, call, forecast(city));
    }
    if (ev.type === 'assistant.message_completed') {
      for (const part of ev.data.parts) if (part.type === 'text') console.log(`assistant: ${part.text}`);
    }
    if (ev.type === 'session.status_changed' && ev.data.to === 'idle') break;
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
