/**
 * Namespaced debug logging to stderr, enabled by `--verbose` or
 * `DEBUG=sandloop:*` (or a specific namespace such as `DEBUG=sandloop:docker`).
 */
let verbose = false;

export function setVerbose(on: boolean): void {
  verbose = on;
}

function enabled(namespace: string): boolean {
  if (verbose) return true;
  const patterns = (process.env.DEBUG ?? '').split(/[\s,]+/).filter(Boolean);
  return patterns.some((p) => p === namespace || (p.endsWith('*') && namespace.startsWith(p.slice(0, -1))));
}

export type Logger = (message: string) => void;

/** `createLogger('docker')` logs lines like `sandloop:docker 3f2a9c1b0d1e doing start...`. */
export function createLogger(name: string): Logger {
  const namespace = `sandloop:${name}`;
  return (message) => {
    if (enabled(namespace)) process.stderr.write(`${namespace} ${message}\n`);
  };
}
