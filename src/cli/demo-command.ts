import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setVerbose } from '../log.js';
import { AgentSession } from '../session.js';
import { loadEnvironment } from './dotenv.js';
import { EXIT, exitCodeForResult } from './exit-codes.js';
import { abortOnSignals } from './interrupt.js';
import { terminalSafe } from './terminal-safe.js';
import { styleFor, textRenderer } from './text-renderer.js';

/** The seed's three example prompts, played by a scripted model. */
export const DEMO_PROMPTS = [
  'Create a file called hello.py that prints "Hello, World!"',
  'List all Python files in this directory',
  'What is the current git branch?',
];
export const DEMO_SCRIPT = fileURLToPath(new URL('../../examples/demo/script.json', import.meta.url));

export interface DemoArgs {
  taskDir?: string;
  image?: string;
  verbose: boolean;
}

/**
 * `sandloop demo`: the seed's prompts in one conversation, in real containers,
 * with the model's turns replayed from examples/demo/script.json (no API key).
 */
export async function demoCommand(args: DemoArgs): Promise<number> {
  setVerbose(args.verbose);
  const style = styleFor(process.stderr);
  const say = (line: string) => process.stderr.write(`${line}\n`);
  const taskDir = args.taskDir ?? mkdtempSync(join(tmpdir(), 'sandloop-demo-'));
  const controller = new AbortController();
  const stopListening = abortOnSignals(controller, say);
  try {
    const session = await AgentSession.open({
      model: `scripted:${DEMO_SCRIPT}`,
      taskDir,
      image: args.image,
      environment: loadEnvironment(),
      signal: controller.signal,
      onEvent: textRenderer(say, style),
      onProgress: (line) => say(terminalSafe(line)),
    });
    try {
      for (const prompt of DEMO_PROMPTS) {
        say(style.bold(`\n> ${prompt}`));
        const result = await session.run(prompt);
        process.stdout.write(`${result.result}\n`);
        if (result.status !== 'completed') return exitCodeForResult(result);
      }
    } finally {
      await session.close();
    }
    say(style.dim(`\nThe demo's workspace is ${taskDir} (hello.py is there). Run a real model with: ANTHROPIC_API_KEY=... sandloop run "your prompt"`));
    return EXIT.completed;
  } finally {
    stopListening();
  }
}
