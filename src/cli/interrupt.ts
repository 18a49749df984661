import { EXIT } from './exit-codes.js';

/**
 * First Ctrl-C or SIGTERM aborts the run (containers are killed and removed,
 * what was done is printed); a second one exits at once.
 * Returns a function that removes the handlers.
 */
export function abortOnSignals(controller: AbortController, say: (line: string) => void): () => void {
  let count = 0;
  const handler = (signal: NodeJS.Signals) => {
    count++;
    if (count === 1) {
      say(`${signal}: stopping the run and removing its containers... (press Ctrl-C again to exit at once)`);
      controller.abort();
    } else {
      say(`${signal} again: exiting now; leftover containers carry the label sandloop.run`);
      process.exit(EXIT.aborted);
    }
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return () => {
    process.off('SIGINT', handler);
    process.off('SIGTERM', handler);
  };
}
