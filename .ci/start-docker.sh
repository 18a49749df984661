#!/usr/bin/env bash
# Make sure a Docker engine answers `docker info`, installing and starting one
# when needed. Used by .ci/run; developers can run it too (as root, or with sudo
# available).
#
#   - `docker info` already works      -> do nothing
#   - docker/dockerd missing           -> apt-get install docker.io (apt retried once)
#   - start dockerd in the background  -> log in /var/log/dockerd.log, up to 3 attempts,
#                                         each polled for up to DOCKER_START_TIMEOUT s
#   - giving up                        -> print the tail of the daemon log, exit non-zero
#
# Just after a dockerd was killed, a new one can refuse to start ("pid file
# found, ensure docker is not running") while the old one is being reaped, so a
# stale pid file is removed and the start is retried.
set -euo pipefail

DOCKERD_LOG=${DOCKERD_LOG:-/var/log/dockerd.log}
DOCKER_PIDFILE=${DOCKER_PIDFILE:-/var/run/docker.pid}
DOCKER_START_TIMEOUT=${DOCKER_START_TIMEOUT:-60}
DOCKER_START_ATTEMPTS=${DOCKER_START_ATTEMPTS:-3}

log() { printf '[%s] start-docker: %s\n' "$(date -u '+%Y-%m-%dT%H:%M:%SZ')" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 || die "not root and sudo is not available; run this as root"
  SUDO=(sudo)
fi

docker_answers() {
  command -v docker >/dev/null 2>&1 || return 1
  timeout 20 "${SUDO[@]}" docker info >/dev/null 2>&1
}

# apt-get with one retry (mirrors occasionally hiccup).
apt_retry() {
  if ! "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "$@"; then
    log "apt-get $* failed; retrying once in 5 s"
    sleep 5
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "$@"
  fi
}

pid_alive() { [[ ${1:-} =~ ^[0-9]+$ ]] && "${SUDO[@]}" kill -0 "$1" 2>/dev/null; }
# Alive and really a dockerd (a pid from an old pid file may have been reused).
is_dockerd() { pid_alive "${1:-}" && [[ $(cat "/proc/$1/comm" 2>/dev/null || true) == dockerd ]]; }
pidfile_pid() { "${SUDO[@]}" cat "$DOCKER_PIDFILE" 2>/dev/null | tr -dc '0-9' || true; }

# Remove the daemon's pid file when the pid in it is not a live dockerd.
clear_stale_pidfile() {
  "${SUDO[@]}" test -e "$DOCKER_PIDFILE" || return 0
  local pid
  pid=$(pidfile_pid)
  if is_dockerd "$pid"; then
    log "pid file $DOCKER_PIDFILE names live dockerd $pid; leaving it"
  else
    log "removing stale pid file $DOCKER_PIDFILE (pid '${pid}' is not a live dockerd)"
    "${SUDO[@]}" rm -f "$DOCKER_PIDFILE"
  fi
}

show_log_tail() {
  local n=${1:-50}
  log "last $n lines of $DOCKERD_LOG:"
  "${SUDO[@]}" tail -n "$n" "$DOCKERD_LOG" >&2 2>/dev/null || log "(no log at $DOCKERD_LOG)"
}

if docker_answers; then
  log "docker already answers; nothing to do"
  exit 0
fi

if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
  log "dockerd/docker not found; installing docker.io with apt"
  apt_retry update
  apt_retry install -y docker.io
  hash -r
  command -v dockerd >/dev/null 2>&1 || die "docker.io installed but dockerd is still not on PATH"
  # The package's maintainer scripts may have started the daemon already.
  if docker_answers; then
    log "docker answers after install"
    exit 0
  fi
fi

# A dockerd that is already running (e.g. still starting up) gets a chance first
# rather than starting a second one next to it.
existing=$(pidfile_pid)
if is_dockerd "$existing"; then
  log "dockerd (pid $existing) is running but not answering yet; waiting up to ${DOCKER_START_TIMEOUT} s"
  deadline=$((SECONDS + DOCKER_START_TIMEOUT))
  while ((SECONDS < deadline)); do
    if docker_answers; then log "docker answers"; exit 0; fi
    sleep 1
  done
  show_log_tail
  die "the running dockerd (pid $existing) does not answer; stop it and run this script again"
fi

"${SUDO[@]}" mkdir -p "$(dirname "$DOCKERD_LOG")"
for attempt in $(seq 1 "$DOCKER_START_ATTEMPTS"); do
  clear_stale_pidfile
  log "starting dockerd (attempt $attempt/$DOCKER_START_ATTEMPTS), log in $DOCKERD_LOG"
  # setsid + nohup: the daemon lives on after this script and its caller exit.
  # sh -c prints the daemon's pid (setsid and nohup exec in place, so $! is dockerd).
  # shellcheck disable=SC2016  # expanded by the inner sh, on purpose
  dpid=$("${SUDO[@]}" sh -c 'echo "=== dockerd start $(date -u +%Y-%m-%dT%H:%M:%SZ) ===" >>"$1"
                             setsid nohup dockerd >>"$1" 2>&1 </dev/null &
                             echo $!' sh "$DOCKERD_LOG")
  log "dockerd pid $dpid; polling docker info for up to ${DOCKER_START_TIMEOUT} s"

  deadline=$((SECONDS + DOCKER_START_TIMEOUT))
  while ((SECONDS < deadline)); do
    if docker_answers; then
      log "docker answers (server $("${SUDO[@]}" docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?'))"
      exit 0
    fi
    if ! pid_alive "$dpid"; then
      log "dockerd (pid $dpid) exited during start-up"
      break
    fi
    sleep 1
  done

  # Stop the daemon this attempt started (only that pid), and let it be reaped
  # before the next attempt so it does not trip over its pid file.
  if pid_alive "$dpid"; then
    log "dockerd (pid $dpid) did not answer within ${DOCKER_START_TIMEOUT} s; stopping it"
    "${SUDO[@]}" kill -TERM "$dpid" 2>/dev/null || true
    for _ in $(seq 1 20); do pid_alive "$dpid" || break; sleep 1; done
    pid_alive "$dpid" && { "${SUDO[@]}" kill -KILL "$dpid" 2>/dev/null || true; sleep 2; }
  fi
  if ((attempt < DOCKER_START_ATTEMPTS)); then
    show_log_tail 5
    sleep $((attempt * 2))
  fi
done

show_log_tail
die "docker did not answer after $DOCKER_START_ATTEMPTS start attempts"
