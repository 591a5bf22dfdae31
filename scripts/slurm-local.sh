#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for tests/slurm.rs and for trying
# `retrysim slurm --submit` without a real cluster. Debian or Ubuntu, as root; no systemd
# needed (the daemons are started directly). Checked with Debian 12's Slurm 22.05
# (`slurm-wlm`) and munge, as root.
#
#   scripts/slurm-local.sh [start]  install slurm-wlm and munge when missing, write a slurm.conf
#                                   for localhost (this machine's CPUs and memory), create the
#                                   munge key, start munged, slurmctld and slurmd, and wait
#                                   until the node is idle. Starting a running cluster is fine.
#   scripts/slurm-local.sh stop     stop slurmctld, slurmd and munged.
#   scripts/slurm-local.sh status   the daemons and the node; exit 0 when jobs can run.
#
# SLURM_LOCAL_WAIT (seconds, default 60) bounds the wait for the node.
set -euo pipefail

CONF=/etc/slurm/slurm.conf
MARK="# Written by retrysim's scripts/slurm-local.sh"
PARTITION=local
RUN=/run/slurm
LOGS=/var/log/slurm
SPOOL=/var/lib/slurm
MUNGE_RUN=/run/munge
MUNGE_KEY=/etc/munge/munge.key
WAIT=${SLURM_LOCAL_WAIT:-60}
NODE=$(hostname -s)

log() { echo "slurm-local: $*" >&2; }
die() {
  log "error: $*"
  exit 1
}

# The process id in pid file $1 when that process is alive and named $2, else nothing.
live_pid() {
  local pid
  [[ -s $1 ]] || return 1
  pid=$(<"$1")
  [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
  [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$2"* ]] || return 1
  echo "$pid"
}

munged_pid() { live_pid "$MUNGE_RUN/munged.pid" munged; }
slurmctld_pid() { live_pid "$RUN/slurmctld.pid" slurmctld; }
slurmd_pid() { live_pid "$RUN/slurmd.pid" slurmd; }

# The node's state as sinfo shows it (idle, mixed, allocated, down*, ...), or nothing.
node_state() { timeout 10 sinfo -h -N -n "$NODE" -o %T 2>/dev/null | head -n1 || true; }

ready() {
  case "$(node_state)" in
    idle | mixed | allocated | completing) return 0 ;;
    *) return 1 ;;
  esac
}

