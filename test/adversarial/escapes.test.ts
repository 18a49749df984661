import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { describeDocker } from '../helpers/docker.js';
import { API_KEY, HOST_SECRET, escapeRuntimes, hostile } from './harness.js';

const T = { timeout: 120_000 };
const sha = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

describeDocker('adversarial: escape and peek attempts', () => {
  for (const runtime of escapeRuntimes()) {
    const flags = runtime === 'runc' ? [] : ['--runtime', runtime];

    it(`[${runtime}] no outbound network, by IP or by name`, T, async () => {
      const run = await hostile(
        'getent hosts example.com; echo dns=$?; python3 -c "import socket; s=socket.socket(); s.settimeout(3); s.connect((\'1.1.1.1\', 80))" 2>&1 | tail -1; curl -sS -m 3 http://93.184.215.14/ 2>&1; echo curl=$?',
        { flags },
      );
      expect(run.call.stdout).toMatch(/^dns=2$/m);
      expect(run.call.stdout).toMatch(/OSError|unreachable|Network is unreachable|timed out/i);
      expect(run.call.stdout).not.toMatch(/^curl=0$/m);
    });

    it(`[${runtime}] cannot read the host's environment`, T, async () => {
      const run = await hostile('cat /proc/1/environ | tr "\\0" "\\n"; echo ---; env; echo ---; cat /proc/self/environ | tr "\\0" "\\n"', { flags });
      expect(run.call.stdout).toContain('HOME=/home/sandbox');
      expect(run.call.stdout).not.toContain(HOST_SECRET);
      expect(run.call.stdout).not.toContain(API_KEY);
      expect(run.call.stdout).not.toMatch(/ANTHROPIC|SANDLOOP_HOST/);
    });

    it(`[${runtime}] finds no Docker socket anywhere`, T, async () => {
      const run = await hostile(
        'find / \\( -path /proc -o -path /sys \\) -prune -o \\( -name "*.sock" -o -type s \\) -print 2>/dev/null; echo find=done; python3 -c "import os; print([p for p in [\'/var/run/docker.sock\', \'/run/docker.sock\'] if os.path.exists(p)])"',
        { flags },
      );
      expect(run.call.stdout).toBe('find=done\n[]\n');
    });

    it(`[${runtime}] mount, unshare, chroot, ptrace of a host process and setuid gains all fail`, T, async () => {
      const dockerd = execFileSync('pidof', ['dockerd'], { encoding: 'utf8' }).trim().split(' ')[0];
      const run = await hostile(
        [
          'mount -t tmpfs none /mnt >/dev/null 2>&1; echo mount=$?',
          'unshare --mount true 2>/dev/null; echo unshare=$?',
          'unshare -r true 2>/dev/null; echo unshare_user=$?',
          'chroot / true 2>/dev/null; echo chroot=$?',
          `python3 -c "import ctypes,os; libc=ctypes.CDLL(None, use_errno=True); r=libc.ptrace(16, ${dockerd}, 0, 0); print('ptrace_host=%d %s' % (r, os.strerror(ctypes.get_errno())))"`,
          'python3 -c "import os; print(\'visible_pids=%d\' % len([p for p in os.listdir(\'/proc\') if p.isdigit()]))"',
          'grep -E "^(CapEff|CapBnd)" /proc/self/status',
          // Every setuid binary runs without gaining a capability (no-new-privileges, empty bounding set).
          'for b in $(find / -xdev -perm -4000 -type f 2>/dev/null); do "$b" --help >/dev/null 2>&1; done; echo setuid_checked',
        ].join('; '),
        { flags },
      );
      const out = run.call.stdout;
      for (const op of ['mount', 'unshare', 'chroot']) expect(out).toMatch(new RegExp(`^${op}=[1-9]\\d*$`, 'm'));
      // gVisor implements user namespaces inside its own user-space kernel: one may be created there, harmlessly.
      if (runtime === 'runc') expect(out).toMatch(/^unshare_user=[1-9]\d*$/m);
      expect(out).toMatch(/^ptrace_host=-1 No such process$/m);
      expect(Number(/visible_pids=(\d+)/.exec(out)![1])).toBeLessThan(10);
      expect(out).toMatch(/^CapEff:\s+0+$/m);
      expect(out).toMatch(/^CapBnd:\s+0+$/m);
      expect(out).toContain('setuid_checked');
    });

    it(`[${runtime}] cannot write outside /workspace`, T, async () => {
      const run = await hostile('for p in /etc/pwned /usr/pwned /pwned /var/pwned /home/pwned; do touch $p 2>/dev/null && echo wrote $p; done; echo done', { flags });
      expect(run.call.stdout).toBe('done\n');
    });

    it(`[${runtime}] a symlink in /workspace to a host path does not reach the host`, T, async () => {
      const hostDir = mkdtempSync(join(tmpdir(), 'sandloop-host-secret-'));
      const secret = join(hostDir, 'secret.txt');
      writeFileSync(secret, 'HOST-SECRET-CONTENT\n');
      const passwd = sha('/etc/passwd');
      const taskDir = mkdtempSync(join(tmpdir(), 'sandloop-adv-ws-'));
      symlinkSync(secret, join(taskDir, 'escape'));
      const run = await hostile(
        'cat escape 2>&1; echo pwned > escape 2>&1; ln -s /etc/passwd /workspace/passwd-link; echo pwned >> passwd-link 2>&1; echo done',
        { flags, taskDir },
      );
      expect(run.call.stdout).not.toContain('HOST-SECRET-CONTENT');
      expect(run.call.stdout).toContain('done');
      expect(readFileSync(secret, 'utf8')).toBe('HOST-SECRET-CONTENT\n');
      expect(sha('/etc/passwd')).toBe(passwd);
    });

    it(`[${runtime}] has no host devices`, T, async () => {
      const run = await hostile('head -c1 /dev/sda 2>&1; head -c1 /dev/mem 2>&1; head -c1 /dev/kmsg 2>&1; python3 -c "import os; print(sorted(os.listdir(\'/dev\')))"', { flags });
      expect(run.call.stdout).toMatch(/\/dev\/sda'? .*No such file or directory/);
      expect(run.call.stdout).toMatch(/\/dev\/mem'? .*No such file or directory/);
      const devices = JSON.parse(run.call.stdout.trim().split('\n').at(-1)!.replace(/'/g, '"')) as string[];
      expect(devices.filter((d) => /^(sd|nvme|vd|xvd|hd|mem|kmem|port|loop|dm-)/.test(d))).toEqual([]);
    });
  }
});
