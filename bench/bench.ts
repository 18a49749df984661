/**
 * `npm run bench`: sandloop's per-call latency next to the designs people use
 * today, all measured in this one run on this machine, plus end-to-end and
 * resource figures. Markdown on stdout, JSON in bench-results.json (or --out).
 * Not a test: numbers are reported, never asserted.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { AnthropicModel } from '../src/model/anthropic-model.js';
import type { Model } from '../src/model/model.js';
import { connectDocker } from '../src/sandbox/docker-client.js';
import { DockerSandbox } from '../src/sandbox/docker-sandbox.js';
import { DEFAULT_IMAGE, ensureImage } from '../src/sandbox/image.js';
import { newRunId } from '../src/sandbox/labels.js';
import { runAgent } from '../src/session.js';
import { type FakeTurn, startFakeAnthropic } from '../test/fake-anthropic/server.js';
import { dockerRunCli, dockerodePerCall, longLived } from './baselines.js';
import { ms, ratio, summarize, timeRuns } from './stats.js';

const N = Number(process.env.BENCH_N ?? 30);
const THINK_MS = 300;
const outPath = process.argv.includes('--out') ? process.argv[process.argv.indexOf('--out') + 1]! : 'bench-results.json';
const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const say = (line = '') => process.stdout.write(`${line}\n`);
const note = (line: string) => process.stderr.write(`bench: ${line}\n`);

const docker = await connectDocker();
await ensureImage(docker, DEFAULT_IMAGE, note);
const taskDir = mkdtempSync(join(tmpdir(), 'sandloop-bench-'));
const sandbox = (warm: boolean) =>
  new DockerSandbox({ docker, runId: newRunId(), image: DEFAULT_IMAGE, workspace: taskDir, memoryBytes: 1024 ** 3, cpus: 1, pids: 256, maxOutput: 30_000, warm });

async function latencyTable(cmd: string) {
  note(`per-call latency of ${cmd} (${N} calls each)...`);
  const rows: Record<string, number[]> = {};
  rows['1. docker run --rm (CLI), per call'] = await timeRuns(N, () => dockerRunCli(DEFAULT_IMAGE, cmd));
  rows['2. dockerode create+attach+start+wait+remove'] = await timeRuns(N, () => dockerodePerCall(docker, DEFAULT_IMAGE, cmd));
  const ll = await longLived(docker, DEFAULT_IMAGE);
  rows['3. docker exec into one long-lived container'] = await timeRuns(N, () => ll.exec(cmd));
  await ll.remove();
  const cold = sandbox(false);
  rows['4. sandloop, pool off (--no-warm)'] = await timeRuns(N, () => cold.exec(cmd, { timeoutSeconds: 60 }));
  await cold.close();
  const warm = sandbox(true);
  rows[`5. sandloop, warm pool, ${THINK_MS} ms thinking between calls`] = await timeRuns(N, () => warm.exec(cmd, { timeoutSeconds: 60 }), THINK_MS);
  await warm.close();
  const s = Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, summarize(v)]));
  const [run, dockerode, exec] = Object.values(s).map((x) => x.median) as [number, number, number];
  say(`### \`${cmd}\``);
  say();
  say('| method | median ms | p95 ms | vs 1 (docker run) | vs 2 (dockerode) | vs 3 (docker exec) |');
  say('| --- | ---: | ---: | ---: | ---: | ---: |');
  for (const [k, v] of Object.entries(s)) say(`| ${k} | ${ms(v.median)} | ${ms(v.p95)} | ${ratio(v.median, run)} | ${ratio(v.median, dockerode)} | ${ratio(v.median, exec)} |`);
  say();
  return s;
}

/** A model that never reports a tool_use early: tools start only after the reply ends. */
const withoutStreaming = (model: Model): Model => ({ name: model.name, complete: (req, o) => model.complete(req, { ...o, onToolUse: undefined }) });

/** Time each model call, so the floor is measured, not assumed. */
function timed(model: Model, spent: { ms: number }): Model {
  return {
    name: model.name,
    async complete(req, o) {
      const t = Date.now();
      try {
        return await model.complete(req, o);
      } finally {
        spent.ms += Date.now() - t;
      }
    },
  };
}

