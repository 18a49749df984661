import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import { errorMessage } from '../errors.js';
import { createLogger } from '../log.js';
import { docker as dockerCall } from '../sandbox/deadline.js';
import { runLabels } from '../sandbox/labels.js';
import { removeContainer } from '../sandbox/reaper.js';
import type { WorkspaceReport } from '../types.js';
import { changedSinceCopy, computeChanges, unifiedPatch } from './changes.js';
import { type PackOptions, type PackPlan, packPlan, planPack } from './pack-dir.js';
import { extractSafely } from './safe-extract.js';

const log = createLogger('workspace');

export interface CopyWorkspaceOptions extends PackOptions {
  docker: Docker;
  runId: string;
  taskDir: string;
  /** Any local image; only used for short-lived helper containers that are never started. */
  image: string;
  progress?: (line: string) => void;
}

/**
 * `--mount copy`: the task dir is copied into a Docker volume of the run's
 * own, every call mounts the volume, and at the end the result is copied out
 * through a safe extraction. The host task dir is never mounted.
 */
export class CopyWorkspace {
  private constructor(
    private readonly options: CopyWorkspaceOptions,
    readonly volume: string,
    readonly plan: PackPlan,
  ) {}

  static async create(options: CopyWorkspaceOptions): Promise<CopyWorkspace> {
    const { docker, runId } = options;
    const plan = planPack(options.taskDir, options);
    const volume = `sandloop-${runId}`;
    await dockerCall(docker.createVolume({ Name: volume, Labels: runLabels(runId) }), 'docker volume create');
    const workspace = new CopyWorkspace(options, volume, plan);
    try {
      await workspace.withHelper(async (helper) => {
        await dockerCall(helper.putArchive(packPlan(options.taskDir, plan) as unknown as NodeJS.ReadableStream, { path: '/' }), 'docker put archive');
      });
    } catch (err) {
      await workspace.close();
      throw err;
    }
    const files = plan.entries.filter((e) => e.type !== 'dir').length;
    options.progress?.(
      `copied ${files} files (${megabytes(plan.bytes)}) into volume ${volume}` +
        (plan.excluded.length ? `; left out: ${plan.excluded.slice(0, 8).join(', ')}${plan.excluded.length > 8 ? ` and ${plan.excluded.length - 8} more` : ''}` : ''),
    );
    return workspace;
  }

  /**
   * Copy the finished workspace to `out/workspace/` (refusing dangerous
   * entries), then write `out/changes.patch` and `out/changes.json`.
   */
  async export(out: string, maxBytes: number): Promise<WorkspaceReport> {
    const dir = resolve(out);
    const finalDir = join(dir, 'workspace');
    mkdirSync(dir, { recursive: true });
    const extracted = await this.withHelper(async (helper) => {
      const tar = (await dockerCall(helper.getArchive({ path: '/workspace' }), 'docker get archive')) as unknown as Readable;
      return extractSafely(tar, finalDir, { strip: 'workspace', maxBytes });
    });
    const changes = computeChanges(this.plan, finalDir);
    const taskDirChanged = changedSinceCopy(this.options.taskDir, this.plan);
    writeFileSync(join(dir, 'changes.patch'), unifiedPatch(changes, this.options.taskDir, finalDir, this.plan));
    const report: WorkspaceReport = {
      mode: 'copy',
      out: dir,
      copied: { files: this.plan.entries.filter((e) => e.type !== 'dir').length, bytes: this.plan.bytes },
      excluded: this.plan.excluded,
      changes,
      rejected: extracted.rejected,
      task_dir_changed: taskDirChanged,
      applied: false,
    };
    this.saveReport(report);
    return report;
  }

  /** Write (or rewrite, after --apply) `changes.json`. */
  saveReport(report: WorkspaceReport): void {
    writeFileSync(join(report.out, 'changes.json'), `${JSON.stringify(report, null, 2)}\n`);
  }

  /** Remove the volume (and any helper left). Safe to call twice. */
  async close(): Promise<void> {
    try {
      await dockerCall(this.options.docker.getVolume(this.volume).remove({ force: true }), 'docker volume remove');
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode !== 404) log(`volume ${this.volume}: ${errorMessage(err)}`);
    }
  }

  /** A container that is never started: only a handle on the volume for the archive API. */
  private async withHelper<T>(work: (helper: Docker.Container) => Promise<T>): Promise<T> {
    const { docker, runId, image } = this.options;
    const helper = await dockerCall(
      docker.createContainer({
        Image: image,
        Cmd: ['true'],
        Labels: runLabels(runId),
        NetworkDisabled: true,
        HostConfig: { Binds: [`${this.volume}:/workspace`], NetworkMode: 'none', LogConfig: { Type: 'none', Config: {} } },
      }),
      'docker create (copy helper)',
    );
    try {
      return await work(helper);
    } finally {
      await removeContainer(docker, helper.id).catch(() => {});
    }
  }
}

export function megabytes(bytes: number): string {
  return bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KB` : `${(bytes / 1024 ** 2).toFixed(1)} MB`;
}
