import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { WorkspaceReport } from '../../src/types.js';
import { type FakeAnthropic, type FakeTurn, startFakeAnthropic } from '../fake-anthropic/server.js';
import { type CliOptions, runAndSignal, runCli } from '../helpers/cli.js';
import { describeDocker, sandloopContainers } from '../helpers/docker.js';
import { treeHash, treeHashWithout } from '../helpers/tree.js';

const bash = (command: string): FakeTurn => ({ content: [{ type: 'tool_use', name: 'bash', input: { command } }] });
const say = (text: string): FakeTurn => ({ content: [{ type: 'text', text }] });
const T = { timeout: 60_000 };

function volumes(runId: string): string[] {
  return execFileSync('docker', ['volume', 'ls', '-q', '--filter', `label=sandloop.run=${runId}`], { encoding: 'utf8' }).split('\n').filter(Boolean);
}

/** A small project: text, an executable, a nested dir, a gitignored build dir. */
function project(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sandloop-proj-'));
  writeFileSync(join(dir, '.gitignore'), 'node_modules/\n*.log\n');
  writeFileSync(join(dir, 'app.py'), 'print("v1")\n');
  writeFileSync(join(dir, 'notes.md'), '# notes\n\none\ntwo\nthree\n');
  mkdirSync(join(dir, 'src'));
  writeFileSync(join(dir, 'src', 'util.py'), 'def f():\n    return 1\n');
  writeFileSync(join(dir, 'run.sh'), '#!/bin/sh\necho run\n', { mode: 0o755 });
  mkdirSync(join(dir, 'node_modules', 'dep'), { recursive: true });
  writeFileSync(join(dir, 'node_modules', 'dep', 'index.js'), 'module.exports = 1;\n');
  writeFileSync(join(dir, 'debug.log'), 'noise\n');
  return dir;
}

