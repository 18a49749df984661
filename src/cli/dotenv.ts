import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import { ConfigError, errorMessage } from '../errors.js';

/**
 * The environment sandloop reads its settings from: process.env over the
 * `.env` file of the current directory (as in the seed). It is never passed
 * into a container.
 */
/** The .env file sandloop reads settings (and perhaps the API key) from: never to be shown to a container. */
export function dotEnvFile(cwd = process.cwd()): string {
  return join(cwd, '.env');
}

export function loadEnvironment(cwd = process.cwd()): Record<string, string | undefined> {
  let text: string;
  try {
    text = readFileSync(join(cwd, '.env'), 'utf8');
  } catch {
    return { ...process.env };
  }
  try {
    return { ...parseEnv(text), ...process.env };
  } catch (err) {
    throw new ConfigError(`cannot parse ${join(cwd, '.env')}: ${errorMessage(err)}`);
  }
}
