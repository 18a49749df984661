import type Docker from 'dockerode';
import { errorMessage } from '../errors.js';
import { createLogger } from '../log.js';
import { type ContainerSpec, createOptions } from './container-spec.js';
import { docker as dockerCall } from './deadline.js';
import { FifoChannel, runnerScript } from './fifo-channel.js';
import { removeContainer } from './reaper.js';

const log = createLogger('pool');

export interface WarmPoolOptions {
  docker: Docker;
  spec: ContainerSpec;
  /** Containers kept ready when demand is low. Default 2. */
  minReady?: number;
  /** Most containers kept ready when the model asks for several calls per turn. Default 4. */
  maxReady?: number;
  /** A waiting container exits by itself after this many idle seconds. Default 600. */
  idleSeconds?: number;
}

/** A started container whose runner waits on its channel for exactly one command. */
export interface WarmContainer {
  id: string;
  channel: FifoChannel;
  /** Resolves when the container exits (a `wait` issued ahead of time, off the hot path). */
  exited: Promise<number>;
  readyAt: number;
}

/**
 * Containers created and started ahead of time with the call's exact
 * settings, each serving one call. The pool refills as soon as one is taken,
 * so the next call finds one ready while the model is still thinking.
 */
export class WarmPool {
  private readonly ready: WarmContainer[] = [];
  private readonly waiters: ((c: WarmContainer | undefined) => void)[] = [];
  private starting = 0;
  private readonly inFlight = new Set<Promise<void>>();
  private failures = 0;
  private closed = false;
  private readonly takes: number[] = [];
  private readonly minReady: number;
  private readonly maxReady: number;
  private readonly idleSeconds: number;

  constructor(private readonly options: WarmPoolOptions) {
    this.minReady = options.minReady ?? 2;
    this.maxReady = Math.max(this.minReady, options.maxReady ?? 4);
    this.idleSeconds = options.idleSeconds ?? 600;
  }

  /** Start filling the pool. */
  warm(): void {
    this.fill();
  }

  /**
   * A ready container, or one that is about to be; undefined when the pool
   * cannot provide one (then the caller runs the call cold).
   */
  async take(signal?: AbortSignal): Promise<WarmContainer | undefined> {
    if (this.closed || signal?.aborted) return undefined;
    const now = Date.now();
    this.takes.push(now);
    while (this.takes.length > 16) this.takes.shift();
    const fresh = this.freshest(now);
    this.fill();
    if (fresh) return fresh;
    if (this.starting === 0) return undefined;
    return new Promise((resolve) => {
      const waiter = (c: WarmContainer | undefined) => {
        signal?.removeEventListener('abort', onAbort);
        resolve(c);
      };
      const onAbort = () => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        resolve(undefined);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /** Remove every container this pool holds, including ones still being prepared; pending takes get undefined. */
  async close(): Promise<void> {
    this.closed = true;
    for (const resolve of this.waiters.splice(0)) resolve(undefined);
    await Promise.allSettled([...this.ready.splice(0).map((c) => this.discard(c)), ...this.inFlight]);
  }

  async discard(c: WarmContainer): Promise<void> {
    await removeContainer(this.options.docker, c.id).catch((err) => log(`${c.id.slice(0, 12)} remove failed: ${errorMessage(err)}`));
    await c.channel.dispose();
  }

  /** Demand: calls taken in the last second, plus one ahead; at least minReady. */
  private target(now = Date.now()): number {
    const recent = this.takes.filter((t) => now - t < 1000).length;
    return Math.min(this.maxReady, Math.max(this.minReady, recent + 1));
  }

  private freshest(now: number): WarmContainer | undefined {
    for (;;) {
      const c = this.ready.shift();
      if (!c) return undefined;
      // Too close to its self-timed expiry: let it go rather than race it.
      if (now - c.readyAt < (this.idleSeconds - 30) * 1000) return c;
      void this.discard(c);
    }
  }

  private fill(): void {
    if (this.closed || this.failures >= 3) return;
    const missing = this.target() - this.ready.length - this.starting + this.waiters.length;
    for (let i = 0; i < missing; i++) {
      this.starting++;
      const work: Promise<void> = this.prepare()
        .then(async (c) => {
          this.failures = 0;
          if (this.closed) return this.discard(c);
          const waiter = this.waiters.shift();
          if (waiter) waiter(c);
          else this.ready.push(c);
        })
        .catch((err) => {
          this.failures++;
          log(`could not prepare a warm container: ${errorMessage(err)}${this.failures >= 3 ? '; pool off, calls run cold' : ''}`);
        })
        .finally(() => {
          this.starting--;
          this.inFlight.delete(work);
          // Waiters beyond the containers still coming run cold rather than wait for nothing.
          while (this.waiters.length > this.starting) this.waiters.pop()!(undefined);
          // A container handed straight to a waiter leaves the pool short of its target.
          if (!this.closed) this.fill();
        });
      this.inFlight.add(work);
    }
  }

  private async prepare(): Promise<WarmContainer> {
    const { docker, spec } = this.options;
    const channel = await FifoChannel.create();
    let id: string | undefined;
    try {
      const options = createOptions(spec, ['/bin/bash', '-c', runnerScript(this.idleSeconds)], { binds: channel.binds(), autoRemove: true });
      const container = await dockerCall(docker.createContainer(options), 'docker create');
      id = container.id;
      log(`${id.slice(0, 12)} created (warm)`);
      await dockerCall(container.start(), 'docker start');
      // Issued now, answered when the container exits: no API round trip when a call ends.
      const exited = container.wait().then(
        (r: { StatusCode: number }) => r.StatusCode,
        () => 137,
      );
      log(`${id.slice(0, 12)} started (warm)`);
      return { id, channel, exited, readyAt: Date.now() };
    } catch (err) {
      if (id) await removeContainer(docker, id).catch(() => {});
      await channel.dispose();
      throw err;
    }
  }
}
