import { InvalidArgumentError, Option, type Command } from 'commander';
import { isTerminal, type Message, type OnBusy } from '../../typescript/src/client.js';
import { context, pairs, positiveSeconds } from '../context.js';
import { CliError, EXIT } from '../exit-codes.js';
import { answerText } from '../format.js';

export function sendCommand(program: Command): void {
  program
    .command('send')
    .description("Send a user message to a session. Prints the message id, or with --wait the assistant's answer.")
    .argument('<session_id>')
    .argument('<text>')
    .option('--wait', 'wait until the message is completed, failed or cancelled')
    .option('--timeout <seconds>', 'how long --wait waits', positiveSeconds, 120)
    .option('--metadata <key=value>', 'message metadata (repeatable)', pairs)
    .option('--answer <tool=json>', 'with --wait: answer every external call of <tool> with this JSON result, as your service would (repeatable)', toolAnswer)
    .addOption(new Option('--on-busy <policy>', 'if a message is running: wait (enqueue, the default), refuse (reject), cancel it (interrupt), or cancel it and leave it out of the history (rollback)').choices(['enqueue', 'reject', 'interrupt', 'rollback']))
    .addHelpText('after', '\nWith --wait, a message that needs an external tool result waits for it: answer it here with --answer, or from another terminal with `troupe tool-result`.\nExample:\n  troupe send $SID "When does my plan renew?" --wait --answer service_status=\'{"status":"ok"}\'\nExit code 5 when the message failed or was cancelled, 6 when --timeout passed first.')
    .option('--json', 'print JSON instead of text')
    .action(async (sid: string, text: string, o: { wait?: boolean; timeout: number; metadata?: Record<string, string>; answer?: Map<string, unknown>; onBusy?: OnBusy }, cmd: Command) => {
      if (o.answer && !o.wait) throw new CliError('--answer needs --wait (it answers calls while the message waits)', EXIT.usage);
      const ctx = context(cmd);
      if (!o.wait) {
        const r = await ctx.client.sessions.send(sid, text, { metadata: o.metadata, onBusy: o.onBusy });
        return ctx.out(ctx.json ? JSON.stringify(r) : (r.message?.id ?? ''));
      }
      const told = new Set<string>();
      const onPoll = async (m: Message) => {
        if (m.status !== 'requires_action') return;
        for (const c of await ctx.client.sessions.pendingToolCalls(sid)) {
          if (told.has(c.tool_call_id) || c.kind === 'custom') continue;
          told.add(c.tool_call_id);
          if (c.kind === 'external' && o.answer?.has(c.tool_name)) {
            await ctx.client.sessions.submitToolResult(sid, c, o.answer.get(c.tool_name));
            ctx.note(`answered ${c.tool_name}(${JSON.stringify(c.arguments)}) (${c.tool_call_id}) with --answer`);
            continue;
          }
          ctx.note(`waiting for a result of ${c.tool_name}(${JSON.stringify(c.arguments)}); answer it with:\n  troupe tool-result ${sid} ${c.tool_call_id} --json '{…}'\n(or next time: troupe send … --wait --answer ${c.tool_name}='{…}')`);
        }
      };
      // Send, then poll here rather than hold the server's sync wait: a message waiting on a tool says so at once.
      const sent = await ctx.client.sessions.send(sid, text, { metadata: o.metadata, onBusy: o.onBusy });
      const m = await ctx.client.sessions.waitForMessage(sid, sent.message!.id, { timeoutMs: o.timeout * 1000, pollMs: 300, onPoll });
      if (ctx.json) ctx.out(JSON.stringify(m));
      else if (m.status === 'completed') ctx.out(answerText(m.output.parts));
      if (!isTerminal(m.status)) throw new CliError(`message ${m.id} is still ${m.status} after ${o.timeout} s; follow it with: troupe tail ${sid}`, EXIT.timeout);
      if (m.status !== 'completed') throw new CliError(`message ${m.id} ${m.status}${m.error ? `: ${m.error}` : ''}`, EXIT.failed);
    });
}

/** `tool=json` (repeatable) as a map from tool name to its result; JSON that does not parse is a usage error here, not at the server. */
function toolAnswer(value: string, previous: Map<string, unknown> = new Map()): Map<string, unknown> {
  const eq = value.indexOf('=');
  if (eq < 1) throw new InvalidArgumentError(`expected tool=json, got "${value}"`);
  try {
    return new Map(previous).set(value.slice(0, eq), JSON.parse(value.slice(eq + 1)));
  } catch (err) {
    throw new InvalidArgumentError(`the result of ${value.slice(0, eq)} is not valid JSON: ${(err as Error).message}`);
  }
}
