#!/usr/bin/env bash
# Peer benchmark: pdemu against BLIS (github.com/inference-sim/inference-sim)
# on the same requests, in paired, alternating whole-process runs; prints
# each tool's median CPU time (user + sys) and the ratio pdemu / BLIS.
# Not part of go test. See bench/peers/README.md.
#
# usage: bench/peers/run.sh BLIS_BINARY [ROUNDS]
#   BLIS_BINARY  a blis built from its repository (runs from that
#                directory: it reads its model and hardware configs there)
#   ROUNDS       alternating pairs per workload (default 6)
# env: SHARED (default: ../shared beside the repository), PAIRS (a
#      space-separated subset of: agentic-dp4 agentic-1p3d mooncake-dp4
#      mooncake-1p3d)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
blis=${1:?usage: bench/peers/run.sh BLIS_BINARY [ROUNDS]}
rounds=${2:-6}
shared=${SHARED:-$repo/../shared}
pairs=${PAIRS:-agentic-dp4 agentic-1p3d mooncake-dp4 mooncake-1p3d}
blis=$(cd "$(dirname "$blis")" && pwd)/$(basename "$blis")
blisdir=$(dirname "$blis")
peer=$shared/peers/blis
mc=$shared/traces/mooncake/synthetic_trace.jsonl
for f in "$blis" "$peer/agentic.yaml" "$peer/gen_agentic.py" "$peer/mc2blis.py" "$mc"; do
  [ -e "$f" ] || { echo "run.sh: missing $f" >&2; exit 2; }
done
command -v python3 >/dev/null || { echo "run.sh: needs python3 (the workload converters)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== building pdemu; converting the workloads (in $tmp)" >&2
(cd "$repo" && go build -o "$tmp/pdemu" ./cmd/pdemu)
python3 "$peer/gen_agentic.py" 50 85 "$tmp/agentic.jsonl" --compact >/dev/null
python3 "$peer/mc2blis.py" "$mc" "$tmp/mc.yaml" "$tmp/mc.csv" >/dev/null

blis_common=(--model meta-llama/llama-3.1-8b-instruct --hardware H100 --tp 1 --cache-signal-delay 0)
blis_pd=(--prefill-instances 1 --decode-instances 3)

# run_pdemu PAIR and run_blis PAIR run one whole process of each tool.
run_pdemu() {
  local scen trace
  case $1 in
    agentic-dp4) scen=dp4 trace=$tmp/agentic.jsonl ;;
    agentic-1p3d) scen=1p3d-mlx5 trace=$tmp/agentic.jsonl ;;
    mooncake-dp4) scen=dp4 trace=$mc ;;
    mooncake-1p3d) scen=1p3d-mlx5 trace=$mc ;;
  esac
  "$tmp/pdemu" run "$scen" --trace "$trace" --out "$tmp/out" --force -q --max-failed 1 >/dev/null
}
run_blis() {
  local args
  case $1 in
    agentic-dp4) args=(run --num-instances 4 --routing-policy weighted --workload-spec "$peer/agentic.yaml") ;;
    agentic-1p3d) args=(run --num-instances 4 --routing-policy weighted --workload-spec "$peer/agentic.yaml"
      "${blis_pd[@]}" --pd-decider prefix-threshold --pd-prefix-threshold 8192) ;;
    mooncake-dp4) args=(replay --num-instances 4 --routing-policy weighted --trace-header "$tmp/mc.yaml" --trace-data "$tmp/mc.csv") ;;
    mooncake-1p3d) args=(replay --num-instances 4 --routing-policy weighted --trace-header "$tmp/mc.yaml" --trace-data "$tmp/mc.csv"
      "${blis_pd[@]}" --pd-decider always) ;;
  esac
  (cd "$blisdir" && "$blis" "${args[@]}" "${blis_common[@]}" >/dev/null 2>&1)
}

# cpu CMD... runs CMD (a function above) and prints its CPU time, user +
# sys of every process it ran, in s; a failing command stops the script.
cpu() {
  local t TIMEFORMAT='%U %S'
  t=$( { time "$@" >/dev/null 2>&1; } 2>&1 ) || { echo "run.sh: failed: $*" >&2; exit 1; }
  awk -v t="$t" 'BEGIN { split(t, a, " "); printf "%.3f\n", a[1] + a[2] }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf '%-15s %6s %12s %12s %10s %8s\n' pair rounds pdemu_cpu_s blis_cpu_s ratio faster
for p in $pairs; do
  : >"$tmp/p.txt"; : >"$tmp/b.txt"
  for ((i = 0; i < rounds; i++)); do
    if ((i % 2 == 0)); then # alternate which tool goes first
      cpu run_pdemu "$p" >>"$tmp/p.txt"; cpu run_blis "$p" >>"$tmp/b.txt"
    else
      cpu run_blis "$p" >>"$tmp/b.txt"; cpu run_pdemu "$p" >>"$tmp/p.txt"
    fi
  done
  pm=$(median <"$tmp/p.txt"); bm=$(median <"$tmp/b.txt")
  awk -v p="$p" -v n="$rounds" -v a="$pm" -v b="$bm" 'BEGIN { printf "%-15s %6d %12.3f %12.3f %10.4f %7.1fx\n", p, n, a, b, a / b, b / a }'
  echo "  pdemu: $(tr '\n' ' ' <"$tmp/p.txt")  blis: $(tr '\n' ' ' <"$tmp/b.txt")" >&2
done
