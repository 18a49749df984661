import yargs from 'yargs';
import { ConfigError } from '../errors.js';
import type { BatchArgs } from './batch-command.js';
import type { RunArgs } from './run-command.js';
import { withAgentFlags, withRunFlags } from './run-options.js';

export interface CliOutcome {
  exitCode: number;
}

/**
 * The yargs parser, built fresh per call so tests can drive it. Handlers
 * store their exit code in `outcome`; parse failures throw ConfigError.
 */
export function buildParser(argv: string[], outcome: CliOutcome) {
  return yargs(argv)
    .scriptName('sandloop')
    // --no-warm is a flag of its own, not the negation of a --warm.
    .parserConfiguration({ 'boolean-negation': false })
    .usage('$0 <command> [options]\n\nRun an LLM agent loop on the host; every bash call runs in a throwaway Docker container.')
    .command(
      'run [prompt..]',
      'Run the agent on a prompt (arguments, - for stdin, or none on a TTY for a REPL)',
      (y) => withRunFlags(y).positional('prompt', { type: 'string', array: true, describe: 'The prompt' }),
      async (args) => {
        // yargs drops a lone '-' positional, so look for it in the raw arguments.
        const words = (args.prompt as string[] | undefined) ?? [];
        const prompt = words.length === 0 && argv.includes('-') ? ['-'] : words;
        const { runCommand } = await import('./run-command.js');
        outcome.exitCode = await runCommand({ ...(args as unknown as RunArgs), prompt });
      },
    )
    .command(
      'demo',
      "Play the seed's example prompts with a scripted model in real containers (no API key)",
      (y) =>
        y
          .option('task-dir', { type: 'string', describe: 'Workspace for the demo', defaultDescription: 'a new temporary directory' })
          .option('image', { type: 'string', describe: 'Sandbox image', defaultDescription: 'sandloop-sandbox:latest' })
          .option('verbose', { alias: 'v', type: 'boolean', default: false, describe: 'Log every Docker step to stderr' }),
      async (args) => {
        const { demoCommand } = await import('./demo-command.js');
        outcome.exitCode = await demoCommand(args);
      },
    )
    .command('image', 'Manage the sandbox image', (y) =>
      y
        .command(
          'build',
          'Build the sandbox image from sandbox.Dockerfile (bootstraps the Debian base offline when it cannot be pulled)',
          (b) =>
            b
              .option('image', { type: 'string', describe: 'Tag to build', default: 'sandloop-sandbox:latest' })
              .option('offline', { type: 'boolean', default: false, describe: 'Do not pull: bootstrap the base with debootstrap from the host\'s apt mirror' })
              .option('mirror', { type: 'string', describe: 'Debian mirror for the offline bootstrap', defaultDescription: "the host's apt mirror" })
              .option('quiet', { alias: 'q', type: 'boolean', default: false, describe: 'No progress output' })
              .option('verbose', { alias: 'v', type: 'boolean', default: false, describe: 'Log every Docker step' }),
          async (args) => {
            const { imageBuildCommand } = await import('./image-command.js');
            outcome.exitCode = await imageBuildCommand(args);
          },
        )
        .demandCommand(1, 'name an image command: build'),
    )
    .command(
      'batch [inputs..]',
      'Evaluate prompt files (files, folders or globs): each case in a fresh workspace, with checks, live progress, JSONL and JUnit',
      (y) =>
        withAgentFlags(y)
          .positional('inputs', { type: 'string', array: true, describe: 'Prompt files, folders or globs' })
          .option('concurrency', { alias: 'j', requiresArg: true, default: 4, describe: 'Most cases at once' })
          .option('out', { type: 'string', describe: 'Results directory', defaultDescription: 'sandloop-results/<timestamp>' })
          .option('filter', { type: 'string', describe: 'Only cases whose name contains this or that carry it as a tag' })
          .option('repeat', { requiresArg: true, describe: 'Attempts of each case that sets no repeat: (pass@k, pass^k)', defaultDescription: '1' })
          .option('resume', { type: 'string', describe: 'Continue the results dir DIR: skip finished cases, rerun errored and interrupted ones' })
          .option('max-cost-usd', { requiresArg: true, describe: 'Start no new case once the estimated spend reaches this' })
          .option('prices', { type: 'string', describe: 'JSON price table (USD per million tokens) merged over the built-in one' })
          .option('junit', { type: 'string', describe: 'Write JUnit XML to FILE' })
          .option('mount', { choices: ['copy', 'rw'] as const, describe: "How a case's fresh workspace reaches /workspace: copy (a volume) or rw (a bind mount of a host copy)", defaultDescription: 'copy' }),
      async (args) => {
        const { batchCommand } = await import('./batch-command.js');
        outcome.exitCode = await batchCommand({ ...(args as unknown as BatchArgs), inputs: (args.inputs as string[] | undefined) ?? [] });
      },
    )
    .command('cassette', 'Work with recorded cassettes', (y) =>
      y
        .command(
          'show <file>',
          'Print a recorded episode as a readable conversation (for review in a pull request)',
          (b) => b.positional('file', { type: 'string', demandOption: true, describe: 'A cassette (.jsonl)' }),
          async (args) => {
            const { cassetteShowCommand } = await import('./cassette-command.js');
            outcome.exitCode = await cassetteShowCommand({ file: args.file as string });
          },
        )
        .demandCommand(1, 'name a cassette command: show'),
    )
    .command(
      'gc',
      'Remove containers left behind by sandloop runs that are gone (crashed or killed)',
      (y) =>
        y
          .option('dry-run', { type: 'boolean', default: false, describe: 'List what would be removed; remove nothing' })
          .option('all', { type: 'boolean', default: false, describe: 'Every sandloop container, including those of runs still going' })
          .option('verbose', { alias: 'v', type: 'boolean', default: false, describe: 'Log every Docker step' }),
      async (args) => {
        const { gcCommand } = await import('./gc-command.js');
        outcome.exitCode = await gcCommand(args);
      },
    )
    .demandCommand(1, 'name a command: run, batch, demo, cassette show, gc or image build')
    .strict()
    .help()
    .alias('h', 'help')
    .version()
    .wrap(Math.min(110, process.stdout.columns || 100))
    .showHelpOnFail(false)
    .exitProcess(false)
    .fail((message, err) => {
      throw err ?? new ConfigError(message);
    });
}
