import type { Command } from 'commander';
import { context } from '../context.js';
import { CliError, EXIT } from '../exit-codes.js';

/**
 * `troupe approve` and `troupe deny`: the answer to a `tool.confirmation_requested` (docs/approvals.md). The call
 * is found among the running message's pending tool calls, which gives its message id; the API refuses (exit 3)
 * a call that does not wait for a confirmation, so a second answer fails as it does over HTTP.
 */
export function approvalCommands(program: Command): void {
  const answer = async (cmd: Command, sid: string, callId: string, result: 'allow' | 'deny', denyMessage?: string) => {
    const ctx = context(cmd);
    const call = (await ctx.client.sessions.pendingToolCalls(sid)).find((c) => c.tool_call_id === callId);
    if (!call) throw new CliError(`session ${sid} has no pending tool call ${callId} (see: troupe tool-calls ${sid})`, EXIT.refused);
    const r = await ctx.client.sessions.confirmTool(sid, call, result, { denyMessage });
    if (ctx.json) return ctx.out(JSON.stringify(r));
    ctx.note(`${result === 'allow' ? 'allowed' : 'denied'} ${call.tool_name} (${callId})`);
  };
  program
    .command('approve')
    .description('Allow a tool call that waits for confirmation (a tool with permission always_ask): it runs.')
    .argument('<session_id>')
    .argument('<tool_call_id>', 'from `troupe tail`, `troupe tool-calls`, or the tool.confirmation_requested webhook')
    .action((sid: string, callId: string, _o: unknown, cmd: Command) => answer(cmd, sid, callId, 'allow'));
  program
    .command('deny')
    .description('Deny a tool call that waits for confirmation: it never runs, and the model gets an error result.')
    .argument('<session_id>')
    .argument('<tool_call_id>')
    .option('--message <text>', 'what the model is told (default: "The user denied this tool call.")')
    .action((sid: string, callId: string, o: { message?: string }, cmd: Command) => answer(cmd, sid, callId, 'deny', o.message));
}
