import type { Command } from 'commander';
import { checkBaseUrl, configPath, resolveConfig, saveProfile } from '../config.js';
import { CliError, EXIT } from '../exit-codes.js';

export function configCommands(program: Command): void {
  program
    .command('login')
    .description(`Save a base URL and API key as a profile in ${configPath()} (mode 600).`)
    .usage('--base-url <url> --api-key <key> [--profile <name>]')
    .action(async (_o: unknown, cmd: Command) => {
      // The global --base-url, --api-key and --profile flags say what to save.
      const o = cmd.optsWithGlobals<{ baseUrl?: string; apiKey?: string; profile?: string }>();
      if (!o.baseUrl || !o.apiKey) throw new CliError('login needs --base-url and --api-key', EXIT.usage);
      checkBaseUrl(o.baseUrl, '--base-url');
      const profile = o.profile ?? 'default';
      const file = saveProfile(profile, o.baseUrl, o.apiKey);
      process.stderr.write(`saved profile ${profile} in ${file}\n`);
    });
  program
    .command('config')
    .description('Show which base URL the CLI uses and where its settings come from (never the key).')
    .action(async (_o: unknown, cmd: Command) => {
      const cfg = resolveConfig(cmd.optsWithGlobals());
      process.stdout.write(`base URL: ${cfg.baseUrl}\nkey:      ${cfg.apiKey.slice(0, 10)}…\nfrom:     ${cfg.source}\n`);
    });
}
