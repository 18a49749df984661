import { setVerbose } from '../log.js';
import { connectDocker } from '../sandbox/docker-client.js';
import { DEFAULT_IMAGE, buildSandboxImage } from '../sandbox/image.js';
import { terminalSafe } from './terminal-safe.js';

export interface ImageBuildArgs {
  image?: string;
  offline: boolean;
  mirror?: string;
  quiet: boolean;
  verbose: boolean;
}

/** `sandloop image build`: build the sandbox image, bootstrapping the base offline when needed. */
export async function imageBuildCommand(args: ImageBuildArgs): Promise<number> {
  setVerbose(args.verbose);
  const docker = await connectDocker();
  const progress = args.quiet ? () => {} : (line: string) => process.stderr.write(`${terminalSafe(line)}\n`);
  const tag = await buildSandboxImage(docker, { tag: args.image ?? DEFAULT_IMAGE, offline: args.offline, mirror: args.mirror, progress });
  process.stdout.write(`${tag}\n`);
  return 0;
}