async function episode(turns: number, streaming: boolean, warm: boolean) {
  const script: FakeTurn[] = [];
  for (let i = 1; i < turns; i++) script.push({ content: [{ type: 'tool_use', name: 'bash', input: { command: `echo turn ${i} > turn.txt; cat turn.txt` } }], latency_ms: THINK_MS });
  script.push({ content: [{ type: 'text', text: 'done' }], latency_ms: THINK_MS });
  const fake = await startFakeAnthropic({ turns: script });
  const spent = { ms: 0 };
  const base = new AnthropicModel({ model: 'bench', apiKey: 'k', baseURL: fake.url });
  const model = timed(streaming ? base : withoutStreaming(base), spent);
  const t = Date.now();
  const result = await runAgent({ prompt: 'bench', taskDir, model, warm, maxTurns: turns });
  const total = Date.now() - t;
  await fake.close();
  if (result.status !== 'completed') throw new Error(`episode ended ${result.status}: ${result.error ?? ''}`);
  return { total, floor: spent.ms, overhead: total / spent.ms - 1 };
}

async function threeCallsStreamed() {
  const gaps: number[] = [];
  for (let i = 0; i < 5; i++) {
    const call = (x: string) => ({ type: 'tool_use' as const, name: 'bash', input: { command: `echo ${x}` } });
    const fake = await startFakeAnthropic({ turns: [{ content: [call('a'), call('b'), call('c')], latency_ms: 1000 }, { content: [{ type: 'text', text: 'ok' }] }] });
    let end = 0;
    await runAgent({
      prompt: 'three',
      taskDir,
      apiKey: 'k',
      baseURL: fake.url,
      model: 'bench',
      onEvent: (e) => {
        if (e.type === 'assistant' && e.turn === 1) end = Date.now();
      },
    });
    await fake.close();
    // All three results are ready (and sent) when the next request arrives.
    gaps.push(fake.requests[1]!.receivedAt - end);
  }
  return summarize(gaps);
}

async function floodRss() {
  const box = sandbox(true);
  await new Promise((r) => setTimeout(r, 1000));
  global.gc?.();
  const before = process.memoryUsage().rss;
  let peak = before;
  let ticks = 0;
  const probe = setInterval(() => {
    ticks++;
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  const t = Date.now();
  const r = await box.exec('yes', { timeoutSeconds: 10 });
  const took = Date.now() - t;
  clearInterval(probe);
  await box.close();
  return { rssGrowthMb: (peak - before) / 1024 ** 2, returnedMs: took, timedOut: r.timedOut, timerTicks: ticks };
}

async function versionStart() {
  const run = promisify(execFile);
  return summarize(await timeRuns(10, () => run(process.execPath, [CLI, '--version'])));
}

say(`## sandloop benchmark`);
say();
say(`Machine: ${(await import('node:os')).cpus().length} cores, ${Math.round((await import('node:os')).totalmem() / 1024 ** 3)} GiB, Node ${process.version}, Docker ${(await docker.version()).Version}. ${N} calls per row; medians and p95; ratios against baselines measured in this same run.`);
say();
const echo = await latencyTable('echo hi');
const python = await latencyTable("python3 -c 'print(sum(range(10**6)))'");

note('20-turn episodes against the fake server...');
const streamed = await episode(20, true, true);
const plain = await episode(20, false, false);
say('### A scripted 20-turn episode (fake server, 300 ms model latency per turn)');
say();
say('| mode | wall time ms | sum of model latency ms (floor) | over the floor |');
say('| --- | ---: | ---: | ---: |');
say(`| streaming tool execution + warm pool | ${streamed.total} | ${streamed.floor} | +${(streamed.overhead * 100).toFixed(1)}% |`);
say(`| tools after the reply, pool off | ${plain.total} | ${plain.floor} | +${(plain.overhead * 100).toFixed(1)}% |`);
say();

note('three calls streamed over 1 s...');
const three = await threeCallsStreamed();
note('a 10 s yes flood...');
const flood = await floodRss();
note('sandloop --version start time...');
const version = await versionStart();
say('### Other figures');
say();
say('| figure | value |');
say('| --- | ---: |');
say(`| 3 tool calls streamed over 1 s: all results sent back after the stream's end (median of ${three.n}) | ${ms(three.median)} ms |`);
say(`| host RSS growth during a 10 s \`yes\` flood | ${flood.rssGrowthMb.toFixed(1)} MB |`);
say(`| the flood call returned after | ${flood.returnedMs} ms (timeout 10 s) |`);
say(`| \`sandloop --version\` start time (median of 10) | ${ms(version.median)} ms |`);
say();
writeFileSync(outPath, `${JSON.stringify({ n: N, echo, python, episodes: { streamed, plain }, threeCallsStreamed: three, flood, version }, null, 2)}\n`);
note(`wrote ${outPath}`);
process.exit(0);
