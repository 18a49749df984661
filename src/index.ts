export { AgentSession, runAgent } from './session.js';
export type { RunOptions } from './options.js';
export { DEFAULT_MODEL } from './options.js';
export { runBatch, type BatchOptions, type BatchSummary, type CaseStats } from './batch/run-batch.js';
export { loadCases } from './batch/case-files.js';
export { toJUnitXml, type JUnitOptions } from './report/junit.js';
export type {
  CaseResult,
  CaseSpec,
  CaseStatus,
  CheckResult,
  ContentBlock,
  ExecResult,
  InvalidCaseFile,
  Message,
  RunEvent,
  RunResult,
  RunStatus,
  ToolCallEvent,
  Usage,
  WorkspaceChanges,
  WorkspaceReport,
} from './types.js';
export type { Model, ModelRequest, ModelResponse, ModelCallOptions } from './model/model.js';
export { AnthropicModel, type AnthropicModelOptions } from './model/anthropic-model.js';
export { ScriptedModel, type ScriptedTurn } from './model/scripted-model.js';
export { RecordingModel } from './model/recording-model.js';
export { ReplayModel, type ReplayOptions } from './model/replay-model.js';
export { RateGate } from './model/rate-gate.js';
export type { Sandbox, ExecOptions } from './sandbox/sandbox.js';
export { DockerSandbox, type DockerSandboxOptions } from './sandbox/docker-sandbox.js';
export { buildSandboxImage, DEFAULT_IMAGE, type BuildImageOptions } from './sandbox/image.js';
export { connectDocker } from './sandbox/docker-client.js';
export { runLoop, type LoopOptions, type LoopOutcome } from './loop/agent-loop.js';
export {
  AbortedError,
  ApplyRefusedError,
  ConfigError,
  DockerUnavailableError,
  ImageBuildError,
  ModelError,
  SandboxError,
} from './errors.js';
