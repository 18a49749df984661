#!/usr/bin/env node
import { hideBin } from 'yargs/helpers';
import { errorMessage } from '../errors.js';
import { exitCodeForError } from './exit-codes.js';
import { buildParser } from './parser.js';

/** Run the CLI and return its exit code. Errors become one line on stderr. */
export async function main(argv: string[]): Promise<number> {
  const outcome = { exitCode: 0 };
  try {
    await buildParser(argv, outcome).parseAsync();
    return outcome.exitCode;
  } catch (err) {
    process.stderr.write(`sandloop: error: ${errorMessage(err).split('\n')[0]}\n`);
    return exitCodeForError(err);
  }
}

// A reader that went away (`| head -1`) must not crash us: the run command turns it into an abort.
process.stdout.on('error', () => {});
const code = await main(hideBin(process.argv));
// Exit once stdout has drained; idle Docker and HTTP sockets must not keep us alive.
if (process.stdout.destroyed || !process.stdout.writable) process.exit(code);
else process.stdout.write('', () => process.exit(code));
