import { extname, isAbsolute, relative, resolve, sep } from 'node:path';
import type { CaseResult, CheckResult } from '../types.js';
import { addUsage, emptyUsage } from '../types.js';

export interface JUnitOptions {
  suiteName: string;
  /** The suite's `timestamp` attribute (written as UTC, `YYYY-MM-DDTHH:MM:SS`); left out when not given. */
  timestamp?: Date;
  /** The suite's `hostname` attribute; left out when not given. */
  hostname?: string;
}

/** Cap, in UTF-8 bytes, of each failure/error text and each system-out. */
export const MAX_JUNIT_TEXT_BYTES = 64 * 1024;
/** Cap, in UTF-8 bytes, of a `message` attribute (a reason is one line; this is a safety net). */
const MAX_MESSAGE_BYTES = 4 * 1024;

/**
 * JUnit XML for CI: one testcase per case attempt, named by the case's name.
 *
 * The layout is the Ant/Jenkins one (`testsuites` > `testsuite` > `testcase`)
 * and validates against the Jenkins xunit-plugin's junit-10.xsd. A `fail`
 * becomes a `<failure>`, an `error` or an `invalid` an `<error>`. The output
 * is a function of its input alone (and of process.cwd(), which the
 * classnames are relative to): no clock, no host name unless given.
 */
export function toJUnitXml(results: CaseResult[], options: JUnitOptions): string {
  const failures = results.filter((r) => r.status === 'fail').length;
  const errors = results.filter((r) => r.status === 'error' || r.status === 'invalid').length;
  const time = seconds(results.reduce((sum, r) => sum + durationMs(r), 0));
  const usage = emptyUsage();
  let cost = 0;
  let turns = 0;
  let toolCalls = 0;
  for (const r of results) {
    addUsage(usage, r.usage);
    cost += finite(r.cost_usd);
    turns += finite(r.turns);
    toolCalls += finite(r.tool_calls);
  }

  const counts = { tests: results.length, failures, errors };
  const out: string[] = ['<?xml version="1.0" encoding="UTF-8"?>'];
  out.push(`<testsuites${attrs({ name: options.suiteName, ...counts, time })}>`);
  out.push(
    `  <testsuite${attrs({
      name: options.suiteName,
      ...counts,
      skipped: 0,
      time,
      timestamp: options.timestamp ? timestamp(options.timestamp) : undefined,
      hostname: options.hostname,
    })}>`,
  );
  const properties: Array<[string, string | number]> = [
    ['sandloop.cost_usd', Number(cost.toFixed(6))],
    ['sandloop.input_tokens', usage.input_tokens],
    ['sandloop.output_tokens', usage.output_tokens],
    ['sandloop.cache_creation_input_tokens', usage.cache_creation_input_tokens],
    ['sandloop.cache_read_input_tokens', usage.cache_read_input_tokens],
    ['sandloop.turns', turns],
    ['sandloop.tool_calls', toolCalls],
  ];
  out.push('    <properties>');
  for (const [name, value] of properties) out.push(`      <property${attrs({ name, value })}/>`);
  out.push('    </properties>');

  const names = testcaseNames(results);
  results.forEach((r, i) => {
    const head = `    <testcase${attrs({ name: names[i], classname: className(r.file), time: seconds(durationMs(r)) })}`;
    const body: string[] = [];
    const problem = problemOf(r);
    if (problem) {
      body.push(
        `      <${problem.element}${attrs({ message: cap(problem.message, MAX_MESSAGE_BYTES), type: problem.type })}>` +
          `${text(cap(problem.text))}</${problem.element}>`,
      );
    }
    if (r.result) body.push(`      <system-out>${text(cap(r.result))}</system-out>`);
    if (body.length === 0) out.push(`${head}/>`);
    else out.push(`${head}>`, ...body, '    </testcase>');
  });
  out.push('  </testsuite>', '</testsuites>', '');
  return out.join('\n');
}

interface Problem {
  element: 'failure' | 'error';
  type: string;
  message: string;
  text: string;
}

/** What a non-passing attempt reports: the `<failure>` or `<error>` of its testcase. */
function problemOf(r: CaseResult): Problem | undefined {
  switch (r.status) {
    case 'pass':
      return undefined;
    case 'fail': {
      const check = r.checks.find((c) => !c.passed);
      const expectMissed = r.expect !== undefined && !r.expect.matched;
      const parts: string[] = [];
      if (check) parts.push(checkText(check));
      if (expectMissed) parts.push(expectText(r.expect!.pattern, r.result));
      const type = check ? 'check' : expectMissed ? 'expect' : 'fail';
      const message =
        r.reason ??
        (check ? `check failed: ${check.command}` : expectMissed ? `expect /${r.expect!.pattern}/ did not match` : 'failed');
      if (parts.length === 0) parts.push(message);
      parts.push(footer(r));
      return { element: 'failure', type, message, text: parts.join('\n\n') };
    }
    case 'error': {
      const message = r.reason ?? r.error ?? `run ended with ${r.run_status ?? 'an error'}`;
      const lines = [message];
      if (r.run_status) lines.push(`run_status: ${r.run_status}`);
      if (r.error && r.error !== message) lines.push(`error: ${r.error}`);
      lines.push(`turns: ${r.turns}, tool_calls: ${r.tool_calls}`);
      const parts = [lines.join('\n')];
      const check = r.checks.find((c) => !c.passed);
      if (check) parts.push(checkText(check));
      parts.push(footer(r));
      // The episode's status says why it stopped; an error after a completed episode (checks could not run) is just an error.
      const type = r.run_status && r.run_status !== 'completed' ? r.run_status : 'error';
      return { element: 'error', type, message, text: parts.join('\n\n') };
    }
    case 'invalid': {
      const message = r.reason ?? r.error ?? 'invalid case file';
      const named = r.file === '' || message.includes(r.file) || message.includes(relative(process.cwd(), r.file));
      return { element: 'error', type: 'invalid', message, text: named ? message : `${r.file}: ${message}` };
    }
  }
}

