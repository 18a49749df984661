/**
 * The fields of a batch case and how they are checked.
 *
 * Fields can be written in three places: a case (a suite item, a JSONL line,
 * Markdown front matter), a suite's `defaults:` and a `sandloop.yaml`. Each
 * place gets its own strict zod schema, all built from one field list so they
 * cannot drift apart. Relative paths (`fixture`, `scripted:` models) are
 * resolved while parsing, against the folder of the file that wrote them:
 * that is why the schemas are built per folder, and why layers can then be
 * merged without remembering where each value came from.
 */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import type { CaseSpec } from '../types.js';

/** A problem in parsed fields: the message, and the path into the value so the caller can find its line. */
export interface FieldProblem {
  path: (string | number)[];
  message: string;
}

/** Blank text (a prompt or a check of only spaces) is a mistake, not a value. */
const text = () => z.string().regex(/\S/);

const SCRIPTED = 'scripted:';

/** The fields every layer may set. `.describe()` is the "expected ..." of the error message. */
function fieldShape(dir: string) {
  return {
    fixture: z
      .string()
      .min(1)
      .transform((p, ctx) => existing(dir, p, 'directory', ctx))
      .optional()
      .describe('a directory path'),
    max_turns: z.number().int().positive().optional().describe('a positive integer'),
    timeout: z.number().positive().finite().optional().describe('a positive number of seconds'),
    model: z
      .string()
      .regex(/\S/)
      .transform((m, ctx) => resolveModel(dir, m, ctx))
      .optional()
      .describe('a model id or scripted:FILE'),
    checks: z.array(text()).optional().describe('a list of non-empty strings'),
    expect: z.string().superRefine(compiles).optional().describe('a regular expression'),
    repeat: z.number().int().positive().optional().describe('a positive integer'),
    // `tags: smoke` is how people write a single tag; accept it rather than nag.
    tags: z
      .union([z.string(), z.array(z.string())])
      .transform((t) => (typeof t === 'string' ? [t] : t))
      .optional()
      .describe('a string or a list of strings'),
  };
}

const nameField = () => text().optional().describe('a non-empty string');

/** `sandloop.yaml` and a suite's `defaults:`: everything but `name` and `prompt`. */
export function defaultsSchema(dir: string) {
  return z.object(fieldShape(dir)).strict();
}

/** A suite item or a JSONL line. */
export function caseSchema(dir: string) {
  return z.object({ name: nameField(), prompt: text().describe('a non-empty string'), ...fieldShape(dir) }).strict();
}

/** Markdown front matter: the body is the prompt, so `prompt` is not a field here. */
export function frontMatterSchema(dir: string) {
  return z.object({ name: nameField(), ...fieldShape(dir) }).strict();
}

/** The outside of a YAML suite given as a map; its `defaults` are checked on their own, for their lines. */
export const suiteSchema = z
  .object({ cases: z.array(z.unknown()).describe('a list of cases'), defaults: z.unknown().optional() })
  .strict();

/** Fields only a case can have: naming them in defaults is a mistake worth its own message. */
export const PER_CASE_ONLY = {
  name: 'not allowed in defaults (each case has its own)',
  prompt: 'not allowed in defaults (each case has its own)',
};

/** Fields after parsing, paths absolute. What one layer contributes. */
export type CaseFields = z.output<ReturnType<typeof defaultsSchema>>;

export interface CheckContext {
  /** What the whole value is, for when it is not an object at all: `case`, `defaults`, `front matter`. */
  what: string;
  /** What the whole value should have been. Default: key: value pairs. */
  expected?: string;
  /** Known fields that are not allowed in this place, with why (instead of "unknown field"). */
  misplaced?: Record<string, string>;
}

export type Checked<T> = { ok: true; value: T } | { ok: false; problems: FieldProblem[] };

/** Parse `value` with `schema`; on failure, every problem as `field: what was wrong`. */
export function checkFields<S extends z.AnyZodObject>(schema: S, value: unknown, context: CheckContext): Checked<z.output<S>> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return { ok: true, value: parsed.data };
  const problems = parsed.error.issues.flatMap((issue) => describeIssue(issue, schema, value, context));
  // `-1.5` as max_turns breaks both int() and positive(): say it once.
  const unique = new Map(problems.map((p) => [p.message, p]));
  return { ok: false, problems: [...unique.values()] };
}

