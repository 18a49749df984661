import { execFile } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { promisify } from 'node:util';
import type Docker from 'dockerode';

const run = promisify(execFile);

/** 1. The naive script: `docker run --rm IMAGE bash -c CMD` through the docker CLI. */
export async function dockerRunCli(image: string, cmd: string): Promise<string> {
  const { stdout } = await run('docker', ['run', '--rm', '--network', 'none', image, 'bash', '-c', cmd]);
  return stdout;
}

/** 2. dockerode per call: create, attach, start, wait, remove. */
export async function dockerodePerCall(docker: Docker, image: string, cmd: string): Promise<string> {
  const c = await docker.createContainer({ Image: image, Cmd: ['bash', '-c', cmd], Tty: false, HostConfig: { NetworkMode: 'none' } });
  try {
    const stream = await c.attach({ stream: true, stdout: true, stderr: true });
    let text = '';
    const out = new PassThrough().on('data', (d) => (text += d));
    const ended = new Promise((r) => stream.once('end', r));
    docker.modem.demuxStream(stream, out, new PassThrough().resume());
    await c.start();
    await c.wait();
    await ended;
    return text;
  } finally {
    await c.remove({ force: true });
  }
}

/** 3. One long-lived container, `docker exec` per call (the mini-swe-agent and Inspect design). */
export async function longLived(docker: Docker, image: string) {
  const c = await docker.createContainer({ Image: image, Cmd: ['sleep', 'infinity'], Tty: false, HostConfig: { NetworkMode: 'none', Init: true } });
  await c.start();
  return {
    async exec(cmd: string): Promise<string> {
      const exec = await c.exec({ Cmd: ['bash', '-c', cmd], AttachStdout: true, AttachStderr: true });
      const stream = await exec.start({ hijack: true, stdin: false });
      let text = '';
      const out = new PassThrough().on('data', (d) => (text += d));
      docker.modem.demuxStream(stream, out, new PassThrough().resume());
      await new Promise((r) => stream.once('end', r));
      await exec.inspect();
      return text;
    },
    remove: () => c.remove({ force: true }),
  };
}
