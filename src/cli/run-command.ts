import { createInterface } from 'node:readline/promises';
import { ConfigError } from '../errors.js';
import { setVerbose } from '../log.js';
import { AgentSession } from '../session.js';
import type { RunEvent, RunResult } from '../types.js';
import { dotEnvFile, loadEnvironment } from './dotenv.js';
import { EXIT, exitCodeForResult } from './exit-codes.js';
import { abortOnSignals } from './interrupt.js';
import { type RunFlags, runOptionsFrom } from './run-options.js';
import { terminalSafe } from './terminal-safe.js';
import { styleFor, textRenderer } from './text-renderer.js';

export interface RunArgs extends RunFlags {
  prompt?: string[];
  outputFormat: 'text' | 'json' | 'stream-json';
  quiet: boolean;
  verbose: boolean;
}

const say = (line: string) => process.stderr.write(`${line}\n`);

let stdoutClosed = false;
/** stdout, which may be a pipe the reader closed (`| head -1`): then nothing more is written to it. */
const out = (text: string) => {
  if (!stdoutClosed) process.stdout.write(text);
};

/** `sandloop run`: one prompt (or a REPL), then the exit code. */
export async function runCommand(args: RunArgs): Promise<number> {
  setVerbose(args.verbose);
  const prompt = await promptFrom(args.prompt ?? []);
  const controller = new AbortController();
  const stopListening = abortOnSignals(controller, say);
  // A closed stdout (EPIPE) ends the run like Ctrl-C, so cleanup still happens.
  const onStdoutError = () => {
    stdoutClosed = true;
    controller.abort();
  };
  process.stdout.on('error', onStdoutError);
  try {
    const session = await AgentSession.open({
      ...runOptionsFrom(args),
      environment: loadEnvironment(),
      secretFiles: [dotEnvFile()],
      signal: controller.signal,
      onEvent: eventSink(args),
      onProgress: args.quiet && !args.verbose ? () => {} : (line) => say(terminalSafe(line)),
    });
    try {
      if (prompt === undefined) {
        const code = await repl(session, controller.signal);
        const workspace = await session.finish();
        if (workspace?.apply_refused) say(`sandloop: error: ${workspace.apply_refused}`);
        return workspace?.apply_refused && code === EXIT.completed ? EXIT.failed : code;
      }
      const result = await session.run(prompt);
      const workspace = await session.finish();
      if (workspace?.apply_refused) say(`sandloop: error: ${workspace.apply_refused}`);
      const code = report(args, workspace ? { ...result, workspace } : result);
      // A refused --apply is a failure of what was asked, even when the agent completed.
      return workspace?.apply_refused && code === EXIT.completed ? EXIT.failed : code;
    } finally {
      await session.close();
    }
  } finally {
    stopListening();
    process.stdout.off('error', onStdoutError);
  }
}

/** Arguments joined as one prompt; `-` reads stdin; nothing on a TTY means a REPL (undefined). */
async function promptFrom(words: string[]): Promise<string | undefined> {
  if (words.length === 1 && words[0] === '-') {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8').trim();
    if (!text) throw new ConfigError('the prompt read from stdin is empty');
    return text;
  }
  const text = words.join(' ').trim();
  if (text) return text;
  if (process.stdin.isTTY) return undefined;
  throw new ConfigError('no prompt: pass it as arguments, or - to read it from stdin');
}

function eventSink(args: RunArgs): (event: RunEvent) => void {
  if (args.outputFormat === 'stream-json') return (event) => out(`${JSON.stringify(event)}\n`);
  if (args.outputFormat === 'json' || args.quiet) return () => {};
  return textRenderer(say, styleFor(process.stderr));
}

function report(args: RunArgs, result: RunResult): number {
  const { messages: _history, ...summary } = result;
  if (args.outputFormat === 'json') out(`${JSON.stringify(summary)}\n`);
  if (args.outputFormat === 'text' && result.result) {
    const answer = process.stdout.isTTY ? terminalSafe(result.result) : result.result;
    out(answer.endsWith('\n') ? answer : `${answer}\n`);
  }
  return exitCodeForResult(result);
}

/** The seed's interactive loop: history carries over between prompts; `exit`, `q` or Ctrl-D ends it. */
async function repl(session: AgentSession, signal: AbortSignal): Promise<number> {
  const rl = createInterface({ input: process.stdin, output: process.stderr, prompt: 'sandloop >> ' });
  // In raw mode Ctrl-C reaches readline, not the process: hand it to the signal handler.
  rl.on('SIGINT', () => process.kill(process.pid, 'SIGINT'));
  signal.addEventListener('abort', () => rl.close(), { once: true });
  try {
    rl.prompt();
    // The async iterator buffers lines typed (or piped) while a prompt runs.
    for await (const line of rl) {
      const prompt = line.trim();
      if (['exit', 'q', 'quit'].includes(prompt.toLowerCase())) break;
      if (prompt !== '') {
        const result = await session.run(prompt);
        if (result.result) out(`${terminalSafe(result.result)}\n`);
        if (result.status === 'aborted') return EXIT.aborted;
      }
      rl.prompt();
    }
    return signal.aborted ? EXIT.aborted : EXIT.completed;
  } finally {
    rl.close();
  }
}
