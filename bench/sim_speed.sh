#!/usr/bin/env bash
# Simulator speed (issue #4, acceptance 4): `locus simulate` requests per second per controller on a
# 10M-request generated trace, against the engine's raw in-process GET/SET rate on the same stream.
#
#   bench/sim_speed.sh [-r REPEATS] [-n REQUESTS] [--controllers "shared dlru ..."] [--modes "off on"]
#                      [-i INTERVAL] [--write-only]   (only write the experiment file, bench/out/sim_speed.toml)
#
# Workload (written to bench/out/sim_speed.toml): 4 tenants, Zipf 0.99 over 250k keys each,
# 16-byte keys, 100-byte values, miss penalties 100/200/1000/2000 µs, 64 MiB of 64 KiB pages
# (about half the working set), a decision every 100k accesses (-i: kRedis's dissertation decides
# every 1M requests, DLRU every 5M).
# Rates (requests / wall seconds, min / median / max over the repeats):
#   read-only      the request stream alone (generator), no engine
#   bare-engine    GET, SET on a miss, on an engine without controller, clock or accounting
#   <controller>   `locus simulate --only <controller> --threads 1 --offload <mode>` (time measured
#                  inside the run: replay only, excluding the oracle's first pass and the report),
#                  once per mode: `off` = the profilers run on the replay thread (inline), `on` =
#                  on a profiling thread of their own (same results, bit for bit)
#   shared (again) `shared` a second time in every repeat: the noise control (no work differs)
# Controller overhead = 1 - rate(controller) / rate(shared), from the medians and from the best
# runs (on a shared, noisy machine the fastest of N repeats is the least disturbed one; both are
# shown); simulator overhead = rate(shared) / rate(bare-engine). CPU columns (medians): the replay
# thread's CPU seconds (from the run's report) and the whole process's user + system seconds
# (includes the profiling thread, the workload set-up and the report). Runs one at a time, every
# repeat going through all the runs in turn (interleaved).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib.sh"
repeats=3 requests=10M modes="off on" write_only=0 interval=100k
controllers="shared dlru kredis predis mpart memsweeper-max memsweeper-fair memshare"
while [ $# -gt 0 ]; do
  case "$1" in
    -r|--repeats) repeats=$2; shift 2 ;;
    -n|--requests) requests=$2; shift 2 ;;
    --controllers) controllers=$2; shift 2 ;;
    --modes) modes=$2; shift 2 ;;
    -i|--interval) interval=$2; shift 2 ;;
    --write-only) write_only=1; shift ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[ -x "$LOCUS_BIN" ] || { echo "no binary at $LOCUS_BIN (cargo build --release -p locus)" >&2; exit 1; }
mkdir -p "$here/out"
exp="$here/out/sim_speed.toml"
{
  cat <<TOML
name = "sim-speed"
seed = 1
memory = "64MiB"
page_size = "64KiB"
requests = "$requests"
interval = "$interval"
TOML
  for c in $controllers; do printf '[[controller]]\nname = "%s"\n' "$c"; done
  i=0
  for pen in 100 200 1000 2000; do
    printf '[[tenant]]\nname = "t%d"\ngenerator = { pattern = "zipf", alpha = 0.99, keys = "250k", key_size = 16, value_size = 100 }\npenalty = %d\n' "$i" "$pen"
    i=$((i + 1))
  done
} > "$exp"
[ "$write_only" = 1 ] && exit 0

stats() { # values... -> "min median max"
  python3 -c 'import sys,statistics as s; v=sorted(float(x) for x in sys.argv[1:]); print(f"{v[0]:.0f} {s.median(v):.0f} {v[-1]:.0f}")' "$@"
}
median() { # values... -> median, 2 decimals
  python3 -c 'import sys,statistics as s; print(f"{s.median(float(x) for x in sys.argv[1:]):.2f}")' "$@"
}
# one_run CONTROLLER MODE -> "rate replay_cpu process_cpu" (process CPU: user + system of the child)
one_run() {
  python3 - "$LOCUS_BIN" "$exp" "$1" "$2" <<'PY'
import json, resource, subprocess, sys
locus, exp, ctl, mode = sys.argv[1:]
before = resource.getrusage(resource.RUSAGE_CHILDREN)
out = subprocess.run([locus, "simulate", exp, "--only", ctl, "--threads", "1", "--offload", mode,
                      "--json", "--quiet"], capture_output=True, text=True)
after = resource.getrusage(resource.RUSAGE_CHILDREN)
if out.returncode != 0:
    sys.exit(1)
run = json.loads(out.stdout)["runs"][0]
cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
print(run["requests_per_sec"], run.get("replay_cpu_secs") or 0, cpu)
PY
}

declare -A rates rcpu pcpu
rows=()
for c in $controllers; do
  for m in $modes; do
    [ "$c" = shared ] && [ "$m" != off ] && continue
    rows+=("$c|$m")
  done
  [ "$c" = shared ] && rows+=("shared (again)|off")
done
for ((r = 1; r <= repeats; r++)); do
  out=$("$LOCUS_BIN" simulate "$exp" --raw)
  rates[read-only]+="$(awk '/^read-only/ {print $(NF-1)}' <<<"$out") "
  rates[bare-engine]+="$(awk '/^bare-engine/ {print $(NF-1)}' <<<"$out") "
  for row in "${rows[@]}"; do
    c=${row%|*} m=${row#*|}
    [ "${rates[$row]:-}" = failed ] && continue
    if res=$(one_run "${c% (again)}" "$m"); then
      read -r rate rc pc <<<"$res"
      rates[$row]+="$rate " rcpu[$row]+="$rc " pcpu[$row]+="$pc "
    else
      rates[$row]="failed"
    fi
  done
done

shared_med=$(stats ${rates[shared|off]} | awk '{print $2}')
shared_max=$(stats ${rates[shared|off]} | awk '{print $3}')
bare_med=$(stats ${rates[bare-engine]} | awk '{print $2}')
echo "requests: $requests, decision interval: $interval, repeats: $repeats, binary: $LOCUS_BIN"
echo
echo "| run | offload | req/s min | median | max | vs bare engine | overhead vs shared (medians) | (best runs) | replay thread CPU s | process CPU s |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for k in read-only bare-engine "${rows[@]}"; do
  c=${k%|*} m=""
  [[ $k == *"|"* ]] && m=${k#*|}
  if [ "${rates[$k]}" = failed ]; then
    echo "| $c | $m | failed | | | | | | | |"
    continue
  fi
  read -r lo med hi <<<"$(stats ${rates[$k]})"
  vs=$(python3 -c "print(f'{$med / $bare_med:.2f}x')")
  ov="" ob="" rc="" pc=""
  case "$k" in
    read-only|bare-engine) ;;
    *)
      ov=$(python3 -c "print(f'{100 * (1 - $med / $shared_med):.1f}%')")
      ob=$(python3 -c "print(f'{100 * (1 - $hi / $shared_max):.1f}%')")
      rc=$(median ${rcpu[$k]}) pc=$(median ${pcpu[$k]})
      ;;
  esac
  echo "| $c | $m | $lo | $med | $hi | $vs | $ov | $ob | $rc | $pc |"
done
