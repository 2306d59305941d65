import type { Command } from 'commander';
import { context, positiveSeconds } from '../context.js';
import { CliError, EXIT } from '../exit-codes.js';
import type { TroupeClient } from '../../typescript/src/client.js';

export function toolResultCommand(program: Command): void {
  program
    .command('tool-result')
    .description('Submit the result of an external tool call the session waits on.')
    .argument('<session_id>')
    .argument('<tool_call_id>', 'from `troupe tool-calls`, `troupe tail`, or the webhook')
    .requiredOption('--json <result>', 'the result, as JSON')
    .option('--error', 'report the call as failed; the JSON is the error detail')
    .option('--timeout <seconds>', 'wait this long for the call to be requested, if it is not yet', positiveSeconds, 30)
    .addHelpText('after', `\nExample:\n  troupe tool-result $SID call_0_0 --json '{"city":"Oslo","summary":"sunny","high_c":20,"low_c":9}'`)
    .action(async (sid: string, callId: string, o: { json: string; error?: boolean; timeout: number }, cmd: Command) => {
      let result: unknown;
      try {
        result = JSON.parse(o.json);
      } catch (err) {
        throw new CliError(`--json is not valid JSON: ${(err as Error).message}`, EXIT.usage);
      }
      const ctx = context(cmd);
      // The agent may not have asked yet (the model is still answering): wait for the call, within the timeout.
      // A call it asked for and that is no longer pending will not come back: say what became of it at once.
      const deadline = Date.now() + o.timeout * 1000;
      const history = new CallHistory(ctx.client, sid, callId);
      let call = (await ctx.client.sessions.pendingToolCalls(sid)).find((c) => c.tool_call_id === callId);
      while (!call) {
        const ended = await history.ended();
        if (ended) throw new CliError(ended, EXIT.refused);
        if (Date.now() >= deadline) break;
        await new Promise((r) => setTimeout(r, 250));
        call = (await ctx.client.sessions.pendingToolCalls(sid)).find((c) => c.tool_call_id === callId);
      }
      if (!call) throw new CliError(`session ${sid} did not ask for tool call ${callId} within ${o.timeout} s (see: troupe tool-calls ${sid})`, EXIT.refused);
      const r = await ctx.client.sessions.submitToolResult(sid, call, result, { isError: o.error });
      if (ctx.json) return ctx.out(JSON.stringify(r));
      ctx.note(`submitted the result of ${call.tool_name} (${callId})`);
    });
}

/**
 * What the ledger says became of a tool call id, read incrementally (each
 * poll reads only the events since the last). Ids are only unique within a
 * message (scripted models number them call_<turn>_<n>), so only the latest
 * request counts, and only if it belongs to the session's last message: a
 * newer message may still ask for the same id.
 */
class CallHistory {
  private after: string | undefined;
  private latest: { messageId: string; fate: string | null } | null = null;

  constructor(
    private readonly client: TroupeClient,
    private readonly sid: string,
    private readonly callId: string,
  ) {}

  /** A sentence saying how the call ended, or null while it was never asked for or may still be. */
  async ended(): Promise<string | null> {
    for (let more = true; more; ) {
      const page = await this.client.sessions.events(this.sid, { limit: 100, after: this.after });
      for (const ev of page.events) this.read(ev);
      more = page.has_more && page.events.length > 0;
    }
    if (!this.latest?.fate) return null;
    const session = await this.client.sessions.get(this.sid);
    return session.last_message_id === this.latest.messageId ? this.latest.fate : null;
  }

  private read(ev: { type: string; sequence_number: number; data: unknown }): void {
    this.after = String(ev.sequence_number);
    const d = ev.data as { tool_call_id?: string; message_id?: string; reason?: string; error?: string; is_error?: boolean };
    if (d?.tool_call_id !== this.callId) return;
    const what = `tool call ${this.callId} of session ${this.sid} (message ${d.message_id})`;
    if (ev.type === 'tool.call_requested') this.latest = { messageId: String(d.message_id), fate: null };
    else if (!this.latest || this.latest.messageId !== d.message_id || this.latest.fate) return;
    else if (ev.type === 'tool.result_submitted') this.latest.fate = `${what} was already answered${d.is_error ? ' (as an error)' : ''}; it is no longer pending`;
    else if (ev.type === 'tool.call_failed') this.latest.fate = `${what} is no longer pending: ${FAILED[d.reason ?? ''] ?? `it failed (${d.reason})`}${d.error ? `: ${d.error}` : ''}`;
  }
}

const FAILED: Record<string, string> = {
  timeout: 'it expired (no result within its timeout)',
  cancelled: 'it was cancelled',
  error: 'it failed',
  unknown_tool: 'the agent has no such tool',
  denied: 'its confirmation was denied',
};
