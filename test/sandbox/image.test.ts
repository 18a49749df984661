import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, inject, it, vi } from 'vitest';
import { ImageBuildError } from '../../src/errors.js';
import { bootstrapBaseImage, debianSuite, hostDebianMirror } from '../../src/sandbox/base-image.js';
import { connectDocker } from '../../src/sandbox/docker-client.js';
import { baseImageOf, buildSandboxImage } from '../../src/sandbox/image.js';
import { describeDocker } from '../helpers/docker.js';

afterEach(() => vi.restoreAllMocks());

it('reads the base image and the Debian suite', () => {
  expect(baseImageOf('# c\nFROM debian:bookworm-slim\nRUN x')).toBe('debian:bookworm-slim');
  expect(debianSuite('debian:bookworm-slim')).toBe('bookworm');
  expect(debianSuite('docker.io/library/debian:trixie')).toBe('trixie');
  expect(debianSuite('ubuntu:24.04')).toBeUndefined();
});

it("finds the host's mirror from apt itself", () => {
  const mirror = hostDebianMirror('bookworm');
  expect(mirror).toMatch(/^(https?|file):\/\//);
});

describeDocker('image build (real Docker)', () => {
  it('fails with the in-band build error instead of reporting success', { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sandloop-img-'));
    const dockerfile = join(dir, 'Dockerfile');
    writeFileSync(dockerfile, `FROM ${inject('image')}\nRUN echo about to fail && exit 7\n`);
    const lines: string[] = [];
    const err = await buildSandboxImage(await connectDocker(), { tag: 'sandloop-test-broken:latest', dockerfile, progress: (l) => lines.push(l) }).catch((e) => e);
    expect(err).toBeInstanceOf(ImageBuildError);
    expect(err.message).toMatch(/returned a non-zero code: 7/);
    expect(lines.join('\n')).toContain('about to fail');
  });

  it('refuses the offline bootstrap without root, saying what to do', async () => {
    vi.spyOn(process, 'getuid').mockReturnValue(1000);
    const err = await bootstrapBaseImage(await connectDocker(), 'debian:trixie-slim', () => {}).catch((e) => e);
    expect(err).toBeInstanceOf(ImageBuildError);
    expect(err.message).toBe('cannot bootstrap debian:trixie-slim: debootstrap needs root; run `sudo sandloop image build --offline`');
  });
});
