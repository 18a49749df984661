import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../src/errors.js';
import { parseSize, resolveOptions } from '../src/options.js';

const dir = mkdtempSync(join(tmpdir(), 'sandloop-opts-'));
const base = { taskDir: dir, environment: { ANTHROPIC_API_KEY: 'k' } };
const resolve = (o: object) => resolveOptions({ ...base, ...o }, 'img:latest');
const fails = (o: object) => {
  try {
    resolve(o);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
};

describe('resolveOptions', () => {
  it('fills in the documented defaults', () => {
    expect(resolve({})).toMatchObject({
      taskDir: dir,
      model: 'claude-sonnet-4-5',
      maxTurns: 50,
      maxTokens: 8192,
      timeoutSeconds: 120,
      maxOutput: 30000,
      network: 'none',
      memoryBytes: 1024 ** 3,
      cpus: 1,
      pids: 256,
      env: [],
      image: 'img:latest',
      parallel: 4,
      maxRetries: 6,
    });
  });

  it('reads MODEL_ID and ANTHROPIC_BASE_URL from the environment given', () => {
    const r = resolveOptions({ taskDir: dir, environment: { ANTHROPIC_API_KEY: 'k', MODEL_ID: 'claude-x', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' } }, 'i');
    expect(r).toMatchObject({ model: 'claude-x', baseURL: 'http://127.0.0.1:9', apiKey: 'k' });
  });

  it('names the flag and quotes the value on bad input', () => {
    expect(fails({ timeout: 'abc' })).toBe("--timeout must be a positive number of seconds, got 'abc'");
    expect(fails({ maxTurns: '0' })).toBe("--max-turns must be a positive number, got '0'");
    expect(fails({ maxTurns: '2.5' })).toBe("--max-turns must be a positive integer, got '2.5'");
    expect(fails({ memory: 'lots' })).toBe("--memory must be a size of at least 6m such as 512m or 1g, got 'lots'");
    expect(fails({ env: ['NOPE'] })).toBe("--env must be KEY=VALUE, got 'NOPE'");
    expect(fails({ network: 'host' })).toMatch(/^--network host would share the host's/);
    expect(fails({ taskDir: join(dir, 'missing') })).toBe(`--task-dir ${join(dir, 'missing')} does not exist`);
    const file = join(dir, 'file');
    writeFileSync(file, '');
    expect(fails({ taskDir: file })).toBe(`--task-dir ${file} is not a directory`);
  });

  it('requires an API key for a real model, not for a scripted one', () => {
    expect(fails({ environment: {} })).toMatch(/^ANTHROPIC_API_KEY is not set/);
    expect(resolveOptions({ taskDir: dir, environment: {}, model: 'scripted:x.json' }, 'i').model).toBe('scripted:x.json');
  });

  it('parses memory sizes', () => {
    const memoryBytes = (v: string) => parseSize(v, '--memory', 6 * 1024 ** 2);
    expect(memoryBytes('512m')).toBe(512 * 1024 ** 2);
    expect(memoryBytes('1.5g')).toBe(1.5 * 1024 ** 3);
    expect(memoryBytes('64MB')).toBe(64 * 1024 ** 2);
    expect(() => memoryBytes('1k')).toThrow(ConfigError);
  });
});
