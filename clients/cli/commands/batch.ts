import { readFileSync } from 'node:fs';
import { Presets, SingleBar } from 'cli-progress';
import type { Command } from 'commander';
import type { BatchItem, BatchProgress } from '../../typescript/src/client.js';
import { context, positiveSeconds } from '../context.js';
import { CliError, EXIT } from '../exit-codes.js';

function readLines(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (err as Error).message;
    throw new CliError(`cannot read ${file}: ${why}`, EXIT.usage);
  }
}

/** items.jsonl: one batch item per line (the API's item shape); `--agent` fills agent_id, a bare {"text"} becomes the message. */
export function readItems(file: string, agentId: string | undefined): BatchItem[] {
  const lines = readLines(file);
  const items: BatchItem[] = [];
  lines.forEach((line, i) => {
    if (!line.trim()) return;
    let item: Record<string, unknown>;
    try {
      item = JSON.parse(line) as Record<string, unknown>;
    } catch (err) {
      throw new CliError(`${file}:${i + 1} is not JSON: ${(err as Error).message}`, EXIT.usage);
    }
    if (!item || typeof item !== 'object' || Array.isArray(item)) throw new CliError(`${file}:${i + 1} is not a JSON object`, EXIT.usage);
    if (typeof item.text === 'string' && !item.message) {
      item.message = { content: [{ type: 'text', text: item.text }] };
      delete item.text;
    }
    item.agent_id ??= agentId;
    if (!item.agent_id) throw new CliError(`${file}:${i + 1} has no agent_id; add one or pass --agent`, EXIT.usage);
    items.push(item as unknown as BatchItem);
  });
  if (!items.length) throw new CliError(`${file} has no items`, EXIT.usage);
  return items;
}

function summary(b: BatchProgress): string {
  const c = b.counts;
  return `batch ${b.batch_id} ${b.status}: ${c.completed} completed, ${c.failed} failed, ${c.running} running, ${c.queued} queued`;
}

export function batchCommands(program: Command): void {
  const batch = program.command('batch').description('Start many sessions at once.');
  batch
    .command('create')
    .description('Create a session batch from a JSON Lines file and show progress until it is terminal. Prints the batch id.')
    .requiredOption('--file <items.jsonl>', 'one item per line: {"agent_id","message":{"content":[…]},"metadata"?,…} or {"text":"…"} with --agent')
    .option('--agent <agent_id>', 'agent of items that name none')
    .option('--idempotency-key <key>', 'a retry with the same key returns the same batch')
    .option('--no-wait', 'print the batch id and return at once')
    .option('--timeout <seconds>', 'how long to wait for the batch', positiveSeconds, 600)
    .option('--json', 'print the final batch as JSON')
    .addHelpText('after', '\nExit code 5 when the batch ends failed or partial_failed, 6 when --timeout passes first.')
    .action(async (o: { file: string; agent?: string; idempotencyKey?: string; wait: boolean; timeout: number }, cmd: Command) => {
      const items = readItems(o.file, o.agent);
      const ctx = context(cmd);
      const created = await ctx.client.batches.create(items, { idempotencyKey: o.idempotencyKey });
      ctx.note(`batch ${created.batch_id}: ${items.length} items, ${created.status}`);
      if (!o.wait) return ctx.out(ctx.json ? JSON.stringify(created) : created.batch_id);
      const bar = process.stderr.isTTY ? new SingleBar({ format: 'sessions [{bar}] {value}/{total} done ({failed} failed)', hideCursor: true, stream: process.stderr }, Presets.shades_classic) : null;
      bar?.start(items.length, 0, { failed: 0 });
      let last = '';
      const final = await ctx.client.batches.wait(created.batch_id, {
        timeoutMs: o.timeout * 1000,
        onProgress: (b) => {
          bar?.update(b.counts.completed + b.counts.failed, { failed: b.counts.failed });
          const line = summary(b);
          if (!bar && line !== last) ctx.note(line);
          last = line;
        },
      });
      bar?.stop();
      ctx.out(ctx.json ? JSON.stringify(final) : created.batch_id);
      if (bar) ctx.note(summary(final));
      if (!['completed', 'failed', 'partial_failed'].includes(final.status)) throw new CliError(`batch ${final.batch_id} is still ${final.status} after ${o.timeout} s`, EXIT.timeout);
      if (final.status !== 'completed') throw new CliError(summary(final), EXIT.failed);
    });
  batch
    .command('show')
    .description('Print a batch: status, counts and sessions.')
    .argument('<batch_id>')
    .option('--counts', 'status and counts only, without the sessions (a small read for a large batch)')
    .action(async (id: string, o: { counts?: boolean }, cmd: Command) => {
      const ctx = context(cmd);
      ctx.out(JSON.stringify(o.counts ? await ctx.client.batches.progress(id) : await ctx.client.batches.get(id), null, 2));
    });
}
