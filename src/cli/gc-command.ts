import { setVerbose } from '../log.js';
import { connectDocker } from '../sandbox/docker-client.js';
import { sweepStaleChannels } from '../sandbox/fifo-channel.js';
import { PID_LABEL, STARTED_LABEL } from '../sandbox/labels.js';
import { findOrphans, listRunContainers, listRunVolumes, removeLeftovers } from '../sandbox/reaper.js';

export interface GcArgs {
  dryRun: boolean;
  all: boolean;
  verbose: boolean;
}

/** `sandloop gc`: remove containers left by runs whose process is gone (or, with --all, every sandloop container). */
export async function gcCommand(args: GcArgs): Promise<number> {
  setVerbose(args.verbose);
  const docker = await connectDocker();
  const leftovers = args.all ? [...(await listRunContainers(docker)), ...(await listRunVolumes(docker))] : await findOrphans(docker);
  if (!args.dryRun) {
    await removeLeftovers(docker, leftovers);
    await sweepStaleChannels();
  }
  for (const c of leftovers) {
    const name = c.kind === 'container' ? `container ${c.id.slice(0, 12)}` : `volume ${c.id}`;
    const line = `${name} run ${c.runId} (${c.state}; owner pid ${c.labels[PID_LABEL] ?? '?'}, started ${c.labels[STARTED_LABEL] ?? '?'})`;
    process.stdout.write(`${args.dryRun ? 'would remove' : 'removed'} ${line}\n`);
  }
  process.stderr.write(`${leftovers.length} ${args.all ? 'sandloop' : 'leftover'} containers and volumes${args.dryRun ? ' found (dry run: nothing removed)' : ' removed'}\n`);
  return 0;
}
