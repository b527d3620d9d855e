#!/usr/bin/env bash
# Simulator speed (issue #4, acceptance 4): `locus simulate` requests per second per controller on a
# 10M-request generated trace, against the engine's raw in-process GET/SET rate on the same stream.
#
#   bench/sim_speed.sh [-r REPEATS] [-n REQUESTS] [--controllers "shared static dlru ..."]
#
# Workload (written to bench/out/sim_speed.toml): 4 tenants, Zipf 0.99 over 250k keys each,
# 16-byte keys, 100-byte values, miss penalties 100/200/1000/2000 µs, 64 MiB of 64 KiB pages
# (about half the working set), a decision every 100k accesses.
# Rates (requests / wall seconds, 3 repeats, min / median / max):
#   read-only    the request stream alone (generator), no engine
#   bare-engine  GET, SET on a miss, on an engine without controller, clock or accounting
#   <controller> `locus simulate --only <controller> --threads 1` (time measured inside the run:
#                replay only, excluding the oracle's first pass and the report)
# Controller overhead = 1 - rate(controller) / rate(shared), from the medians and from the best
# runs (on a shared, noisy machine the fastest of N repeats is the least disturbed one; both are
# shown); simulator overhead = rate(shared) / rate(bare-engine). Runs one at a time on one thread,
# every repeat going through all the runs in turn (interleaved).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib.sh"
repeats=3 requests=10M
controllers="shared static dlru kredis predis mpart memsweeper-max memsweeper-fair memshare"
while [ $# -gt 0 ]; do
  case "$1" in
    -r|--repeats) repeats=$2; shift 2 ;;
    -n|--requests) requests=$2; shift 2 ;;
    --controllers) controllers=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
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
interval = "100k"
TOML
  for c in $controllers; do printf '[[controller]]\nname = "%s"\n' "$c"; done
  i=0
  for pen in 100 200 1000 2000; do
    printf '[[tenant]]\nname = "t%d"\ngenerator = { pattern = "zipf", alpha = 0.99, keys = "250k", key_size = 16, value_size = 100 }\npenalty = %d\n' "$i" "$pen"
    i=$((i + 1))
  done
} > "$exp"

stats() { # values... -> "min median max"
  python3 -c 'import sys,statistics as s; v=sorted(float(x) for x in sys.argv[1:]); print(f"{v[0]:.0f} {s.median(v):.0f} {v[-1]:.0f}")' "$@"
}

declare -A rates
for ((r = 1; r <= repeats; r++)); do
  out=$("$LOCUS_BIN" simulate "$exp" --raw)
  rates[read-only]+="$(awk '/^read-only/ {print $(NF-1)}' <<<"$out") "
  rates[bare-engine]+="$(awk '/^bare-engine/ {print $(NF-1)}' <<<"$out") "
  for c in $controllers; do
    [ "${rates[$c]:-}" = failed ] && continue
    if json=$("$LOCUS_BIN" simulate "$exp" --only "$c" --threads 1 --json --quiet 2>/dev/null); then
      rates[$c]+="$(python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["requests_per_sec"])' <<<"$json") "
    else
      rates[$c]="failed"
    fi
  done
done

shared_med=$(stats ${rates[shared]} | awk '{print $2}')
shared_max=$(stats ${rates[shared]} | awk '{print $3}')
bare_med=$(stats ${rates[bare-engine]} | awk '{print $2}')
echo "requests: $requests, repeats: $repeats, binary: $LOCUS_BIN"
echo
echo "| run | req/s min | median | max | vs bare engine | controller overhead vs shared (medians) | (best runs) |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for k in read-only bare-engine $controllers; do
  if [ "${rates[$k]}" = failed ]; then
    echo "| $k | failed | | | | | |"
    continue
  fi
  read -r lo med hi <<<"$(stats ${rates[$k]})"
  vs=$(python3 -c "print(f'{$med / $bare_med:.2f}x')")
  ov="" ob=""
  case "$k" in
    read-only|bare-engine) ;;
    *)
      ov=$(python3 -c "print(f'{100 * (1 - $med / $shared_med):.1f}%')")
      ob=$(python3 -c "print(f'{100 * (1 - $hi / $shared_max):.1f}%')")
      ;;
  esac
  echo "| $k | $lo | $med | $hi | $vs | $ov | $ob |"
done
