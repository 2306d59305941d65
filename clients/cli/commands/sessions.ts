import type { Command } from 'commander';
import type { TroupeClient } from '../../typescript/src/client.js';
import { context, pageLimit, pairs } from '../context.js';
import { table } from '../format.js';

export function sessionCommands(program: Command): void {
  const sessions = program.command('sessions').description('Create, list and read sessions.');
  sessions
    .command('list')
    .description('List sessions, newest first.')
    .option('--metadata <key=value>', 'only sessions whose metadata has this value (repeatable; all must match)', pairs)
    .option('--limit <n>', 'at most this many (1-100)', pageLimit, 20)
    .option('--after <cursor>', "the previous page's next_cursor")
    .option('--json', 'print JSON instead of text')
    .action(async (o: { metadata?: Record<string, string>; limit: number; after?: string }, cmd: Command) => {
      const ctx = context(cmd);
      const page = await filledPage(ctx.client, o);
      if (ctx.json) return ctx.out(JSON.stringify(page));
      if (!page.sessions.length) return ctx.note('no sessions');
      const rows = page.sessions.map((s) => [s.id, s.agent_id, s.status, s.last_message_status ?? '-', s.created_at, Object.entries(s.metadata).map(([k, v]) => `${k}=${v}`).join(',')]);
      ctx.out(table([['SESSION', 'AGENT', 'STATUS', 'LAST MESSAGE', 'CREATED', 'METADATA'], ...rows]));
      if (page.has_more) ctx.note(`more: troupe sessions list --after ${page.next_cursor}`);
    });
  sessions
    .command('create')
    .description('Open a session on an agent. Prints the session id.')
    .argument('<agent_id>')
    .option('--metadata <key=value>', 'session metadata (repeatable)', pairs)
    .option('--llm <llm_id>', "one of the manifest's llm_options (default: the first)")
    .option('--name <name>', 'a name for the session')
    .addHelpText('after', '\nExample:\n  SID=$(troupe sessions create $AGENT --metadata user=ada)')
    .option('--json', 'print JSON instead of text')
    .action(async (agentId: string, o: { metadata?: Record<string, string>; llm?: string; name?: string }, cmd: Command) => {
      const ctx = context(cmd);
      const s = await ctx.client.sessions.create(agentId, { metadata: o.metadata, llm_id: o.llm, name: o.name });
      ctx.out(ctx.json ? JSON.stringify(s) : s.id);
    });
  sessions
    .command('show')
    .description("Print a session's transcript (with --json, the session record).")
    .argument('<session_id>')
    .option('--json', 'print JSON instead of text')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const ctx = context(cmd);
      if (ctx.json) return ctx.out(JSON.stringify(await ctx.client.sessions.get(id)));
      ctx.out((await ctx.client.sessions.transcriptText(id)).trimEnd());
    });

  program
    .command('tool-calls')
    .description('List the tool calls a session waits on (answer them with tool-result, or approve / deny when KIND says confirm).')
    .argument('<session_id>')
    .option('--json', 'print JSON instead of text')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const ctx = context(cmd);
      const calls = await ctx.client.sessions.pendingToolCalls(id);
      if (ctx.json) return ctx.out(JSON.stringify(calls));
      if (!calls.length) return ctx.note('no pending tool calls');
      ctx.out(table([['CALL', 'TOOL', 'KIND', 'ARGUMENTS'], ...calls.map((c) => [c.tool_call_id, c.tool_name, `${c.kind ?? '-'}${c.awaiting_confirmation ? ' (confirm)' : ''}`, JSON.stringify(c.arguments)])]));
    });
}

/**
 * Up to `limit` sessions from `after` on. A metadata-filtered page of the API looks at 1,000 sessions at most, so
 * it can come back short, even empty, with has_more: the next pages are read, each for what is still missing, until
 * the page is full or the list ends. "no sessions" then means none match, and next_cursor goes on where it stopped.
 */
async function filledPage(client: TroupeClient, o: { metadata?: Record<string, string>; limit: number; after?: string }) {
  let page = await client.sessions.list({ metadata: o.metadata, limit: o.limit, after: o.after });
  const sessions = [...page.sessions];
  while (page.has_more && page.next_cursor && sessions.length < o.limit) {
    page = await client.sessions.list({ metadata: o.metadata, limit: o.limit - sessions.length, after: page.next_cursor });
    sessions.push(...page.sessions);
  }
  return { ...page, sessions };
}
