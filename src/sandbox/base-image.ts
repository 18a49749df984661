import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { ImageBuildError, errorMessage } from '../errors.js';
import { docker as dockerCall, withDeadline } from './deadline.js';

export type Progress = (line: string) => void;

const PULL_MS = 120_000;
const BOOTSTRAP_MS = 20 * 60_000;

/** Debian code names a bootstrap can serve, keyed by the tag of `debian:<tag>`. */
export function debianSuite(image: string): string | undefined {
  const m = /^(?:docker\.io\/)?(?:library\/)?debian:([a-z]+)(?:-slim)?$/.exec(image);
  return m?.[1];
}

/** Does the daemon already have this image? */
export async function hasImage(docker: Docker, name: string): Promise<boolean> {
  try {
    await dockerCall(docker.getImage(name).inspect(), 'docker image inspect');
    return true;
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return false;
    throw err;
  }
}

/** Pull an image, consuming the progress stream and scanning it for in-band errors. */
export async function pullImage(docker: Docker, name: string, progress: Progress): Promise<void> {
  const stream = await withDeadline(docker.pull(name), PULL_MS, `docker pull ${name}`);
  await withDeadline(followProgress(docker, stream, progress), PULL_MS, `docker pull ${name}`);
}

/** Resolve when a progress stream ends; reject on an `{error}` object inside it. */
export function followProgress(docker: Docker, stream: NodeJS.ReadableStream, progress: Progress): Promise<void> {
  return new Promise((resolve, reject) => {
    docker.modem.followProgress(
      stream,
      (err: Error | null) => (err ? reject(err) : resolve()),
      (event: { error?: string; errorDetail?: { message?: string }; stream?: string; status?: string; id?: string }) => {
        if (event.error || event.errorDetail) {
          reject(new ImageBuildError(event.errorDetail?.message ?? event.error ?? 'unknown build error'));
          return;
        }
        const line = (event.stream ?? (event.status ? `${event.id ? `${event.id}: ` : ''}${event.status}` : '')).trimEnd();
        if (line) progress(line);
      },
    );
  });
}

/**
 * The host's Debian mirror for `suite`, as apt itself reports it. Nothing is
 * hard-coded: the mirror of an air-gapped machine is whatever its apt uses.
 */
export function hostDebianMirror(suite: string): string | undefined {
  const res = spawnSync('apt-get', ['indextargets', '--format', '$(REPO_URI) $(RELEASE)'], { encoding: 'utf8' });
  if (res.status !== 0 || !res.stdout) return undefined;
  for (const line of res.stdout.split('\n')) {
    const [uri, release] = line.trim().split(/\s+/);
    if (uri && release === suite) return uri;
  }
  return undefined;
}

function onPath(cmd: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
}

/**
 * Build a Debian base image without a registry: debootstrap a minbase rootfs
 * from the host's mirror, then `docker import` it under `name`.
 */
export async function bootstrapBaseImage(docker: Docker, name: string, progress: Progress, mirror?: string): Promise<void> {
  const suite = debianSuite(name);
  if (!suite) throw new ImageBuildError(`cannot bootstrap ${name}: only debian:<suite> base images can be built offline`);
  if (process.getuid?.() !== 0) {
    throw new ImageBuildError(`cannot bootstrap ${name}: debootstrap needs root; run \`sudo sandloop image build --offline\``);
  }
  if (!onPath('debootstrap')) {
    throw new ImageBuildError(`cannot bootstrap ${name}: debootstrap is not installed; install it with \`apt-get install debootstrap\``);
  }
  const source = mirror ?? hostDebianMirror(suite);
  if (!source) {
    throw new ImageBuildError(`cannot bootstrap ${name}: this machine's apt configuration has no mirror for ${suite}; pass --mirror URL`);
  }
  const root = await mkdtemp(join(tmpdir(), 'sandloop-rootfs-'));
  try {
    progress(`bootstrapping ${name} with debootstrap --variant=minbase ${suite} from ${source} (about a minute)...`);
    await run('debootstrap', ['--variant=minbase', suite, root, source], progress);
    progress(`importing the rootfs as ${name}...`);
    const [repo, tag] = name.split(':') as [string, string];
    const tar = spawn('tar', ['-C', root, '-c', '.'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const stream = await withDeadline(docker.importImage(tar.stdout, { repo, tag }), BOOTSTRAP_MS, 'docker import');
    await withDeadline(followProgress(docker, stream, () => {}), BOOTSTRAP_MS, 'docker import');
    progress(`imported ${name}`);
  } finally {
    await rm(root, { recursive: true, force: true }).catch(() => {});
  }
}

function run(cmd: string, args: string[], progress: Progress): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const tail: string[] = [];
    const onData = (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (!line.trim()) continue;
        tail.push(line);
        if (tail.length > 20) tail.shift();
        progress(line);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    const timer = setTimeout(() => child.kill('SIGKILL'), BOOTSTRAP_MS);
    child.on('error', (err) => reject(new ImageBuildError(`${cmd} failed to start: ${errorMessage(err)}`)));
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new ImageBuildError(`${cmd} exited with ${code}: ${tail.slice(-3).join(' | ')}`));
    });
  });
}
