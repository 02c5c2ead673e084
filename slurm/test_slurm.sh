#!/usr/bin/env bash
# End-to-end test of the Slurm scripts on a real one-node Slurm cluster started
# here (Debian 12: slurmctld, slurmd, munge; needs root):
#   1. a private munged (as the munge user, own key and socket) and a minimal
#      slurm.conf (node = `hostname -s`, proctrack/linuxproc, task/none) in a
#      temporary folder; slurmctld and slurmd in the foreground, as children;
#   2. slurm/submit.sh N cases/ : a job array of N shards and a dependent merge;
#   3. waits (bounded), then compares the merged report with an unsharded
#      `attnconv run cases/`, case for case apart from timings;
#   4. stops the daemons it started (by PID) and removes the folder.
# Usage: slurm/test_slurm.sh [N] [CASE FILES/FOLDERS...]   (defaults: 3, cases/)
# Environment: ATTNCONV (default build/attnconv), SLURM_TEST_TIMEOUT (seconds
# for the jobs, default 300), SLURM_TEST_KEEP=1 keeps the temporary folder.
set -euo pipefail
cd "$(dirname "$0")/.."
shards="${1:-3}"
shift || true
cases=()
for p in "${@:-cases}"; do cases+=("$(realpath "$p")"); done  # absolute, as submit.sh passes them
timeout_jobs="${SLURM_TEST_TIMEOUT:-300}"
attnconv="$(realpath "${ATTNCONV:-build/attnconv}")"
say() { echo "test_slurm: $*" >&2; }
die() { say "FAILED: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (it starts munged and the Slurm daemons)"
[ -x "$attnconv" ] || die "$attnconv is not built (run ./build.sh test first)"

# --- packages -------------------------------------------------------------------
packages=(slurmctld slurmd slurm-client munge python3)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  apt-get update -qq
  # Package scripts may try to start services; there is no init system to do it here.
  DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# --- a private cluster in a temporary folder ---------------------------------------
work="$(mktemp -d /tmp/attnconv-slurm.XXXXXX)"
chmod 755 "$work"
pids=()
cleanup() {
  local status=$?
  set +e
  if [ -n "${SLURM_CONF:-}" ] && [ -f "${SLURM_CONF}" ]; then
    timeout 10 scancel --quiet --user="$(id -un)" >/dev/null 2>&1
  fi
  local pid
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  [ -f "$work/munged.pid" ] && kill -TERM "$(cat "$work/munged.pid")" 2>/dev/null
  if [ $status -ne 0 ]; then
    for log in "$work"/slurmctld.log "$work"/slurmd.log "$work"/munged.log "$work"/out/*.log; do
      [ -f "$log" ] && { echo "----- $log (last 20 lines)" >&2; tail -n 20 "$log" >&2; }
    done
  fi
  if [ "${SLURM_TEST_KEEP:-0}" = 1 ]; then say "kept $work"; else rm -rf "$work"; fi
  exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# munged as the munge user, with its own key, socket, pid and log files.
install -d -o munge -g munge -m 700 "$work/munge"
install -d -o munge -g munge -m 755 "$work/munge-run"  # munged wants the socket folder searchable by all
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chown munge:munge "$work/munge/munge.key"
chmod 400 "$work/munge/munge.key"
socket="$work/munge-run/munge.socket"
runuser -u munge -- /usr/sbin/munged --key-file="$work/munge/munge.key" --socket="$socket" \
  --pid-file="$work/munge-run/munged.pid" --log-file="$work/munge/munged.log" --seed-file="$work/munge/munged.seed"
cp "$work/munge-run/munged.pid" "$work/munged.pid"
timeout 10 munge --socket="$socket" -n </dev/null | timeout 10 unmunge --socket="$socket" >/dev/null \
  || die "munge does not work (see $work/munge/munged.log)"

host="$(hostname -s)"
cpus="$(nproc)"
free_port() {  # a TCP port nobody listens on, from $1 upwards
  local port=$1
  while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
  echo "$port"
}
ctld_port="$(free_port 16817)"
slurmd_port="$(free_port $((ctld_port + 1)))"
mkdir -p "$work/state" "$work/spool" "$work/out"
export SLURM_CONF="$work/slurm.conf"
cat > "$SLURM_CONF" <<CONF
ClusterName=attnconv-test
SlurmctldHost=$host
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF

say "starting slurmctld and slurmd (node $host, ports $ctld_port/$slurmd_port, $work)"
/usr/sbin/slurmctld -D -i -f "$SLURM_CONF" >"$work/slurmctld.stderr" 2>&1 &
pids+=($!)
/usr/sbin/slurmd -D -f "$SLURM_CONF" >"$work/slurmd.stderr" 2>&1 &
pids+=($!)

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...: until COMMAND succeeds
  local seconds=$1 what=$2
  shift 2
  local deadline=$((SECONDS + seconds))
  until "$@"; do
    [ $SECONDS -lt $deadline ] || die "timed out after ${seconds}s waiting for $what"
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null || die "a Slurm daemon exited while waiting for $what"; done
    sleep 1
  done
}
node_idle() { [ "$(timeout 10 sinfo -h -n "$host" -o %T 2>/dev/null)" = idle ]; }
wait_for 60 "node $host to be idle" node_idle

# --- the run ------------------------------------------------------------------------------
out="$work/out"
read -r array_job merge_job out_dir < <(ATTNCONV="$attnconv" ATTNCONV_OUT="$out" slurm/submit.sh "$shards" "${cases[@]}")
say "submitted array job $array_job ($shards shards) and merge job $merge_job"
jobs_done() { [ -z "$(timeout 10 squeue -h -j "$array_job,$merge_job" -o %i 2>/dev/null)" ]; }
wait_for "$timeout_jobs" "jobs $array_job and $merge_job to finish" jobs_done

[ -f "$out_dir/merged/report.json" ] || die "no merged report (see the logs below)"
for i in $(seq 1 "$shards"); do
  [ -f "$out_dir/shard-$i/report.json" ] || die "shard $i wrote no report"
done
"$attnconv" run "${cases[@]}" --out "$work/unsharded" --quiet || [ $? -eq 1 ]
/usr/bin/python3 - "$out_dir/merged/report.json" "$work/unsharded/report.json" "$shards" <<'PY'
import json, sys
merged, unsharded = (json.load(open(p)) for p in sys.argv[1:3])
strip = lambda r: [{k: v for k, v in c.items() if k not in ("seconds", "peak_memory")} for c in r["cases"]]
assert strip(merged) == strip(unsharded), "the merged report differs from the unsharded run"
counts = lambda r: {k: r["summary"][k] for k in ("total", "passed", "failed", "errored")}
assert counts(merged) == counts(unsharded), (counts(merged), counts(unsharded))
assert len(merged["merged_from"]) == int(sys.argv[3])
print(f"test_slurm: merged report of {sys.argv[3]} shards equals the unsharded run: "
      f"{counts(merged)['total']} cases, {counts(merged)['passed']} passed", file=sys.stderr)
PY
[ -s "$out_dir/merged/junit.xml" ] || die "no merged JUnit file"
say "OK"