install_packages() {
  local missing=()
  command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sbatch >/dev/null ||
    missing+=(slurm-wlm)
  command -v munged >/dev/null || missing+=(munge)
  ((${#missing[@]} == 0)) && return 0
  command -v apt-get >/dev/null || die "${missing[*]} missing and no apt-get to install them"
  log "installing ${missing[*]} (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2 9>&-
  apt-get install -y -qq "${missing[@]}" >&2 9>&-
}

# The node line: this machine's topology from `slurmd -C` when it agrees with nproc (the CPUs
# this container may use), else just the CPUs; memory a tenth below the total, as Slurm drains
# a node that has less than it is configured with.
node_line() {
  local cpus hw mem topology
  cpus=$(nproc)
  hw=$(slurmd -C 2>/dev/null | head -n1)
  mem=$(awk '/^MemTotal:/ { print int($2 / 1024 * 0.9) }' /proc/meminfo)
  topology="CPUs=$cpus"
  if [[ $hw =~ CPUs=([0-9]+)\ (Boards=[0-9]+\ SocketsPerBoard=[0-9]+\ CoresPerSocket=[0-9]+\ ThreadsPerCore=[0-9]+) ]] &&
    [[ ${BASH_REMATCH[1]} == "$cpus" ]]; then
    topology="CPUs=$cpus ${BASH_REMATCH[2]}"
  fi
  echo "NodeName=$NODE NodeAddr=127.0.0.1 $topology RealMemory=$mem State=UNKNOWN"
}

config() {
  cat <<EOF
$MARK: a single-node cluster on localhost.
# Delete this file (after 'scripts/slurm-local.sh stop') to stop the script from managing it.
ClusterName=retrysim-local
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
MinJobAge=300
StateSaveLocation=$SPOOL/slurmctld
SlurmdSpoolDir=$SPOOL/slurmd
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
$(node_line)
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
}

# Writes slurm.conf; returns 0 when it changed (running daemons must then restart).
write_config() {
  local new
  new=$(config)
  if [[ -e $CONF ]]; then
    grep -qF "$MARK" "$CONF" ||
      die "$CONF exists and was not written by this script: refusing to replace a real cluster's configuration"
    [[ $(<"$CONF") == "$new" ]] && return 1
  fi
  mkdir -p "$(dirname "$CONF")"
  printf '%s\n' "$new" >"$CONF.tmp"
  mv "$CONF.tmp" "$CONF"
  log "wrote $CONF"
  return 0
}

start_munged() {
  mkdir -p "$MUNGE_RUN" /var/log/munge /var/lib/munge
  if [[ ! -s $MUNGE_KEY ]]; then
    mkdir -p "$(dirname "$MUNGE_KEY")"
    dd if=/dev/urandom of="$MUNGE_KEY" bs=1024 count=1 status=none
    log "created $MUNGE_KEY"
  fi
  chown munge:munge "$MUNGE_KEY" 2>/dev/null || true
  chmod 0400 "$MUNGE_KEY"
  munged_pid >/dev/null && return 0
  rm -f "$MUNGE_RUN/munged.pid" "$MUNGE_RUN"/munge.socket.2*
  log "starting munged"
  # It warns that its log file belongs to munge, not root: harmless.
  munged --force </dev/null >>/var/log/munge/munged.stderr 2>&1 9>&- ||
    die "munged did not start: $(tail -n 5 /var/log/munge/munged.log 2>/dev/null)"
}

# start_daemon NAME: starts slurmctld or slurmd unless it runs; both put themselves in the
# background. Daemons get no standard streams of ours (a caller reading our output would wait
# for them) and not the lock's descriptor 9 (they would hold the lock for good).
start_daemon() {
  local name=$1 i
  "${name}_pid" >/dev/null && return 0
  log "starting $name"
  "$name" </dev/null >>"$LOGS/$name.stderr" 2>&1 9>&- ||
    die "$name did not start; see $LOGS/$name.log: $(tail -n 5 "$LOGS/$name.log" 2>/dev/null)"
  for ((i = 0; i < 50; i++)); do
    "${name}_pid" >/dev/null && return 0
    sleep 0.2
  done
  die "$name exited after starting; see $LOGS/$name.log: $(tail -n 5 "$LOGS/$name.log" 2>/dev/null)"
}

stop_daemons() {
  local name pid i entry pids=()
  for name in slurmctld slurmd munged; do
    pid=$("${name}_pid") && pids+=("$name:$pid")
  done
  # slurmctld tells slurmd to stop too; munged, which they need until then, goes last.
  if slurmctld_pid >/dev/null; then
    timeout 10 scontrol shutdown >/dev/null 2>&1 || true
  fi
  for entry in "${pids[@]}"; do
    name=${entry%%:*} pid=${entry#*:}
    [[ $name == munged ]] && kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < 50; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      ((i == 25)) && kill -TERM "$pid" 2>/dev/null
      sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
      kill -KILL "$pid" 2>/dev/null || true
    fi
    log "stopped $name ($pid)"
  done
  ((${#pids[@]} > 0)) || log "nothing to stop"
}

start() {
  [[ $(id -u) == 0 ]] || die "run as root (it installs packages and starts the Slurm daemons)"
  install_packages
  mkdir -p "$RUN" "$LOGS" "$SPOOL/slurmctld" "$SPOOL/slurmd"
  if write_config && { slurmctld_pid >/dev/null || slurmd_pid >/dev/null; }; then
    log "configuration changed: restarting the daemons"
    stop_daemons
  fi
  start_munged
  start_daemon slurmctld
  start_daemon slurmd
  local deadline=$((SECONDS + WAIT)) resumed=0 state
  while ((SECONDS < deadline)); do
    state=$(node_state)
    case "$state" in
      idle | mixed | allocated | completing)
        log "node $NODE is $state (partition $PARTITION)"
        return 0
        ;;
      down* | drain*)
        # Left down by an earlier run that ended abruptly: the node is here, put it back.
        if ((resumed == 0)); then
          timeout 10 scontrol update NodeName="$NODE" State=RESUME >/dev/null 2>&1 || true
          resumed=1
        fi
        ;;
    esac
    sleep 1
  done
  timeout 10 sinfo -N -l >&2 || true
  tail -n 20 "$LOGS/slurmctld.log" "$LOGS/slurmd.log" >&2 2>/dev/null || true
  die "the node did not become idle within ${WAIT}s (state: '${state:-none}'); logs in $LOGS"
}

status() {
  local name pid ok=0
  for name in munged slurmctld slurmd; do
    if pid=$("${name}_pid"); then
      echo "$name: running ($pid)"
    else
      echo "$name: not running"
      ok=1
    fi
  done
  if ((ok == 0)); then
    timeout 10 sinfo -N -l || true
    ready || ok=1
  fi
  return "$ok"
}

main() {
  local cmd=${1:-start}
  case "$cmd" in
    start | stop)
      # One start or stop at a time (two test runs may start the cluster together).
      mkdir -p /run/lock
      exec 9>/run/lock/retrysim-slurm-local.lock
      flock -w 120 9 || die "another slurm-local.sh has held /run/lock/retrysim-slurm-local.lock for 2 minutes"
      if [[ $cmd == start ]]; then start; else stop_daemons; fi
      ;;
    status) status ;;
    *)
      echo "usage: $0 [start|stop|status]" >&2
      exit 2
      ;;
  esac
}

main "$@"
