import type { Command } from 'commander';
import type { Schedule } from '../../typescript/src/client.js';
import { context, pageLimit, pairs } from '../context.js';
import { table } from '../format.js';

function state(s: Schedule): string {
  return s.paused_reason === 'agent_deleted' ? 'agent deleted' : s.paused ? 'paused' : 'active';
}

function scheduleRows(list: Schedule[]): string[][] {
  return [['SCHEDULE', 'NAME', 'CRON', 'TIMEZONE', 'STATE', 'NEXT RUN'], ...list.map((s) => [s.id, s.name ?? '-', s.cron, s.timezone, state(s), s.next_run_at ?? '-'])];
}

/** `troupe schedules …`: cron schedules of an agent (docs/schedules.md). Results to stdout, advice to stderr. */
export function scheduleCommands(program: Command): void {
  const schedules = program.command('schedules').description('Run an agent on a cron: each tick opens a session and sends it a message.');
  schedules
    .command('list')
    .description("List an agent's schedules, oldest first.")
    .argument('<agent_id>')
    .option('--limit <n>', 'at most this many (1-100)', pageLimit, 20)
    .option('--after <cursor>', "the previous page's next_cursor")
    .option('--json', 'print JSON instead of text')
    .action(async (agentId: string, o: { limit: number; after?: string }, cmd: Command) => {
      const ctx = context(cmd);
      const page = await ctx.client.schedules.list(agentId, { limit: o.limit, after: o.after });
      if (ctx.json) return ctx.out(JSON.stringify(page));
      if (!page.schedules.length) return ctx.note('no schedules');
      ctx.out(table(scheduleRows(page.schedules)));
      if (page.has_more) ctx.note(`more: troupe schedules list ${agentId} --after ${page.next_cursor}`);
    });
  schedules
    .command('create')
    .description('Create a schedule on an agent. Prints the schedule id.')
    .argument('<agent_id>')
    .requiredOption('--cron <expression>', '5 fields (minute hour day month weekday), or 6 with seconds first')
    .requiredOption('--message <text>', 'the text each tick sends')
    .option('--timezone <zone>', 'an IANA time zone (default UTC)')
    .option('--name <name>', 'a name for the schedule')
    .option('--metadata <key=value>', 'metadata of the sessions it opens (repeatable)', pairs)
    .option('--paused', 'create it paused')
    .option('--json', 'print JSON instead of text')
    .addHelpText('after', "\nExample:\n  troupe schedules create $AGENT --cron '0 9 * * 1-5' --timezone Europe/Paris --message 'Morning report'")
    .action(async (agentId: string, o: { cron: string; message: string; timezone?: string; name?: string; metadata?: Record<string, string>; paused?: boolean }, cmd: Command) => {
      const ctx = context(cmd);
      const s = await ctx.client.schedules.create(agentId, {
        cron: o.cron,
        timezone: o.timezone,
        name: o.name,
        message: { content: [{ type: 'text', text: o.message }] },
        session: o.metadata ? { metadata: o.metadata } : undefined,
        paused: o.paused,
      });
      ctx.out(ctx.json ? JSON.stringify(s) : s.id);
    });
  schedules
    .command('get')
    .description('Show a schedule.')
    .argument('<schedule_id>')
    .option('--json', 'print JSON instead of text')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const ctx = context(cmd);
      const s = await ctx.client.schedules.get(id);
      ctx.out(ctx.json ? JSON.stringify(s) : table(scheduleRows([s])));
    });
  for (const [name, verb] of [['pause', 'Pause'], ['resume', 'Resume']] as const) {
    schedules
      .command(name)
      .description(`${verb} a schedule${name === 'resume' ? ' (ticks missed while paused are not run)' : ''}.`)
      .argument('<schedule_id>')
      .option('--json', 'print JSON instead of text')
      .action(async (id: string, _o: unknown, cmd: Command) => {
        const ctx = context(cmd);
        const s = await ctx.client.schedules[name](id);
        ctx.out(ctx.json ? JSON.stringify(s) : `${s.id} ${state(s)}`);
      });
  }
  schedules
    .command('delete')
    .description('Delete a schedule and its run records; the sessions it opened stay.')
    .argument('<schedule_id>')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const ctx = context(cmd);
      await ctx.client.schedules.delete(id);
      ctx.note(`deleted ${id}`);
    });
  schedules
    .command('runs')
    .description("List a schedule's ticks, newest first.")
    .argument('<schedule_id>')
    .option('--limit <n>', 'at most this many (1-100)', pageLimit, 20)
    .option('--after <cursor>', "the previous page's next_cursor")
    .option('--json', 'print JSON instead of text')
    .action(async (id: string, o: { limit: number; after?: string }, cmd: Command) => {
      const ctx = context(cmd);
      const page = await ctx.client.schedules.runs(id, { limit: o.limit, after: o.after });
      if (ctx.json) return ctx.out(JSON.stringify(page));
      if (!page.runs.length) return ctx.note('no runs');
      ctx.out(table([['SCHEDULED FOR', 'STATUS', 'SESSION', 'MESSAGE', 'ERROR'], ...page.runs.map((r) => [r.scheduled_for, r.status, r.session_id, r.message_id, r.error ?? '-'])]));
      if (page.has_more) ctx.note(`more: troupe schedules runs ${id} --after ${page.next_cursor}`);
    });
}
