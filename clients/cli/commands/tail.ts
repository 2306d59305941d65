import type { Command } from 'commander';
import { context, sequenceNumber } from '../context.js';
import { describeEvent } from '../format.js';
import { terminalSafe } from '../terminal-text.js';

export function tailCommand(program: Command): void {
  program
    .command('tail')
    .description("Follow a session's events live. Reconnects by itself after a dropped connection (Last-Event-ID), without gaps or repeats. Ctrl-C stops (exit 0).")
    .argument('<session_id>')
    .option('--json', 'one event envelope per line (JSON Lines), for scripts')
    .option('--after <n>', 'start after this sequence number; 0 is from the first event', sequenceNumber, 0)
    .option('--deltas', "also show the model's text as it streams (providers that stream)")
    .option('--until-idle', 'exit when the session goes idle (its messages are done)')
    .action(async (sid: string, o: { json?: boolean; after: number; deltas?: boolean; untilIdle?: boolean }, cmd: Command) => {
      const ctx = context(cmd);
      const stop = new AbortController();
      process.once('SIGINT', () => stop.abort());
      process.once('SIGTERM', () => stop.abort());
      const stream = ctx.client.sessions.stream(sid, {
        after: o.after,
        deltas: o.deltas,
        signal: stop.signal,
        onReconnect: ({ attempt, lastEventId, error }) => ctx.note(`connection lost (${(error as Error)?.message ?? error}); reconnecting after ${lastEventId ?? 'the start'} (attempt ${attempt})`),
      });
      let inDelta = false;
      for await (const item of stream) {
        if (o.json) {
          ctx.out(JSON.stringify(item));
        } else if (item.type === 'assistant.delta') {
          const t = describeEvent(item);
          if (t) process.stdout.write((inDelta ? '' : '           … ') + terminalSafe(t));
          inDelta = !!t || inDelta;
        } else {
          if (inDelta) process.stdout.write('\n');
          inDelta = false;
          const line = describeEvent(item);
          if (line) ctx.out(line);
        }
        if (o.untilIdle && item.type === 'session.status_changed' && item.data.to === 'idle') break;
      }
    });
}