function checkText(c: CheckResult): string {
  const how = c.timed_out ? `timed out (exit code ${c.exit_code})` : `exit code ${c.exit_code}`;
  return `check failed: ${c.command}\n${how}\n--- output ---\n${c.output === '' ? '(no output)' : c.output}`;
}

function expectText(pattern: string, result: string | undefined): string {
  return `expect: /${pattern}/ did not match the final text\n--- final text ---\n${result ? result : '(no final text)'}`;
}

function footer(r: CaseResult): string {
  return `file: ${r.file}\nattempt: ${r.attempt}${r.dir ? `\nresults: ${r.dir}` : ''}`;
}

/** Names as CI shows them: the case's name, plus ` #k` (the attempt) when the name occurs more than once. */
function testcaseNames(results: CaseResult[]): string[] {
  const seen = new Map<string, number>();
  for (const r of results) seen.set(r.name, (seen.get(r.name) ?? 0) + 1);
  return results.map((r) => ((seen.get(r.name) ?? 0) > 1 ? `${r.name} #${r.attempt}` : r.name));
}

/**
 * What CI UIs group by: the case's file relative to the working directory,
 * extension dropped, `/` turned into `.` (`cases/smoke/hello.md` ->
 * `cases.smoke.hello`). A file outside the working directory keeps its
 * absolute path (without the leading `/`) rather than a run of `..`.
 */
export function className(file: string): string {
  if (!file) return 'sandloop';
  const abs = resolve(file);
  let rel = relative(process.cwd(), abs);
  if (rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) rel = abs;
  const noExt = rel.slice(0, rel.length - extname(rel).length);
  return noExt.split(/[\\/]+/).filter((s) => s !== '' && s !== '.').join('.') || 'sandloop';
}

function durationMs(r: CaseResult): number {
  return Math.max(0, finite(r.duration_ms));
}

function finite(n: number | undefined): number {
  return typeof n === 'number' && Number.isFinite(n) ? n : 0;
}

function seconds(ms: number): string {
  return (ms / 1000).toFixed(3);
}

/** Ant's timestamp format (ISO 8601, no zone), in UTC. */
function timestamp(date: Date): string {
  return Number.isNaN(date.getTime()) ? '' : date.toISOString().slice(0, 19);
}

// ---------------------------------------------------------------- XML text

/** ANSI escape sequences (CSI and OSC): their ESC is illegal in XML, and the rest is noise without it. */
// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?/g;
/** Everything outside XML 1.0's Char production: C0 controls but \t \n \r, lone surrogates, U+FFFE, U+FFFF. */
// eslint-disable-next-line no-control-regex
const NOT_XML_CHAR = /[^\t\n\r\u{20}-\u{D7FF}\u{E000}-\u{FFFD}\u{10000}-\u{10FFFF}]/gu;

/** The text with what XML 1.0 cannot carry taken out. */
export function xmlSafe(s: string): string {
  return s.replace(ANSI, '').replace(NOT_XML_CHAR, '');
}

function text(s: string): string {
  return xmlSafe(s).replace(/[&<>\r]/g, (c) => ENTITY[c]!);
}

function attr(s: string): string {
  // Tabs and line breaks as character references: a parser turns literal ones into spaces.
  return xmlSafe(s).replace(/[&<>"'\t\n\r]/g, (c) => ENTITY[c]!);
}

const ENTITY: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&apos;',
  '\t': '&#9;',
  '\n': '&#10;',
  '\r': '&#13;',
};

function attrs(values: Record<string, string | number | undefined>): string {
  let s = '';
  for (const [k, v] of Object.entries(values)) if (v !== undefined) s += ` ${k}="${attr(String(v))}"`;
  return s;
}

/**
 * The text cut to `maxBytes` of UTF-8, keeping its head and its tail (where
 * the error usually is) around a marker line. Cuts fall between characters.
 */
export function cap(s: string, maxBytes = MAX_JUNIT_TEXT_BYTES): string {
  const clean = xmlSafe(s);
  const buf = Buffer.from(clean, 'utf8');
  if (buf.length <= maxBytes) return clean;
  const marker = (n: number) => `\n[... ${n} bytes cut by sandloop ...]\n`;
  const budget = Math.max(0, maxBytes - Buffer.byteLength(marker(buf.length)));
  let head = Math.floor(budget / 2);
  while (head > 0 && (buf[head]! & 0xc0) === 0x80) head--;
  let tail = buf.length - (budget - head);
  while (tail < buf.length && (buf[tail]! & 0xc0) === 0x80) tail++;
  return `${buf.subarray(0, head).toString('utf8')}${marker(tail - head)}${buf.subarray(tail).toString('utf8')}`;
}
