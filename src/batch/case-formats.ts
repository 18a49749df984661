/**
 * The three prompt-file formats (Markdown with front matter, JSONL, YAML
 * suites) read into raw cases, with the line of every field so that a
 * problem can point at it. Split from case-files.ts, which finds the files
 * and assembles the cases.
 */
import { dirname, extname, parse as parsePath } from 'node:path';
import { isMap, isNode, isScalar, isSeq, LineCounter, parseDocument } from 'yaml';
import { errorMessage } from '../errors.js';
import type { InvalidCaseFile } from '../types.js';
import { type CaseFields, type FieldProblem, PER_CASE_ONLY, checkFields, defaultsSchema, suiteSchema } from './case-schema.js';

/** A case as written, before its fields are checked. */
export interface RawCase {
  /** The fields (Markdown: the front matter). */
  value: unknown;
  /** Where the case starts. */
  line: number;
  /** The line of a field (by its path in `value`), or the case's line when it is not written. */
  lineOf(path: (string | number)[]): number;
  defaultName: string;
  /** Markdown only: the body, which is the prompt. */
  body?: string;
}

export interface ParsedFile {
  cases: RawCase[];
  problems: InvalidCaseFile[];
  /** A suite's own `defaults:`, checked. */
  defaults?: CaseFields;
}

// ---------------------------------------------------------------- formats

export const CASE_EXTENSIONS = ['.md', '.jsonl', '.yaml', '.yml'];

const PARSERS: Record<string, (file: string, text: string) => ParsedFile> = {
  '.md': parseMarkdown,
  '.jsonl': parseJsonl,
  '.yaml': parseSuite,
  '.yml': parseSuite,
};

export function parseCaseFile(file: string, text: string): ParsedFile {
  const parse = PARSERS[extname(file).toLowerCase()];
  return parse ? parse(file, text) : failed(file, 1, `file: not a prompt file (expected ${CASE_EXTENSIONS.join(', ')})`);
}

function failed(file: string, line: number, message: string): ParsedFile {
  return { cases: [], problems: [{ file, line, message }] };
}

/** One case: optional YAML front matter between `---` lines, then the body, which is the prompt. */
function parseMarkdown(file: string, text: string): ParsedFile {
  const lines = text.split(/\r?\n/);
  const defaultName = parsePath(file).name;
  if (lines[0]?.trimEnd() !== '---') return { cases: [{ value: {}, body: text.trim(), line: 1, lineOf: () => 1, defaultName }], problems: [] };
  const close = lines.findIndex((l, i) => i > 0 && l.trimEnd() === '---');
  if (close < 0) return failed(file, 1, 'front matter: no closing --- line');
  // A blank line in place of the opening `---`, so the parser's line numbers are the file's.
  const yaml = readYaml(`\n${lines.slice(1, close).join('\n')}`);
  if (!yaml.ok) return failed(file, yaml.line, yaml.message);
  const body = lines.slice(close + 1).join('\n').trim();
  // The case (and a problem with no field, like an empty body) is at line 1; fields are where they are written.
  const lineOf = (path: (string | number)[]) => (path.length === 0 ? 1 : yaml.at(path));
  return { cases: [{ value: yaml.value ?? {}, body, line: 1, lineOf, defaultName }], problems: [] };
}

/** One case per non-empty line; every problem of a line is on that line. */
function parseJsonl(file: string, text: string): ParsedFile {
  const parsed: ParsedFile = { cases: [], problems: [] };
  const stem = parsePath(file).name;
  let index = 0;
  text.split(/\r?\n/).forEach((source, i) => {
    if (source.trim() === '') return;
    const line = i + 1;
    index++;
    try {
      parsed.cases.push({ value: JSON.parse(source), line, lineOf: () => line, defaultName: `${stem}-${index}` });
    } catch (err) {
      parsed.problems.push({ file, line, message: `invalid JSON: ${errorMessage(err)}` });
    }
  });
  if (index === 0) return failed(file, 1, 'cases: none found (the file is empty)');
  return parsed;
}

/** A list of cases, or `{ cases: [...], defaults: {...} }`. A bad case spoils only itself. */
function parseSuite(file: string, text: string): ParsedFile {
  const yaml = readYaml(text);
  if (!yaml.ok) return failed(file, yaml.line, yaml.message);
  const listed = Array.isArray(yaml.value);
  const suite = listed
    ? { ok: true as const, value: { cases: yaml.value as unknown[], defaults: undefined } }
    : checkFields(suiteSchema, yaml.value, { what: 'suite', expected: 'a list of cases or a map with cases:' });
  const problems = (ps: FieldProblem[], under: (string | number)[] = []) =>
    ps.map((p) => ({ file, line: yaml.at([...under, ...p.path]), message: p.message }));
  if (!suite.ok) return { cases: [], problems: problems(suite.problems) };
  const prefix = listed ? [] : ['cases'];
  if (suite.value.cases.length === 0) return failed(file, yaml.at(prefix), 'cases: none found (the list is empty)');

  let defaults: CaseFields | undefined;
  if (suite.value.defaults !== undefined) {
    const checked = checkFields(defaultsSchema(dirname(file)), suite.value.defaults, { what: 'defaults', misplaced: PER_CASE_ONLY });
    if (!checked.ok) return { cases: [], problems: problems(checked.problems, ['defaults']) };
    defaults = checked.value;
  }
  const stem = parsePath(file).name;
  const cases = suite.value.cases.map((value, i): RawCase => {
    const lineOf = (path: (string | number)[]) => yaml.at([...prefix, i, ...path]);
    return { value, line: lineOf([]), lineOf, defaultName: `${stem}-${i + 1}` };
  });
  return { cases, problems: [], defaults };
}

// ---------------------------------------------------------------- YAML with lines

type YamlRead =
  | { ok: true; value: unknown; at: (path: (string | number)[]) => number }
  | { ok: false; line: number; message: string };

/** Parsed YAML, and where each value of it is written (for errors that point at the field to fix). */
export function readYaml(text: string): YamlRead {
  const lines = new LineCounter();
  // `merge`: `<<: *base` is how YAML users share fields between items; without it `<<` is an unknown field.
  const doc = parseDocument(text, { lineCounter: lines, merge: true });
  const error = doc.errors[0];
  if (error) return { ok: false, line: error.linePos?.[0].line ?? 1, message: `invalid YAML: ${error.message.split('\n')[0]}` };
  let value: unknown;
  try {
    value = doc.toJS(); // throws on alias bombs
  } catch (err) {
    return { ok: false, line: 1, message: `invalid YAML: ${errorMessage(err).split('\n')[0]}` };
  }
  return { ok: true, value, at: (path) => lineOfPath(lines, doc.contents, path) };
}

/** The line of the deepest part of `path` that is written (a map key's line for a field); 1 when none is. */
function lineOfPath(lines: LineCounter, root: unknown, path: (string | number)[]): number {
  let line = lineOfNode(lines, root) ?? 1;
  let node = root;
  for (const key of path) {
    if (isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === String(key));
      if (!pair) break;
      line = lineOfNode(lines, pair.key) ?? line;
      node = pair.value;
    } else if (isSeq(node) && typeof key === 'number') {
      node = node.items[key];
      line = lineOfNode(lines, node) ?? line;
    } else break;
  }
  return line;
}

function lineOfNode(lines: LineCounter, node: unknown): number | undefined {
  return isNode(node) && node.range ? lines.linePos(node.range[0]).line : undefined;
}
