import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 10_000,
    hookTimeout: 600_000,
    // Docker tests share one daemon with 2 cores; keep file-level parallelism modest.
    maxWorkers: 2,
  },
});
