#!/usr/bin/env bash
# Install gVisor's runsc from Debian and register it with the Docker daemon as
# the runtime `runsc`, then make sure the daemon knows it (restarting it when it
# was started before the registration). Run as root, before or after
# .ci/start-docker.sh.
#
# This runsc version refuses to start a container in the root network
# namespace unless it is told --network=none, hence the runtimeArgs.
set -euo pipefail

log() { printf '[%s] setup-runsc: %s\n' "$(date -u '+%Y-%m-%dT%H:%M:%SZ')" "$*" >&2; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if ! command -v runsc >/dev/null 2>&1; then
  log "installing runsc"
  apt-get update -qq || { sleep 5; apt-get update -qq; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y runsc >/dev/null
fi
runsc_path=$(command -v runsc)

conf=/etc/docker/daemon.json
mkdir -p /etc/docker
[ -s "$conf" ] || echo '{}' >"$conf"
python3 - "$conf" "$runsc_path" <<'PY'
import json, sys
path, runsc = sys.argv[1], sys.argv[2]
conf = json.load(open(path))
conf.setdefault("runtimes", {})["runsc"] = {"path": runsc, "runtimeArgs": ["--network=none"]}
json.dump(conf, open(path, "w"), indent=2)
PY
log "registered runsc ($runsc_path) in $conf"

if docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'; then
  log "the daemon already knows runsc"
  exit 0
fi
if pid=$(pidof dockerd); then
  log "restarting dockerd ($pid) so it reads $conf"
  kill "$pid"
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
fi
bash "$here/start-docker.sh"
docker info --format '{{json .Runtimes}}' | grep -q '"runsc"' || { log "ERROR: the daemon still does not list runsc"; exit 1; }
log "runsc is registered"
