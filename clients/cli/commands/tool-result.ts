import type { Command } from 'commander';
import { context } from '../context.js';
import { CliError, EXIT } from '../exit-codes.js';

export function toolResultCommand(program: Command): void {
  program
    .command('tool-result')
    .description('Submit the result of an external tool call the session waits on.')
    .argument('<session_id>')
    .argument('<tool_call_id>', 'from `troupe tool-calls`, `troupe tail`, or the webhook')
    .requiredOption('--json <result>', 'the result, as JSON')
    .option('--error', 'report the call as failed; the JSON is the error detail')
    .addHelpText('after', `\nExample:\n  troupe tool-result $SID call_0_0 --json '{"city":"Oslo","summary":"sunny","high_c":20,"low_c":9}'`)
    .action(async (sid: string, callId: string, o: { json: string; error?: boolean }, cmd: Command) => {
      let result: unknown;
      try {
        result = JSON.parse(o.json);
      } catch (err) {
        throw new CliError(`--json is not valid JSON: ${(err as Error).message}`, EXIT.usage);
      }
      const ctx = context(cmd);
      const call = (await ctx.client.sessions.pendingToolCalls(sid)).find((c) => c.tool_call_id === callId);
      if (!call) throw new CliError(`session ${sid} is not waiting on tool call ${callId} (see: troupe tool-calls ${sid})`, EXIT.refused);
      const r = await ctx.client.sessions.submitToolResult(sid, call, result, { isError: o.error });
      if (ctx.json) return ctx.out(JSON.stringify(r));
      ctx.note(`submitted the result of ${call.tool_name} (${callId})`);
    });
}
