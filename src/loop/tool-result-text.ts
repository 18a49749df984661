import type { ExecResult } from '../types.js';

/** The text the model receives for one finished command: outcome first, then labelled output. */
export function toolResultText(result: ExecResult): string {
  const lines: string[] = [];
  const seconds = (result.durationMs / 1000).toFixed(2);
  if (result.aborted) {
    lines.push('Aborted: the user cancelled the run while this command ran; it was killed.');
  } else if (result.timedOut) {
    lines.push(`Timed out after ${result.timeoutSeconds} s: the command was killed. Output printed before the kill follows.`);
  } else if (result.oomKilled) {
    lines.push('Killed: out of memory (the sandbox memory limit was reached and a process was killed).');
  }
  lines.push(`Exit code: ${result.exitCode} (${seconds} s)`);
  if (result.stdout === '' && result.stderr === '') {
    lines.push('(no output)');
  } else {
    if (result.stdout !== '') lines.push('--- stdout ---', chomp(result.stdout));
    if (result.stderr !== '') lines.push('--- stderr ---', chomp(result.stderr));
  }
  return lines.join('\n');
}

function chomp(text: string): string {
  return text.endsWith('\n') ? text.slice(0, -1) : text;
}
