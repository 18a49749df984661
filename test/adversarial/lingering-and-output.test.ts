import { expect, it } from 'vitest';
import { describeDocker } from '../helpers/docker.js';
import { hostProcesses, hostile } from './harness.js';

const T = { timeout: 90_000 };

describeDocker('adversarial: processes that try to outlive their call', () => {
  it('nohup, setsid and a double fork are all gone when the call returns', T, async () => {
    const run = await hostile(
      'nohup sleep 1001 >/dev/null 2>&1 & setsid sleep 1002 >/dev/null 2>&1 < /dev/null & (sleep 1003 >/dev/null 2>&1 &) ; sleep 0.2; ps -eo args | grep -c "^sleep 100"',
    );
    expect(run.call.stdout).toBe('3\n');
    expect(run.call.timed_out).toBe(false);
    expect(run.call.duration_ms).toBeLessThan(5000);
    expect(hostProcesses('sleep 100[123]')).toEqual([]);
  });
});

describeDocker('adversarial: output attacks', () => {
  it('invalid UTF-8 and NUL bytes reach the model decoded, not as a crash', T, async () => {
    const run = await hostile("printf 'ok\\xff\\xfe\\x00\\xc3(end\\n'");
    expect(run.call.stdout).toBe('ok\uFFFD\uFFFD\u0000\uFFFD(end\n');
  });

  it('a single 50 MB line comes back as head, marker and tail within the cap', T, async () => {
    const run = await hostile("head -c 50000000 /dev/zero | tr '\\0' 'x'; echo END", { flags: ['--max-output', '4000'] });
    expect(run.call.truncated).toBe(true);
    const marker = run.call.stdout.split('\n').find((l) => l.startsWith('[... '))!;
    expect(marker).toMatch(/characters and 0 lines elided; the output was 50000004 characters, 1 lines/);
    expect(run.call.stdout.length).toBeLessThanOrEqual(4000 + marker.length + 2);
    expect(run.call.stdout.endsWith('xxxEND\n')).toBe(true);
  });

  it('an ANSI escape flood cannot rewrite the user terminal: the display escapes control sequences', T, async () => {
    const flood = "for i in $(seq 2000); do printf '\\033[2J\\033[H\\033]0;pwned\\007\\r\\033[31m'; done; echo; printf 'line\\033[1A\\033[Kgone\\n'";
    const run = await hostile(flood, { textOutput: true });
    // What the terminal got: the command's bytes shown escaped, never raw.
    expect(run.cli.stderr).toContain('\\x1b[2J');
    expect(run.cli.stderr).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
    expect(run.cli.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
    // What the model got: the real bytes, within the cap.
    expect(run.call.stdout).toContain('\u001b]0;pwned\u0007');
  });
});
