#!/usr/bin/env bash
# End-to-end test of 'pdemu compare --emit slurm' on a real Slurm: installs
# Debian's slurm-wlm and munge with apt-get, starts munged, slurmctld and
# slurmd on this machine (one node, as root), submits the emitted
# 'sbatch --array' script, waits for it, merges the shards with
# 'pdemu report' and checks that compare.csv and every run's files equal an
# unsharded 'pdemu compare' byte for byte.
#
# Skips (exit 0, with a line saying why) when it cannot install or start
# Slurm: not root, no apt-get, the packages unavailable, a daemon that does
# not come up. Every step is bounded: apt-get update 90 s and install 180 s
# (then it skips), each daemon 20-30 s (then it skips), the array
# SLURM_TEST_TIMEOUT (default 120 s) and the merge 60 s (then it fails).
# Everything it starts is stopped by pid on exit. About 12 s once the
# packages are installed.
set -euo pipefail
cd "$(dirname "$0")/.."

skip() { echo "== slurm: SKIPPED: $*"; exit 0; }
log() { echo "== slurm: $*"; }

[ "$(id -u)" = 0 ] || skip "not root (slurmd needs root on one machine)"
if ! command -v sbatch >/dev/null || ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  command -v apt-get >/dev/null || skip "no apt-get to install slurm-wlm"
  log "installing slurm-wlm and munge with apt-get"
  timeout 90 apt-get update -qq >/dev/null 2>&1 || skip "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive timeout 180 apt-get install -y -qq slurm-wlm munge >/dev/null 2>&1 ||
    skip "apt-get install slurm-wlm munge failed"
fi

work=$(mktemp -d /tmp/pdemu-slurm.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
  local rc=$?
  if [ -n "${SLURM_CONF:-}" ] && [ -n "${jid:-}" ]; then scancel "$jid" 2>/dev/null || true; fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ $rc -ne 0 ]; then
    for f in "$work"/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done
  fi
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT

# waitfor SECONDS WHAT COMMAND...: retry COMMAND every 0.5 s.
waitfor() {
  local t=$1 what=$2; shift 2
  local end=$((SECONDS + t))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $end ] || return 1
    sleep 0.5
  done
}

log "starting munged"
mkdir -p "$work/munge"
chown munge: "$work/munge"
chmod 711 "$work/munge" # munged wants its socket directory searchable by all
key="$work/munge/munge.key"
if [ -s /etc/munge/munge.key ]; then cp /etc/munge/munge.key "$key"; else mungekey -c -k "$key" >/dev/null 2>&1 || dd if=/dev/urandom bs=1 count=1024 of="$key" 2>/dev/null; fi
chown munge: "$key"
chmod 400 "$key"
sock="$work/munge/munge.socket"
# munged runs as the munge user (as Debian runs it), foreground, in the background.
runuser -u munge -- munged -F --key-file="$key" --socket="$sock" --pid-file="$work/munge/munged.pid" \
  --seed-file="$work/munge/seed" --log-file="$work/munged.log" &
pids+=($!)
waitfor 20 munged test -S "$sock" || skip "munged did not start (see above)"

node=$(hostname -s)
nodeline=$(slurmd -C | head -1)
mkdir -p "$work/state" "$work/spool"
export SLURM_CONF="$work/slurm.conf"
cat >"$SLURM_CONF" <<CONF
ClusterName=pdemu-ci
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldPort=16817
SlurmdPort=16818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmctldTimeout=30
SlurmdTimeout=30
$nodeline NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=ci Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF

log "starting slurmctld and slurmd"
slurmctld -D -i -f "$SLURM_CONF" >"$work/slurmctld.log" 2>&1 &
pids+=($!)
waitfor 30 slurmctld scontrol ping || skip "slurmctld did not answer within 30 s"
slurmd -D -f "$SLURM_CONF" >"$work/slurmd.log" 2>&1 &
pids+=($!)
waitfor 30 slurmd sh -c "sinfo -h -o %T | grep -Eq '^(idle|mixed|allocated)'" || skip "slurmd did not register as idle within 30 s"
log "$(sinfo -h -o '%P %D %T %c CPUs')"

log "building pdemu"
go build -o "$work/pdemu" ./cmd/pdemu
chmod 755 "$work/pdemu"
plan=(1p3d-mlx5 vanilla-pd-1p3d --seeds 4 --var sessions=3 --max-requests 30)
"$work/pdemu" compare "${plan[@]}" --jobs 1 -q --out "$work/one"

# The emitted script, as a user would submit it: 3 array tasks, 2 at a time.
(cd "$work" && ./pdemu compare "${plan[@]}" --emit slurm --shard-count 3 --parallelism 2 --memory 256Mi \
  --pdemu "$work/pdemu" --out "$work/sharded") >"$work/array.sh"
grep -q '^#SBATCH --array=0-2%2$' "$work/array.sh"
mkdir -p "$work/sharded"
log "sbatch --array (3 tasks)"
jid=$(sbatch --parsable "$work/array.sh")
# --wait on a job: poll squeue until the array has left the queue.
waitfor "${SLURM_TEST_TIMEOUT:-120}" "array $jid" sh -c "[ -z \"\$(squeue -h -j $jid 2>/dev/null)\" ]" ||
  { echo "== slurm: FAILED: array $jid still queued after ${SLURM_TEST_TIMEOUT:-120} s"; squeue; exit 1; }
ok=$(ls "$work/sharded"/pdemu-*.out 2>/dev/null | wc -l)
[ "$ok" = 3 ] || { echo "== slurm: FAILED: $ok of 3 task logs"; ls -la "$work/sharded"; exit 1; }
runs=$(ls "$work/sharded/runs" | wc -l)
[ "$runs" = 8 ] || { echo "== slurm: FAILED: $runs of 8 runs after the array"; cat "$work/sharded"/pdemu-*.out; exit 1; }
log "3 array tasks wrote $runs runs (task logs: $(cat "$work/sharded"/pdemu-*.out | wc -c) bytes)"

# The merge step, as the script's comment gives it (a dependent job).
# The comment line is a shell command once $jid is set: run it as written.
merge=$(sed -n 's/^#   \(sbatch --dependency=afterok:\$jid .*\)$/\1/p' "$work/array.sh")
[ -n "$merge" ] || { echo "== slurm: FAILED: no merge step in the emitted script"; cat "$work/array.sh"; exit 1; }
mjid=$(eval "${merge/sbatch /sbatch --parsable --output=$work/merge.out }")
waitfor 60 "merge $mjid" sh -c "[ -z \"\$(squeue -h -j $mjid 2>/dev/null)\" ]" ||
  { echo "== slurm: FAILED: merge job still queued"; exit 1; }
grep -q "report of 8 runs" "$work/merge.out" || { echo "== slurm: FAILED: merge:"; cat "$work/merge.out"; exit 1; }

cmp "$work/one/compare.csv" "$work/sharded/compare.csv"
cmp "$work/one/report.html" "$work/sharded/report.html"
diff -r "$work/one/plots" "$work/sharded/plots"
diff -r "$work/one/runs" "$work/sharded/runs"
log "OK: 8 runs as a 3-task Slurm array; the merged compare.csv, report.html, plots and every run's files are byte-identical to one process"
