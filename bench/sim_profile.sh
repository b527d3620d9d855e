#!/usr/bin/env bash
# Where a controller's cost lands (issue #4, acceptance 4): the share of the replay thread's CPU
# samples spent in controller code, by `perf record` (cpu-clock sampling), on the workload of
# bench/sim_speed.sh. Unlike the wall-clock rates this does not depend on how fast the machine
# happens to be during the run: it counts where the replay thread's own time went.
#
#   bench/sim_profile.sh [-r REPEATS] [-n REQUESTS] [-i INTERVAL] [--controllers "kredis ..."]
#                        [--modes "off on"]
#
# Per controller and offload mode (median over the repeats):
#   controller code   samples of the replay thread in the profilers, the decisions and the hand-over
#                     (symbols of locus_mrc, locus_alloc, locus_engine::control, Engine::observe,
#                     Engine::run_controller / pool_states), as a share of the replay thread's samples
#   kernel            the replay thread's kernel samples (page faults, the profiling thread's wake-ups)
#   profiling thread  samples of the profiling thread (offload), as a share of the replay thread's
# `shared` runs the same way as the reference: its controller code is the framework's own (the miss
# penalty monitor). Needs `perf` (linux-perf) and permission to sample this process.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib.sh"
repeats=3 requests=10M modes="off on" interval=100k
controllers="shared dlru kredis predis mpart"
while [ $# -gt 0 ]; do
  case "$1" in
    -r|--repeats) repeats=$2; shift 2 ;;
    -n|--requests) requests=$2; shift 2 ;;
    --controllers) controllers=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    -i|--interval) interval=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
command -v perf >/dev/null || { echo "perf is not installed (apt-get install linux-perf)" >&2; exit 1; }
[ -x "$LOCUS_BIN" ] || { echo "no binary at $LOCUS_BIN (cargo build --release -p locus)" >&2; exit 1; }
# The same workload as sim_speed.sh (it writes the file).
"$here/sim_speed.sh" -n "$requests" -i "$interval" --controllers "$controllers" --write-only
exp="$here/out/sim_speed.toml"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

classify() { # perf.data -> "controller% kernel% profiler%"
  perf report -i "$1" --no-children --sort comm,symbol -n --stdio 2>/dev/null | python3 -c '
import re, sys
data = ctl = kern = prof = 0
for line in sys.stdin:
    m = re.match(r"\s*[\d.]+%\s+(\d+)\s+(\S+)\s+\[(.)\]\s+(.*)", line)
    if not m:
        continue
    n, comm, kind, sym = int(m.group(1)), m.group(2), m.group(3), m.group(4)
    if comm == "locus-profiler":
        prof += n
        continue
    data += n
    if kind == "k":
        kern += n
    elif re.search(r"locus_mrc::|locus_alloc::|locus_engine::control::|Engine::observe|"
                   r"Engine::run_controller|Engine::pool_states", sym):
        ctl += n
d = max(data, 1)
print(f"{100*ctl/d:.2f} {100*kern/d:.2f} {100*prof/d:.2f}")
'
}

declare -A res
for ((r = 1; r <= repeats; r++)); do
  for c in $controllers; do
    for m in $modes; do
      perf record -q -F 2000 -o "$tmp/p.data" "$LOCUS_BIN" simulate "$exp" --only "$c" --threads 1 \
        --offload "$m" --quiet >/dev/null 2>&1
      res[$c|$m]+="$(classify "$tmp/p.data");"
    done
  done
done

echo "requests: $requests, decision interval: $interval, repeats: $repeats, binary: $LOCUS_BIN"
echo
echo "| controller | offload | controller code, % of replay thread | kernel % | profiling thread, % of replay thread |"
echo "|---|---|---:|---:|---:|"
for c in $controllers; do
  for m in $modes; do
    python3 - "$c" "$m" "${res[$c|$m]}" <<'PY'
import statistics as s, sys
c, m, runs = sys.argv[1], sys.argv[2], [r.split() for r in sys.argv[3].split(";") if r]
col = lambda i: s.median(float(r[i]) for r in runs)
rng = lambda i: f"{min(float(r[i]) for r in runs):.2f}–{max(float(r[i]) for r in runs):.2f}"
prof = f"{col(2):.1f}" if m == "on" else ""
print(f"| {c} | {m} | {col(0):.2f} ({rng(0)}) | {col(1):.2f} | {prof} |")
PY
  done
done
