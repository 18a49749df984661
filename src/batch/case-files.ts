/**
 * Reading `sandloop batch` inputs into cases: finding the prompt files,
 * parsing the three formats (Markdown, JSONL, YAML suites), layering
 * `sandloop.yaml` defaults, and turning every problem into an
 * `InvalidCaseFile` with the line to fix. Only inputs that match nothing
 * throw: a bad file is a result of the batch, not a reason to run nothing.
 * Field rules live in case-schema.ts.
 */
import { readFile, realpath, stat } from 'node:fs/promises';
import { basename, dirname, extname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { glob } from 'tinyglobby';
import { ConfigError, errorMessage } from '../errors.js';
import type { CaseSpec, InvalidCaseFile } from '../types.js';
import {
  caseSchema,
  checkFields,
  defaultsSchema,
  frontMatterSchema,
  mergeFields,
  PER_CASE_ONLY,
  toCaseSpec,
  type CaseFields,
  type Checked,
  type FieldProblem,
} from './case-schema.js';
import { CASE_EXTENSIONS, type RawCase, parseCaseFile, readYaml } from './case-formats.js';

export interface LoadedCases {
  cases: CaseSpec[];
  invalid: InvalidCaseFile[];
}

export interface LoadCasesOptions {
  /** What relative inputs and globs are relative to, and the top of the defaults search for files and globs. Default: process.cwd(). */
  cwd?: string;
}

const DEFAULTS_FILES = ['sandloop.yaml', 'sandloop.yml'];
/** Fixture trees live next to cases and are full of files that look like prompts. */
const SKIPPED_DIRS = ['node_modules', '.git', 'fixtures', 'sandloop-results'];

/**
 * The cases of `inputs` (files, folders, globs), in input order, each folder
 * or glob sorted by path. Throws ConfigError only for an input that matches
 * nothing; every problem in a file is in `invalid` instead.
 */
export async function loadCases(inputs: string[], options: LoadCasesOptions = {}): Promise<LoadedCases> {
  const cwd = resolve(options.cwd ?? process.cwd());
  const found = await findCaseFiles(inputs, cwd);
  const loader = new CaseLoader(cwd);
  // One at a time: the first case to take a name keeps it, so the order must not depend on I/O timing.
  for (const { file, root } of found) await loader.load(file, root);
  return { cases: loader.cases, invalid: loader.invalid };
}

// ---------------------------------------------------------------- discovery

/** A prompt file, and the folder the defaults search stops at (the folder the user named, else cwd). */
interface FoundFile {
  file: string;
  root: string;
}

async function findCaseFiles(inputs: string[], cwd: string): Promise<FoundFile[]> {
  const found = new Map<string, FoundFile>();
  for (const input of inputs) {
    const { files, root } = await expandInput(input, cwd);
    for (const file of files) {
      // Keyed by real path: `cases/` and `cases/*.md`, or a symlink, reach the same file twice.
      const real = await realpath(file);
      if (!found.has(real)) found.set(real, { file, root });
    }
  }
  return [...found.values()];
}

async function expandInput(input: string, cwd: string): Promise<{ files: string[]; root: string }> {
  const abs = resolve(cwd, input);
  const st = await stat(abs).catch(() => undefined);
  // An existing path wins over glob syntax: `case[1].md` is a file name before it is a pattern.
  if (st?.isFile()) return { files: [abs], root: cwd };
  if (st?.isDirectory()) return { files: matched(input, await filesUnder(abs)), root: abs };
  if (st) throw new ConfigError(`${input} is not a file or a folder`);
  if (/[*?[{]/.test(input)) return { files: matched(input, await globbed(input, cwd)), root: cwd };
  throw new ConfigError(`${input} does not exist`);
}

function matched(input: string, files: string[]): string[] {
  if (files.length === 0) throw new ConfigError(`no prompt files match '${input}'`);
  return files.sort();
}

async function filesUnder(dir: string): Promise<string[]> {
  const ignore = SKIPPED_DIRS.map((d) => `**/${d}/**`);
  const files = await glob('**/*', { cwd: dir, absolute: true, dot: true, onlyFiles: true, ignore });
  // A batch's results dir (it holds results.jsonl) is full of transcripts and workspace copies: never cases.
  const resultDirs = files.filter((f) => basename(f) === 'results.jsonl').map((f) => dirname(f) + sep);
  return files.filter((f) => isCaseFile(relative(dir, f)) && !resultDirs.some((d) => f.startsWith(d)));
}

/** The file rules apply below the pattern's fixed prefix, so `test/fixtures/*.md` still means what it says. */
async function globbed(pattern: string, cwd: string): Promise<string[]> {
  const files = await glob(pattern, { cwd, absolute: true, onlyFiles: true, ignore: ['**/node_modules/**', '**/.git/**'] });
  const base = resolve(cwd, fixedPrefix(pattern));
  return files.filter((f) => isCaseFile(relative(base, f)));
}

function fixedPrefix(pattern: string): string {
  const parts = pattern.split('/');
  const firstMagic = parts.findIndex((p) => /[*?[{]/.test(p));
  return parts.slice(0, firstMagic).join('/') || '.';
}

/** `rel` is relative to the folder searched. */
function isCaseFile(rel: string): boolean {
  const parts = rel.split(/[\\/]/);
  const name = parts.pop()!;
  return (
    CASE_EXTENSIONS.includes(extname(name).toLowerCase()) &&
    !DEFAULTS_FILES.includes(name) &&
    name.toLowerCase() !== 'readme.md' &&
    !parts.some((d) => SKIPPED_DIRS.includes(d))
  );
}

// ---------------------------------------------------------------- assembling

class CaseLoader {
  readonly cases: CaseSpec[] = [];
  readonly invalid: InvalidCaseFile[] = [];
  private readonly names = new Map<string, { file: string; line: number }>();
  private readonly defaults = new DefaultsFiles();
  private readonly reportedDefaults = new Set<string>();

  constructor(private readonly cwd: string) {}

  async load(file: string, root: string): Promise<void> {
    const chain = await this.defaults.chain(dirname(file), root);
    const broken = chain.filter((d) => d.problems.length > 0);
    if (broken.length > 0) return this.reportBrokenDefaults(file, broken);
    let text: string;
    try {
      text = (await readFile(file, 'utf8')).replace(/^\uFEFF/, '');
    } catch (err) {
      this.invalid.push({ file, line: 1, message: `file: cannot be read: ${errorMessage(err)}` });
      return;
    }
    const parsed = parseCaseFile(file, text);
    this.invalid.push(...parsed.problems);
    const layers = [...chain.map((d) => d.fields), ...(parsed.defaults ? [parsed.defaults] : [])];
    for (const raw of parsed.cases) this.add(raw, file, layers);
  }

  /** A broken defaults file spoils every case below it: its own problems once, then one entry per case file. */
  private reportBrokenDefaults(file: string, broken: DefaultsFile[]): void {
    for (const d of broken) {
      if (this.reportedDefaults.has(d.file)) continue;
      this.reportedDefaults.add(d.file);
      this.invalid.push(...d.problems);
    }
    const which = broken.map((d) => this.show(d.file)).join(' and ');
    this.invalid.push({ file, line: 1, message: `defaults: ${which} ${broken.length > 1 ? 'are' : 'is'} invalid, so this file's cases are not run` });
  }

  private add(raw: RawCase, file: string, layers: CaseFields[]): void {
    const checked = checkCase(raw, dirname(file));
    if (!checked.ok) {
      const problems = checked.problems.map((p) => ({ file, line: raw.lineOf(p.path), message: p.message }));
      this.invalid.push(...problems.sort((a, b) => a.line - b.line)); // in the file's order, not the schema's
      return;
    }
    const { name = raw.defaultName, prompt, ...own } = checked.value;
    const first = this.names.get(name);
    if (first) {
      const both = `${this.show(first.file)}:${first.line} and ${this.show(file)}:${raw.line}`;
      this.invalid.push({ file, line: raw.lineOf(['name']), message: `name: duplicate "${name}" (${both})` });
      return;
    }
    this.names.set(name, { file, line: raw.line });
    this.cases.push(toCaseSpec({ name, prompt, file, line: raw.line }, mergeFields([...layers, own])));
  }

  /** Paths in messages: relative to cwd when below it, for short lines; absolute otherwise. */
  private show(file: string): string {
    const rel = relative(this.cwd, file);
    return rel.startsWith('..') || isAbsolute(rel) ? file : rel;
  }
}

type CheckedCase = CaseFields & { name?: string; prompt: string };

function checkCase(raw: RawCase, dir: string): Checked<CheckedCase> {
  if (raw.body === undefined) return checkFields(caseSchema(dir), raw.value, { what: 'case' });
  const misplaced = { prompt: 'not allowed in front matter (the Markdown body is the prompt)' };
  const checked = checkFields(frontMatterSchema(dir), raw.value, { what: 'front matter', misplaced });
  const problems: FieldProblem[] = checked.ok ? [] : checked.problems;
  if (raw.body === '') problems.push({ path: [], message: 'prompt: missing (the Markdown body is empty)' });
  if (!checked.ok || problems.length > 0) return { ok: false, problems };
  return { ok: true, value: { ...checked.value, prompt: raw.body } };
}

// ---------------------------------------------------------------- defaults files

interface DefaultsFile {
  file: string;
  fields: CaseFields;
  problems: InvalidCaseFile[];
}

/** sandloop.yaml files by folder, each read once however many cases sit below it. */
class DefaultsFiles {
  private readonly byDir = new Map<string, Promise<DefaultsFile | undefined>>();

  /** The defaults files that apply to a case file in `dir`, farthest first. */
  async chain(dir: string, root: string): Promise<DefaultsFile[]> {
    const found = await Promise.all(foldersFrom(root, dir).map((d) => this.at(d)));
    return found.filter((d): d is DefaultsFile => d !== undefined);
  }

  private at(dir: string): Promise<DefaultsFile | undefined> {
    let found = this.byDir.get(dir);
    if (!found) this.byDir.set(dir, (found = readDefaults(dir)));
    return found;
  }
}

/** `root` down to `dir`. A file outside `root` (`../x.md` from cwd) gets its own folder's defaults only. */
function foldersFrom(root: string, dir: string): string[] {
  const rel = relative(root, dir);
  if (rel.startsWith('..') || isAbsolute(rel)) return [dir];
  const parts = rel === '' ? [] : rel.split(/[\\/]/);
  return [root, ...parts.map((_, i) => join(root, ...parts.slice(0, i + 1)))];
}

async function readDefaults(dir: string): Promise<DefaultsFile | undefined> {
  const present: string[] = [];
  for (const name of DEFAULTS_FILES) if ((await stat(join(dir, name)).catch(() => undefined))?.isFile()) present.push(join(dir, name));
  const [file, other] = present;
  if (!file) return undefined;
  // Silently preferring one would leave the user editing a file that is ignored.
  if (other) return brokenDefaults(other, 1, `file: ${dir} has both sandloop.yaml and sandloop.yml; keep one`);
  try {
    return parseDefaults(file, (await readFile(file, 'utf8')).replace(/^\uFEFF/, ''));
  } catch (err) {
    return brokenDefaults(file, 1, `file: cannot be read: ${errorMessage(err)}`);
  }
}

function parseDefaults(file: string, text: string): DefaultsFile {
  const yaml = readYaml(text);
  if (!yaml.ok) return brokenDefaults(file, yaml.line, yaml.message);
  if (yaml.value === null) return { file, fields: {}, problems: [] }; // an empty file: nothing to set
  const checked = checkFields(defaultsSchema(dirname(file)), yaml.value, { what: 'defaults', misplaced: PER_CASE_ONLY });
  if (checked.ok) return { file, fields: checked.value, problems: [] };
  return { file, fields: {}, problems: checked.problems.map((p) => ({ file, line: yaml.at(p.path), message: p.message })) };
}

function brokenDefaults(file: string, line: number, message: string): DefaultsFile {
  return { file, fields: {}, problems: [{ file, line, message }] };
}
