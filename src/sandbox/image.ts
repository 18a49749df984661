import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type Docker from 'dockerode';
import { pack } from 'tar-stream';
import { ConfigError, ImageBuildError, errorMessage } from '../errors.js';
import { createLogger } from '../log.js';
import { type Progress, bootstrapBaseImage, followProgress, hasImage, pullImage } from './base-image.js';
import { withDeadline } from './deadline.js';

const log = createLogger('image');
export const DEFAULT_IMAGE = 'sandloop-sandbox:latest';
const BUILD_MS = 30 * 60_000;

/** The Dockerfile shipped with the package, at its root (found from dist/sandbox/ or any build dir below the root). */
export const SANDBOX_DOCKERFILE =
  ['../../sandbox.Dockerfile', '../../../sandbox.Dockerfile'].map((p) => fileURLToPath(new URL(p, import.meta.url))).find((p) => existsSync(p)) ??
  fileURLToPath(new URL('../../sandbox.Dockerfile', import.meta.url));

export interface BuildImageOptions {
  /** Tag to build, default `sandloop-sandbox:latest`. */
  tag?: string;
  /** Skip the registry and bootstrap the base image with debootstrap. */
  offline?: boolean;
  /** Debian mirror for the bootstrap; default: the one the host's apt uses. */
  mirror?: string;
  /** Path of the Dockerfile, default the packaged sandbox.Dockerfile. */
  dockerfile?: string;
  progress?: Progress;
}

/** The image named by the Dockerfile's first FROM line. */
export function baseImageOf(dockerfile: string): string {
  const m = /^\s*FROM\s+(?:--platform=\S+\s+)?(\S+)/im.exec(dockerfile);
  if (!m) throw new ImageBuildError('the sandbox Dockerfile has no FROM line');
  return m[1]!;
}

/**
 * Build the sandbox image through the Docker API. When the base image is not
 * local and cannot be pulled (or `offline` is set), bootstrap it first.
 */
export async function buildSandboxImage(docker: Docker, options: BuildImageOptions = {}): Promise<string> {
  const tag = options.tag ?? DEFAULT_IMAGE;
  const progress = options.progress ?? log;
  const dockerfile = await readFile(options.dockerfile ?? SANDBOX_DOCKERFILE, 'utf8');
  const base = baseImageOf(dockerfile);
  await ensureBaseImage(docker, base, options, progress);

  progress(`building ${tag} from ${base}...`);
  const context = pack();
  context.entry({ name: 'Dockerfile' }, dockerfile);
  context.finalize();
  const stream = await withDeadline(
    docker.buildImage(context as unknown as NodeJS.ReadableStream, { t: tag, dockerfile: 'Dockerfile', forcerm: true }),
    BUILD_MS,
    'docker build',
  );
  await withDeadline(followProgress(docker, stream, progress), BUILD_MS, 'docker build');
  if (!(await hasImage(docker, tag))) throw new ImageBuildError(`docker build finished but ${tag} is missing`);
  progress(`built ${tag}`);
  return tag;
}

async function ensureBaseImage(docker: Docker, base: string, options: BuildImageOptions, progress: Progress): Promise<void> {
  if (await hasImage(docker, base)) return;
  if (!options.offline) {
    progress(`pulling ${base}...`);
    try {
      await pullImage(docker, base, progress);
      return;
    } catch (err) {
      progress(`cannot pull ${base} (${errorMessage(err)}); building it offline instead`);
    }
  }
  await bootstrapBaseImage(docker, base, progress, options.mirror);
}

/** The lines of a build worth showing when the user did not ask for a build. */
const MILESTONE = /^(Step \d+\/\d+|Successfully (built|tagged)|pulling|cannot pull|bootstrapping|importing|imported|building|built|I: Base system installed)/;

/** Make sure `image` exists; build it (saying so) when it is the default image and missing. */
export async function ensureImage(docker: Docker, image: string, progress: Progress): Promise<void> {
  if (await hasImage(docker, image)) return;
  if (image !== DEFAULT_IMAGE) {
    throw new ConfigError(`--image ${image} does not exist; build it with \`sandloop image build --image ${image}\` or pull it`);
  }
  progress(`the sandbox image ${image} is missing; building it now (once, about a minute; \`sandloop image build\` shows every line)...`);
  await buildSandboxImage(docker, { tag: image, progress: (line) => MILESTONE.test(line) && progress(line) });
}