function describeIssue(issue: z.ZodIssue, schema: z.AnyZodObject, value: unknown, context: CheckContext): FieldProblem[] {
  if (issue.code === 'unrecognized_keys') {
    return issue.keys.map((key) => ({ path: [...issue.path, key], message: `${key}: ${context.misplaced?.[key] ?? 'unknown field'}` }));
  }
  const field = issue.path[0];
  if (field === undefined) return [{ path: [], message: `${context.what}: expected ${context.expected ?? 'key: value pairs'}, got ${show(value)}` }];
  const given = (value as Record<string | number, unknown>)[field];
  const fieldSchema = schema.shape[field] as z.ZodTypeAny | undefined;
  // Refinements and transforms word their own problem; type and range errors all read "expected <description>".
  const problem =
    issue.code === 'custom'
      ? issue.message
      : given === undefined
        ? 'missing'
        : `expected ${fieldSchema?.description ?? 'another value'}, got ${show(given)}`;
  return [{ path: issue.path, message: `${field}: ${problem}` }];
}

/** A value as the user wrote it, short enough for one line. */
function show(value: unknown): string {
  const s = JSON.stringify(value) ?? String(value);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/** `path` resolved against `dir`, when it exists and is a `kind`; an issue otherwise. */
function existing(dir: string, path: string, kind: 'directory' | 'file', ctx: z.RefinementCtx, label = path): string {
  const abs = resolve(dir, path);
  const problem = pathProblem(abs, kind);
  if (problem) ctx.addIssue({ code: 'custom', message: `${label} ${problem}` });
  return abs;
}

function pathProblem(abs: string, kind: 'directory' | 'file'): string | undefined {
  try {
    const st = statSync(abs);
    if (kind === 'directory' ? !st.isDirectory() : !st.isFile()) return `is not a ${kind}`;
    return undefined;
  } catch {
    return 'does not exist';
  }
}

/** `scripted:FILE` is resolved (and checked) here, so a case runs the same from any working directory. */
function resolveModel(dir: string, model: string, ctx: z.RefinementCtx): string {
  if (!model.startsWith(SCRIPTED)) return model;
  const path = model.slice(SCRIPTED.length);
  if (path === '') {
    ctx.addIssue({ code: 'custom', message: `${SCRIPTED} needs a file path` });
    return model;
  }
  return SCRIPTED + existing(dir, path, 'file', ctx, `scripted file ${path}`);
}

/**
 * `expect` as a RegExp: a leading `(?i)` (as in Python and Go) makes it
 * case-insensitive, since JS has no inline flags.
 */
export function expectRegExp(pattern: string): RegExp {
  return pattern.startsWith('(?i)') ? new RegExp(pattern.slice(4), 'i') : new RegExp(pattern);
}

/** A bad `expect` is caught when the files are read, not after a paid-for episode. */
function compiles(pattern: string, ctx: z.RefinementCtx): void {
  try {
    expectRegExp(pattern);
  } catch (err) {
    // V8: "Invalid regular expression: /(a/: Unterminated group": keep the part after the pattern.
    const message = err instanceof Error ? err.message : String(err);
    const reason = /^Invalid regular expression: \/.*\/[a-z]*: (.*)$/s.exec(message)?.[1] ?? message;
    ctx.addIssue({ code: 'custom', message: `not a valid regular expression: ${reason}` });
  }
}

/** Layers, farthest first: a nearer layer's field replaces a farther one's (lists are replaced, not joined). */
export function mergeFields(layers: CaseFields[]): CaseFields {
  const merged: Record<string, unknown> = {};
  for (const layer of layers) {
    for (const [key, value] of Object.entries(layer)) if (value !== undefined) merged[key] = value;
  }
  return merged as CaseFields;
}

/** The CaseSpec of a checked case: defaults filled in, absent fields left out. */
export function toCaseSpec(head: { name: string; prompt: string; file: string; line: number }, fields: CaseFields): CaseSpec {
  return { ...head, ...mergeFields([fields]), checks: fields.checks ?? [], repeat: fields.repeat ?? 1, tags: fields.tags ?? [] };
}
