import type { TestProject } from 'vitest/node';
import { connectDocker } from '../src/sandbox/docker-client.js';
import { DEFAULT_IMAGE, buildSandboxImage } from '../src/sandbox/image.js';
import { hasImage } from '../src/sandbox/base-image.js';
import { listRunContainers, listRunVolumes, removeLeftovers } from '../src/sandbox/reaper.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Why Docker tests cannot run here, or '' when they can. */
    dockerMissing: string;
    image: string;
  }
}

/**
 * Find Docker and make sure the sandbox image exists, building it through the
 * product's own path (air-gapped bootstrap included) when it is missing.
 * Under CI=true a missing Docker fails the run instead of skipping tests.
 */
export default async function setup(project: TestProject): Promise<(() => Promise<void>) | void> {
  project.provide('image', DEFAULT_IMAGE);
  let docker;
  try {
    docker = await connectDocker();
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    if (process.env.CI === 'true') throw new Error(`CI=true and Docker is not available, so the Docker tests cannot run: ${why}`);
    process.stderr.write(`\n!!! Docker tests will be SKIPPED: ${why}\n\n`);
    project.provide('dockerMissing', why);
    return;
  }
  project.provide('dockerMissing', '');
  if (!(await hasImage(docker, DEFAULT_IMAGE))) {
    process.stderr.write(`building ${DEFAULT_IMAGE} for the tests (once)...\n`);
    await buildSandboxImage(docker, { progress: (line) => process.stderr.write(`  ${line}\n`) });
  }
  const all = async () => [...(await listRunContainers(docker)), ...(await listRunVolumes(docker))];
  const before = new Set((await all()).map((c) => c.id));
  // A leak fails the run: no test may leave a sandloop container or volume behind.
  return async () => {
    const leaked = (await all()).filter((c) => !before.has(c.id));
    if (leaked.length > 0) {
      await removeLeftovers(docker, leaked);
      // vitest reports a teardown error but keeps exit code 0: set it ourselves.
      process.exitCode = 1;
      throw new Error(`the tests left ${leaked.length} sandloop containers or volumes behind: ${leaked.map((c) => `${c.kind} ${c.id.slice(0, 12)} (run ${c.runId})`).join(', ')}`);
    }
  };
}
