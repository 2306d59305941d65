import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SingleBar, Presets } from 'cli-progress';
import type { Command } from 'commander';
import { deployFolder } from '../../typescript/src/deploy.js';
import { context } from '../context.js';
import { CliError, EXIT } from '../exit-codes.js';

export function deployCommand(program: Command): void {
  program
    .command('deploy')
    .description('Pack a folder holding troupe.json, upload it as a source snapshot and create the agent (or publish a new version of the agent with that name). Prints the agent id.')
    .argument('<folder>', 'the agent folder (troupe.json at its root)')
    .option('--name <name>', "agent name (default: the manifest's name, else the folder name)")
    .option('--agent <agent_id>', 'publish a new version of this agent')
    .option('--new', 'always create a new agent')
    .option('--no-activate', 'publish the new version without making it active')
    .addHelpText('after', '\nExample:\n  AGENT=$(troupe deploy examples/weather-agent)')
    .option('--json', 'print JSON instead of text')
    .action(async (folder: string, o: { name?: string; agent?: string; new?: boolean; activate: boolean }, cmd: Command) => {
      const manifest = join(folder, 'troupe.json');
      if (!existsSync(manifest)) throw new CliError(`${folder} has no troupe.json; point deploy at an agent folder.`, EXIT.usage);
      // The folder is the argument: a manifest that is not JSON is a mistake in it (exit 2), found before anything is uploaded.
      try {
        JSON.parse(readFileSync(manifest, 'utf8'));
      } catch (err) {
        throw new CliError(`${manifest} is not valid JSON: ${(err as Error).message}`, EXIT.usage);
      }
      const ctx = context(cmd);
      // The bar only where a person watches; logs and CI get the stage lines alone.
      const bar = process.stderr.isTTY ? new SingleBar({ format: 'upload [{bar}] {percentage}% {value}/{total} bytes', hideCursor: true, stream: process.stderr }, Presets.shades_classic) : null;
      let started = false;
      let sentBytes = 0;
      const result = await deployFolder(ctx.client, folder, {
        name: o.name,
        agentId: o.agent,
        createNew: o.new,
        activate: o.activate,
        onStage: (stage, detail) => {
          if (stage === 'finalize') {
            if (bar) bar.stop();
            else ctx.note(`upload: ${sentBytes} bytes sent`);
          }
          if (stage !== 'upload') ctx.note(`${stage}${detail ? `: ${detail}` : ''}`);
        },
        onProgress: (sent, total) => {
          sentBytes = sent;
          if (!bar) return;
          if (!started) bar.start(total, 0);
          started = true;
          bar.update(sent);
        },
      });
      const what = result.created ? `created agent ${result.agent.id}` : `published version ${result.version?.number} (${result.version?.id}) of agent ${result.agent.id}${o.activate ? '' : ' (not active)'}`;
      ctx.note(`deployed ${folder}: ${what}`);
      ctx.out(ctx.json ? JSON.stringify(result) : result.agent.id);
    });
}
