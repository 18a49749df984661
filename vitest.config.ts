import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 10_000,
    hookTimeout: 600_000,
    // One file at a time: Docker tests share one daemon, and the cleanup tests
    // watch for leftovers that another file's start-up sweep would remove.
    fileParallelism: false,
  },
});
