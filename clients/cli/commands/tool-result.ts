import type { Command } from 'commander';
import { context, positiveSeconds } from '../context.js';
import { CliError, EXIT } from '../exit-codes.js';

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
      const deadline = Date.now() + o.timeout * 1000;
      let call = (await ctx.client.sessions.pendingToolCalls(sid)).find((c) => c.tool_call_id === callId);
      while (!call && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 250));
        call = (await ctx.client.sessions.pendingToolCalls(sid)).find((c) => c.tool_call_id === callId);
      }
      if (!call) throw new CliError(`session ${sid} did not ask for tool call ${callId} within ${o.timeout} s (see: troupe tool-calls ${sid})`, EXIT.refused);
      const r = await ctx.client.sessions.submitToolResult(sid, call, result, { isError: o.error });
      if (ctx.json) return ctx.out(JSON.stringify(r));
      ctx.note(`submitted the result of ${call.tool_name} (${callId})`);
    });
}