describeDocker('--mount copy (real Docker)', () => {
  let fake: FakeAnthropic;
  beforeEach(async () => {
    fake = await startFakeAnthropic();
  });
  afterEach(async () => fake.close());
  const run = (taskDir: string, out: string, extra: string[] = [], onSpawn?: CliOptions['onSpawn']) =>
    runCli(['run', '--task-dir', taskDir, '--mount', 'copy', '--out', out, '--output-format', 'json', ...extra, 'x'], {
      env: { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: fake.url },
      onSpawn,
    });

  it('a hostile episode cannot touch the host task dir; dangerous entries are refused on the way out', T, async () => {
    const taskDir = project();
    const hostDir = mkdtempSync(join(tmpdir(), 'sandloop-host-'));
    writeFileSync(join(hostDir, 'target.txt'), 'host file\n');
    symlinkSync(join(hostDir, 'target.txt'), join(taskDir, 'to-host'));
    const before = treeHash(taskDir);
    const out = join(mkdtempSync(join(tmpdir(), 'sandloop-out-')), 'result');
    fake.enqueue(
      bash('echo pwned > to-host 2>&1; rm -rf /workspace/* /workspace/.gitignore; ls -A /workspace | wc -l'),
      bash('ln -s /etc/passwd passwd; ln -s ../../../../etc/shadow shadow; touch ..evil; echo kept > survivor.txt; mkdir -p d && ln -s / d/root'),
      say('done'),
    );
    const res = await run(taskDir, out);
    expect(res.code, res.stderr).toBe(0);
    expect(treeHash(taskDir)).toBe(before);
    expect(readFileSync(join(hostDir, 'target.txt'), 'utf8')).toBe('host file\n');
    const result = JSON.parse(res.stdout) as { run_id: string; workspace: WorkspaceReport };
    const report = result.workspace;
    expect(report.rejected.map((r) => r.path).sort()).toEqual(['d/root', 'passwd', 'shadow']);
    expect(readFileSync(join(out, 'workspace', 'survivor.txt'), 'utf8')).toBe('kept\n');
    expect(readFileSync(join(out, 'workspace', '..evil'), 'utf8')).toBe('');
    expect(report.changes.deleted).toEqual(['.gitignore', 'app.py', 'notes.md', 'run.sh', 'src/util.py', 'to-host']);
    expect(report.excluded).toEqual(['debug.log (.gitignore)', 'node_modules/ (.gitignore)']);
    expect(JSON.parse(readFileSync(join(out, 'changes.json'), 'utf8'))).toMatchObject({ rejected: report.rejected, changes: report.changes });
    expect(volumes(result.run_id)).toEqual([]);
    expect(sandloopContainers(result.run_id)).toEqual([]);
  });

  it('a normal episode gives a changes.patch that git apply turns into the final workspace', T, async () => {
    const taskDir = project();
    const out = join(mkdtempSync(join(tmpdir(), 'sandloop-out-')), 'result');
    fake.enqueue(
      bash(
        [
          "sed -i 's/v1/v2/' app.py",
          "printf '# notes\\n\\none\\nTWO\\nthree\\nfour\\n' > notes.md",
          'rm src/util.py',
          'mkdir -p pkg && printf "x = 1\\n" > pkg/new.py && printf "no newline" > pkg/raw.txt',
          'chmod -x run.sh && chmod +x app.py',
          'ls node_modules 2>&1 | head -1',
        ].join(' && '),
      ),
      say('edited'),
    );
    const res = await run(taskDir, out);
    expect(res.code, res.stderr).toBe(0);
    const { workspace: report } = JSON.parse(res.stdout) as { workspace: WorkspaceReport };
    expect(report.changes).toEqual({
      added: ['pkg/new.py', 'pkg/raw.txt'],
      modified: ['app.py', 'notes.md', 'run.sh'],
      deleted: ['src/util.py'],
      binary: [],
    });
    const copy = mkdtempSync(join(tmpdir(), 'sandloop-apply-'));
    cpSync(taskDir, copy, { recursive: true });
    execFileSync('git', ['apply', '--whitespace=nowarn', join(out, 'changes.patch')], { cwd: copy });
    // Everything but what was left out of the copy (and git's missing empty dirs) matches.
    expect(treeHashWithout(copy, ['node_modules', 'debug.log', 'src'])).toBe(treeHashWithout(join(out, 'workspace'), ['src']));
  });

  it('--apply brings the changes into the task dir; refused when the task dir changed meanwhile', T, async () => {
    const taskDir = project();
    fake.enqueue(bash("sed -i 's/v1/v3/' app.py && echo added > added.txt"), say('ok'));
    const okOut = join(mkdtempSync(join(tmpdir(), 'sandloop-out-')), 'r');
    const ok = await run(taskDir, okOut, ['--apply']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout).workspace.applied).toBe(true);
    expect(JSON.parse(readFileSync(join(okOut, 'changes.json'), 'utf8')).applied).toBe(true);
    expect(readFileSync(join(taskDir, 'app.py'), 'utf8')).toBe('print("v3")\n');
    expect(readFileSync(join(taskDir, 'added.txt'), 'utf8')).toBe('added\n');

    fake.enqueue(bash("sleep 3; sed -i 's/v3/v4/' app.py"), say('ok'));
    // While the command sleeps, the user edits the task dir.
    const edit = (async () => {
      while (fake.requests.length < 1) await new Promise((r) => setTimeout(r, 50));
      await new Promise((r) => setTimeout(r, 800));
      writeFileSync(join(taskDir, 'app.py'), 'print("mine")\n');
    })();
    const refused = await run(taskDir, join(mkdtempSync(join(tmpdir(), 'sandloop-out-')), 'r'), ['--apply']);
    await edit;
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/--apply refused: the task dir changed during the run \(app\.py\); the agent's changes are in /);
    expect(readFileSync(join(taskDir, 'app.py'), 'utf8')).toBe('print("mine")\n');
    const report = JSON.parse(refused.stdout).workspace as WorkspaceReport;
    expect(report).toMatchObject({ applied: false, task_dir_changed: ['app.py'] });
  });

  it('--mount ro gives the model a clear read-only error and says so in the tool description', T, async () => {
    const taskDir = project();
    const before = treeHash(taskDir);
    fake.enqueue(bash('echo x > app.py; touch new.txt'), say('ok'));
    const res = await runCli(['run', '--task-dir', taskDir, '--mount', 'ro', '--output-format', 'json', 'x'], {
      env: { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: fake.url },
    });
    expect(res.code, res.stderr).toBe(0);
    const seen = fake.requests[1]!.body.messages.at(-1).content[0].content as string;
    expect(seen).toMatch(/app\.py: Read-only file system/);
    expect(seen).toMatch(/new\.txt.*Read-only file system/);
    expect(fake.requests[0]!.body.tools[0].description).toMatch(/mounted read-only/);
    expect(treeHash(taskDir)).toBe(before);
  });

  it('Ctrl-C in copy mode leaves no volume and no container', T, async () => {
    const taskDir = project();
    fake.enqueue(bash('sleep 600'));
    const res = await runAndSignal(
      ['run', '--task-dir', taskDir, '--mount', 'copy', '--out', join(mkdtempSync(join(tmpdir(), 'sandloop-out-')), 'r'), '--output-format', 'stream-json', 'x'],
      { env: { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: fake.url }, signal: 'SIGINT' },
    );
    const { runId } = res;
    expect(res.code).toBe(130);
    expect(volumes(runId)).toEqual([]);
    expect(sandloopContainers(runId)).toEqual([]);
  });

  it('ownership and permissions survive the round trip; the files in --out belong to the invoking user', T, async () => {
    const taskDir = project();
    execFileSync('chown', ['-R', '4242:4242', taskDir]);
    const outRoot = mkdtempSync(join(tmpdir(), 'sandloop-out-'));
    execFileSync('chown', ['4242:4242', outRoot]);
    const dockerGid = execFileSync('getent', ['group', 'docker'], { encoding: 'utf8' }).split(':')[2];
    fake.enqueue(bash('id -u; stat -c "%u %a" /workspace /workspace/run.sh; echo made > made.txt && chmod 750 made.txt'), say('ok'));
    const res = await runCli(['run', '--task-dir', taskDir, '--mount', 'copy', '--out', join(outRoot, 'r'), '--output-format', 'json', 'x'], {
      env: { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: fake.url },
      prefix: ['setpriv', '--reuid=4242', '--regid=4242', `--groups=${dockerGid}`],
      cwd: outRoot,
    });
    expect(res.code, res.stderr).toBe(0);
    const seen = fake.requests[1]!.body.messages.at(-1).content[0].content as string;
    expect(seen).toContain('4242\n4242 700\n4242 755');
    const made = statSync(join(outRoot, 'r', 'workspace', 'made.txt'));
    expect([made.uid, made.mode & 0o777]).toEqual([4242, 0o750]);
    expect(statSync(join(outRoot, 'r', 'workspace', 'run.sh')).mode & 0o777).toBe(0o755);
    expect(statSync(join(outRoot, 'r', 'changes.patch')).uid).toBe(4242);
  });
});
