import type { Command } from 'commander';
import type { TroupeClient } from '../../typescript/src/client.js';
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
    .option('--until-idle', 'exit when the session goes idle after its latest message (not at the idle that ended an earlier one)')
    .action(async (sid: string, o: { json?: boolean; after: number; deltas?: boolean; untilIdle?: boolean }, cmd: Command) => {
      const ctx = context(cmd);
      const stop = new AbortController();
      process.once('SIGINT', () => stop.abort());
      process.once('SIGTERM', () => stop.abort());
      const idle = o.untilIdle ? await LatestIdle.of(ctx.client, sid) : null;
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
        if (idle && item.type === 'session.status_changed' && item.data.to === 'idle' && (await idle.isLatest(item.sequence_number))) break;
      }
    });
}

/**
 * Tells the idle that ends a session's latest message from the idles before it: the stream replays the ledger
 * from the start, where every earlier message ended in an idle too. An idle is the latest when the session's
 * newest message (its last_message_id) was sent before it; the newest one is read again only at an idle past
 * the newest known, so a replay costs a read or two, not one per message.
 */
class LatestIdle {
  private constructor(
    private readonly client: TroupeClient,
    private readonly sid: string,
    private newest: number,
  ) {}

  static async of(client: TroupeClient, sid: string): Promise<LatestIdle> {
    return new LatestIdle(client, sid, await newestMessageSequence(client, sid));
  }

  async isLatest(sequence: number): Promise<boolean> {
    if (sequence < this.newest) return false;
    this.newest = await newestMessageSequence(this.client, this.sid);
    return this.newest < sequence;
  }
}

/** The ledger sequence of the session's newest user message, 0 when it has none. */
async function newestMessageSequence(client: TroupeClient, sid: string): Promise<number> {
  const { last_message_id: id } = await client.sessions.get(sid);
  return id ? (await client.sessions.message(sid, id)).sequence_number : 0;
}
