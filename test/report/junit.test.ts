import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { MAX_JUNIT_TEXT_BYTES, cap, className, toJUnitXml } from '../../src/report/junit.js';
import type { CaseResult } from '../../src/types.js';

const XSD = fileURLToPath(new URL('./junit.xsd', import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), 'sandloop-junit-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

// xmllint (Debian: libxml2-utils) is the referee: validation against the
// Jenkins JUnit schema, and every read-back goes through its XPath.
const probe = spawnSync('xmllint', ['--version'], { encoding: 'utf8' });
const xmllintMissing = probe.error ? String(probe.error.message) : '';
const inCI = process.env.CI === 'true';
if (xmllintMissing && !inCI) {
  console.warn(
    `\n!!! xmllint not found (${xmllintMissing}): the JUnit schema validation and XPath read-back tests are SKIPPED.\n` +
      '!!! Install it with `apt-get install -y libxml2-utils`; under CI=true they fail instead.\n',
  );
}
const withXmllint = describe.skipIf(xmllintMissing !== '' && !inCI);

function needXmllint(): void {
  if (xmllintMissing) throw new Error(`CI=true and xmllint is missing (apt-get install -y libxml2-utils): ${xmllintMissing}`);
}

let fileNo = 0;
function save(xml: string): string {
  const path = join(tmp, `report-${++fileNo}.xml`);
  writeFileSync(path, xml);
  return path;
}

/** `xmllint --schema junit.xsd`: exit code and what it said. */
function validate(xml: string): { code: number | null; out: string } {
  needXmllint();
  const r = spawnSync('xmllint', ['--noout', '--nonet', '--schema', XSD, save(xml)], { encoding: 'utf8' });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

/** A parsed-by-xmllint view of one document: XPath string() and count() queries. */
function xpathOn(xml: string) {
  needXmllint();
  const path = save(xml);
  const query = (expr: string): string => {
    const r = spawnSync('xmllint', ['--nonet', '--xpath', expr, path], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    if (r.status !== 0) throw new Error(`xmllint --xpath ${expr} failed (${r.status}): ${r.stderr}`);
    return r.stdout.endsWith('\n') ? r.stdout.slice(0, -1) : r.stdout;
  };
  return {
    str: (expr: string) => query(`string(${expr})`),
    num: (expr: string) => Number(query(`count(${expr})`)),
  };
}

const cwd = process.cwd();
const usage = (i: number, o: number) => ({ input_tokens: i, output_tokens: o, cache_creation_input_tokens: 10, cache_read_input_tokens: 5 });

function result(over: Partial<CaseResult> & Pick<CaseResult, 'name' | 'status'>): CaseResult {
  return {
    file: join(cwd, 'cases', 'smoke', `${over.name}.md`),
    attempt: 1,
    turns: 3,
    tool_calls: 2,
    duration_ms: 1234,
    usage: usage(100, 20),
    cost_usd: 0.1,
    checks: [],
    dir: `${over.name}/1`,
    tags: [],
    ...over,
  };
}

const NASTY = 'nul[\u0000] esc[\u001b[31mred\u001b[0m] bel[\u0007] lone[\ud800][\udfff] nonchar[\ufffe\uffff] cdata[]]>] xml[<&>"\'] emoji[😀]';

const results: CaseResult[] = [
  result({ name: 'hello', status: 'pass', result: 'Hello, world.', checks: [{ command: 'test -f out.txt', exit_code: 0, passed: true, output: '', duration_ms: 40, timed_out: false }] }),
  result({
    name: 'build',
    file: join(cwd, 'cases', 'build.suite.yaml'),
    status: 'fail',
    reason: 'check failed: npm test (exit 1)',
    run_status: 'completed',
    result: `done ${NASTY}`,
    checks: [
      { command: 'test -d dist', exit_code: 0, passed: true, output: '', duration_ms: 10, timed_out: false },
      { command: 'npm test', exit_code: 1, passed: false, output: `FAIL src/a.test.ts\n${NASTY}\nexpected 1 to be 2`, duration_ms: 900, timed_out: false },
      { command: 'npm run lint', exit_code: 2, passed: false, output: 'lint broke too', duration_ms: 80, timed_out: false },
    ],
  }),
  result({
    name: 'greets',
    status: 'fail',
    reason: 'expect /(?i)bonjour/ did not match',
    run_status: 'completed',
    result: 'Hello there!',
    expect: { pattern: '(?i)bonjour', matched: false },
  }),
  result({ name: 'loops', status: 'error', reason: 'stopped: max_turns', run_status: 'max_turns', turns: 50, tool_calls: 49, duration_ms: 65_432.1 }),
  result({
    name: 'api',
    status: 'error',
    run_status: 'error',
    reason: 'API error: rate_limit_error: Number of request tokens has exceeded your per-minute rate limit',
    error: 'rate_limit_error: Number of request tokens has exceeded your per-minute rate limit',
    turns: 1,
    usage: usage(0, 0),
    cost_usd: 0,
  }),
  result({
    // As the batch runner reports a prompt file it could not read.
    name: 'cases/broken.md:3',
    file: join(cwd, 'cases', 'broken.md'),
    status: 'invalid',
    reason: 'invalid prompt file: cases/broken.md:3: max_turns: Expected number, received string',
    turns: 0,
    tool_calls: 0,
    duration_ms: 0,
    usage: usage(0, 0),
    cost_usd: 0,
    dir: '',
  }),
  ...[1, 2, 3].map((attempt) =>
    result({
      name: 'flaky',
      attempt,
      status: attempt === 2 ? 'fail' : 'pass',
      reason: attempt === 2 ? 'check failed: ./verify.sh (exit 3)' : undefined,
      checks: [{ command: './verify.sh', exit_code: attempt === 2 ? 3 : 0, passed: attempt !== 2, output: `attempt ${attempt}`, duration_ms: 5, timed_out: false }],
      dir: `flaky/${attempt}`,
    }),
  ),
  result({
    name: `weird ${NASTY}`,
    status: 'fail',
    reason: `reason with\nnewline ${NASTY}`,
    checks: [{ command: `echo '${NASTY}'`, exit_code: 1, passed: false, output: NASTY, duration_ms: 1, timed_out: true }],
  }),
];

const options = { suiteName: 'sandloop <smoke> & "friends"', timestamp: new Date('2025-01-02T03:04:05.678Z'), hostname: 'ci-runner-7' };
const xml = toJUnitXml(results, options);

describe('toJUnitXml, as plain text', () => {
  it('is deterministic', () => {
    expect(toJUnitXml(structuredClone(results), { ...options })).toBe(xml);
  });

  it('carries no character that XML 1.0 forbids, and no raw markup from the data', () => {
    // eslint-disable-next-line no-control-regex
    expect(xml).not.toMatch(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/);
    expect(xml).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
    expect(xml).not.toContain(']]>');
    expect(xml).not.toContain('<&>');
    expect(xml).toContain('😀');
  });

  it('leaves timestamp and hostname out when not given', () => {
    const bare = toJUnitXml(results.slice(0, 1), { suiteName: 's' });
    expect(bare).not.toMatch(/timestamp=|hostname=/);
    expect(bare).toBe(toJUnitXml(results.slice(0, 1), { suiteName: 's' }));
  });

  it('makes the classname from the file relative to the working directory', () => {
    expect(className(join(cwd, 'cases', 'smoke', 'hello.md'))).toBe('cases.smoke.hello');
    expect(className('cases/a.suite.yaml')).toBe('cases.a.suite');
    expect(className('/elsewhere/x/y.md')).toBe('elsewhere.x.y');
  });

  it('caps long text at 64 KB with a marker, keeping head and tail and whole characters', () => {
    const long = `HEAD${'é'.repeat(100_000)}€${'x'.repeat(50_000)}TAIL`;
    const capped = cap(long);
    expect(Buffer.byteLength(capped)).toBeLessThanOrEqual(MAX_JUNIT_TEXT_BYTES);
    expect(Buffer.byteLength(capped)).toBeGreaterThan(MAX_JUNIT_TEXT_BYTES - 100);
    expect(capped.startsWith('HEADéé')).toBe(true);
    expect(capped.endsWith('xxTAIL')).toBe(true);
    expect(capped).toMatch(/\n\[\.\.\. \d+ bytes cut by sandloop \.\.\.\]\n/);
    expect(capped).not.toContain('\ufffd');
    expect(cap('short')).toBe('short');
  });
});

withXmllint('toJUnitXml, checked by xmllint', () => {
  it('validates against the Jenkins/Ant JUnit schema (junit-10.xsd)', () => {
    const { code, out } = validate(xml);
    expect(out).toContain('validates');
    expect(code).toBe(0);
  });

  it('validates when empty, and with big outputs capped', () => {
    expect(validate(toJUnitXml([], { suiteName: 'empty' })).code).toBe(0);
    const big = result({
      name: 'big',
      status: 'fail',
      result: 'r'.repeat(300_000),
      checks: [{ command: 'yes', exit_code: 1, passed: false, output: `${'y\n'.repeat(200_000)}the end`, duration_ms: 1, timed_out: false }],
    });
    const bigXml = toJUnitXml([big], { suiteName: 'big' });
    expect(validate(bigXml).code).toBe(0);
    const q = xpathOn(bigXml);
    expect(Number(q.str('string-length(//testcase/failure)'))).toBeGreaterThan(60_000);
    const failure = q.str('//testcase/failure');
    expect(Buffer.byteLength(failure)).toBeLessThanOrEqual(MAX_JUNIT_TEXT_BYTES);
    expect(failure).toContain('check failed: yes');
    expect(failure).toContain('bytes cut by sandloop');
    expect(failure).toContain('the end');
    expect(Buffer.byteLength(q.str('//testcase/system-out'))).toBeLessThanOrEqual(MAX_JUNIT_TEXT_BYTES);
  });

  it('is rejected by the schema when broken on purpose', () => {
    const nameless = xml.replace('<testcase name="hello"', '<testcase');
    expect(nameless).not.toBe(xml);
    const r1 = validate(nameless);
    expect(r1.code).not.toBe(0);
    expect(r1.out).toMatch(/testcase.*name.*required|attribute 'name' is required/i);

    const noFailures = xml.replace(/(<testsuite [^>]*?) failures="\d+"/, '$1');
    expect(noFailures).not.toBe(xml);
    expect(validate(noFailures).code).not.toBe(0);

    const unknownElement = xml.replace('<system-out>', '<stdout>').replace('</system-out>', '</stdout>');
    expect(validate(unknownElement).code).not.toBe(0);

    const notWellFormed = xml.replace('&amp;', '&');
    expect(validate(notWellFormed).code).not.toBe(0);
  });

  it('reads back with the right counts, names, classnames and times', () => {
    const q = xpathOn(xml);
    expect(q.num('/testsuites/testsuite')).toBe(1);
    for (const root of ['/testsuites', '/testsuites/testsuite']) {
      expect(q.str(`${root}/@name`)).toBe('sandloop <smoke> & "friends"');
      expect(q.str(`${root}/@tests`)).toBe(String(results.length));
      expect(q.str(`${root}/@failures`)).toBe('4'); // build, greets, flaky #2, weird
      expect(q.str(`${root}/@errors`)).toBe('3'); // loops, api, broken (invalid)
    }
    const total = results.reduce((s, r) => s + r.duration_ms, 0) / 1000;
    expect(q.str('/testsuites/@time')).toBe(total.toFixed(3));
    expect(q.str('//testsuite/@skipped')).toBe('0');
    expect(q.str('//testsuite/@timestamp')).toBe('2025-01-02T03:04:05');
    expect(q.str('//testsuite/@hostname')).toBe('ci-runner-7');
    expect(q.num('//testcase')).toBe(results.length);
    expect(q.num('//testcase/failure')).toBe(4);
    expect(q.num('//testcase/error')).toBe(3);
    expect(q.num('//testcase[not(failure) and not(error)]')).toBe(3); // hello, flaky #1, flaky #3

    const names = results.map((_, i) => q.str(`//testcase[${i + 1}]/@name`));
    expect(names.slice(0, 9)).toEqual(['hello', 'build', 'greets', 'loops', 'api', 'cases/broken.md:3', 'flaky #1', 'flaky #2', 'flaky #3']);
    expect(new Set(names).size).toBe(names.length);

    expect(q.str('//testcase[1]/@classname')).toBe('cases.smoke.hello');
    expect(q.str('//testcase[2]/@classname')).toBe('cases.build.suite');
    expect(q.str('//testcase[1]/@time')).toBe('1.234');
    expect(q.str('//testcase[4]/@time')).toBe('65.432');
    expect(q.str('//testcase[6]/@time')).toBe('0.000');
  });

  it('puts cost and token totals in suite properties', () => {
    const q = xpathOn(xml);
    const prop = (name: string) => q.str(`//testsuite/properties/property[@name='${name}']/@value`);
    expect(prop('sandloop.cost_usd')).toBe('0.8'); // 8 attempts at 0.1, not 0.7999999999999999
    expect(prop('sandloop.input_tokens')).toBe('800');
    expect(prop('sandloop.output_tokens')).toBe('160');
    expect(prop('sandloop.cache_creation_input_tokens')).toBe('100');
    expect(prop('sandloop.cache_read_input_tokens')).toBe('50');
  });

  it('reports a failing check with its command and output, and the first failing check only', () => {
    const q = xpathOn(xml);
    expect(q.str('//testcase[@name="build"]/failure/@message')).toBe('check failed: npm test (exit 1)');
    expect(q.str('//testcase[@name="build"]/failure/@type')).toBe('check');
    const text = q.str('//testcase[@name="build"]/failure');
    expect(text).toContain('check failed: npm test\nexit code 1\n');
    expect(text).toContain('FAIL src/a.test.ts');
    expect(text).toContain('expected 1 to be 2');
    expect(text).not.toContain('lint broke too');
    expect(text).not.toContain('test -d dist');
    expect(q.str('//testcase[@name="flaky #2"]/failure')).toContain('./verify.sh\nexit code 3\n--- output ---\nattempt 2');
  });

  it('reports a missed expect with the pattern and the final text', () => {
    const q = xpathOn(xml);
    expect(q.str('//testcase[@name="greets"]/failure/@type')).toBe('expect');
    expect(q.str('//testcase[@name="greets"]/failure/@message')).toBe('expect /(?i)bonjour/ did not match');
    const text = q.str('//testcase[@name="greets"]/failure');
    expect(text).toContain('/(?i)bonjour/');
    expect(text).toContain('Hello there!');
    expect(q.str('//testcase[@name="greets"]/system-out')).toBe('Hello there!');
  });

  it('reports errors and invalid case files as <error>', () => {
    const q = xpathOn(xml);
    expect(q.str('//testcase[@name="loops"]/error/@type')).toBe('max_turns');
    expect(q.str('//testcase[@name="loops"]/error/@message')).toBe('stopped: max_turns');
    expect(q.str('//testcase[@name="loops"]/error')).toContain('run_status: max_turns\nturns: 50, tool_calls: 49');
    expect(q.str('//testcase[@name="api"]/error/@type')).toBe('error');
    expect(q.str('//testcase[@name="api"]/error/@message')).toBe(results[4]!.reason);
    expect(q.str('//testcase[@name="api"]/error')).toContain('error: rate_limit_error: Number of request tokens');
    const broken = '//testcase[@name="cases/broken.md:3"]';
    expect(q.str(`${broken}/@classname`)).toBe('cases.broken');
    expect(q.str(`${broken}/error/@type`)).toBe('invalid');
    expect(q.str(`${broken}/error/@message`)).toBe(results[5]!.reason);
    expect(q.str(`${broken}/error`)).toBe(results[5]!.reason);
    expect(q.num('//testcase[@name="hello"]/*[not(self::system-out)]')).toBe(0);
    expect(q.str('//testcase[@name="hello"]/system-out')).toBe('Hello, world.');
    expect(q.num('//testcase[@name="loops"]/system-out')).toBe(0);
  });

  it('types an error after a completed episode as error, and falls back to `error` for the message', () => {
    const infra = result({
      name: 'infra',
      status: 'error',
      run_status: 'completed',
      reason: 'infrastructure: docker went away',
      checks: [{ command: 'make check', exit_code: -1, passed: false, output: 'docker went away', duration_ms: 1, timed_out: false }],
    });
    const bare = result({ name: 'bare', status: 'error', error: 'socket hang up' });
    const doc = toJUnitXml([infra, bare], { suiteName: 'infra' });
    expect(validate(doc).code).toBe(0);
    const q = xpathOn(doc);
    expect(q.str('//testcase[1]/error/@type')).toBe('error');
    expect(q.str('//testcase[1]/error')).toContain('check failed: make check\nexit code -1');
    expect(q.str('//testcase[2]/error/@type')).toBe('error');
    expect(q.str('//testcase[2]/error/@message')).toBe('socket hang up');
    expect(q.str('/testsuites/@errors')).toBe('2');
  });

  it('keeps hostile text readable: illegal characters gone, markup characters intact', () => {
    const q = xpathOn(xml);
    const cleaned = 'nul[] esc[red] bel[] lone[][] nonchar[] cdata[]]>] xml[<&>"\'] emoji[😀]';
    const n = results.length;
    expect(q.str(`//testcase[${n}]/@name`)).toBe(`weird ${cleaned}`);
    expect(q.str(`//testcase[${n}]/failure/@message`)).toBe(`reason with\nnewline ${cleaned}`);
    const failure = q.str(`//testcase[${n}]/failure`);
    expect(failure).toContain(`check failed: echo '${cleaned}'\ntimed out (exit code 1)`);
    expect(failure).toContain(`--- output ---\n${cleaned}`);
    expect(q.str('//testcase[@name="build"]/system-out')).toBe(`done ${cleaned}`);
    const everything = q.str('/');
    // eslint-disable-next-line no-control-regex
    expect(everything).not.toMatch(/[\u0000\u0007\u001b\ufffe\uffff\ufffd]/);
  });
});
