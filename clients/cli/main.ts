#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { batchCommands } from './commands/batch.js';
import { deployCommand } from './commands/deploy.js';
import { configCommands } from './commands/login.js';
import { sendCommand } from './commands/send.js';
import { scheduleCommands } from './commands/schedules.js';
import { sessionCommands } from './commands/sessions.js';
import { tailCommand } from './commands/tail.js';
import { toolResultCommand } from './commands/tool-result.js';
import { approvalCommands } from './commands/approve.js';
import { describeError, EXIT, EXIT_HELP, exitCodeOf } from './exit-codes.js';

/**
 * `troupe`: the command line for the Troupe API, built on the TypeScript
 * client. `troupe serve <roles…>` runs the service itself (what the Procfile
 * runs as `node dist/src/main.js <role>`).
 */
export function buildProgram(): Command {
  const program = new Command('troupe')
    .description('Deploy agents and talk to them through the Troupe API.')
    .option('--base-url <url>', 'API base URL (default: $TROUPE_BASE_URL, the profile, or a local `npm start`)')
    .option('--api-key <key>', 'API key (default: $TROUPE_API_KEY, the profile, or the dev keys of a local `npm start`)')
    .option('--profile <name>', `profile of the config file (default: $TROUPE_PROFILE or "default")`)
    .showHelpAfterError('(run with --help for usage)')
    .addHelpText('after', `\nConfiguration: flags, then TROUPE_BASE_URL / TROUPE_API_KEY, then the profile file, then the dev keys of a local \`npm start\` ($TROUPE_DATA_DIR/dev-keys.json when TROUPE_DATA_DIR is set, else .data/dev-keys.json in this checkout).\nResults go to stdout, progress and advice to stderr.\n\n${EXIT_HELP}`)
    .exitOverride();
  deployCommand(program);
  sessionCommands(program);
  sendCommand(program);
  tailCommand(program);
  toolResultCommand(program);
  approvalCommands(program);
  batchCommands(program);
  scheduleCommands(program);
  configCommands(program);
  program
    .command('serve')
    .description('Run Troupe service roles in this process: web, router, worker, webhooks, or all. Configuration from the environment (README).')
    .argument('<roles...>')
    .action((roles: string[]) => {
      process.argv = [process.argv[0], 'troupe-server', ...roles];
      require('../../src/main.js');
      return new Promise(() => undefined);
    });
  for (const c of program.commands) c.exitOverride();
  return program;
}

export async function run(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and `help` exit 0; help shown because no command was given (exit 1 in commander), and everything
      // else commander refuses, is a usage error (it has printed why).
      return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    const code = exitCodeOf(err);
    process.stderr.write(`troupe: ${describeError(err)}\n`);
    if (code === EXIT.internal && err instanceof Error && process.env.TROUPE_DEBUG) process.stderr.write(`${err.stack}\n`);
    return code;
  }
}

if (require.main === module) {
  // `troupe tail … | head`: the reader has what it wanted once it closes the pipe; stop quietly, not with a stack.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
    process.exit(EXIT.ok);
  });
  void run(process.argv).then((code) => {
    process.exitCode = code;
  });
}
