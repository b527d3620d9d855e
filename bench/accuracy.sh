#!/usr/bin/env bash
# MRC accuracy (issue #3, acceptance 2): each model's mean absolute error (MAE) against ground truth.
#
#   bench/accuracy.sh [--no-klru] [--klru-max N] [--only NAME,...] [--keep-truth] [--truth-jobs 2]
#
# LRU models (exact, SHARDS_adj, AET, EAET, footprint) against exact LRU, for every shared trace with
# >= 100,000 requests and three generated traces (Zipf 0.99, loop, Zipf with a moving hot set):
#   locus mrc FILE --model exact,shards,aet,eaet,footprint --sample R --mae --csv OUT   (R = 0.01, 0.001)
# `--mae` prints each curve's MAE (and worst point) against `exact` on the same 100-point grid.
#
# K-LRU models (K = 5) against the engine's own sampled eviction simulated on the FULL trace at 20
# sizes (`--model mini --sample 1`, once with --evpool 0 = textbook K-LRU, once with --evpool 16 =
# Redis's eviction pool), for every trace (--klru-max N: only traces with at most N requests; the
# full simulation runs at 0.03-0.3 M requests/s, so the two 12.7 M-request ARC traces take most of
# the run):
#   truth:  locus mrc FILE --model mini --sample 1 --evpool E --points 20 --csv T
#   models: locus mrc FILE --model krr --k 5 --exponent X --sample R --points 20 --max-capacity C
#           locus mrc FILE --model mini --evpool E --sample R --points 20 --max-capacity C
# with C = the truth's largest capacity, so all curves share its 20 capacities. The MAE is computed
# by bench/accuracy.py (truth interpolated linearly where a grid point differs).
# --only NAME,...: measure only these traces (names as in the tables: arc_P2, gen_zipf, ...); the
#   tables still show every trace with results in the output directory.
# --keep-truth: reuse a K-LRU truth CSV already in the output directory (delete it to recompute).
# --truth-jobs 2: simulate the two truths of a trace (evpool 0 and 16) at the same time (default 1).
# Every locus run is `nice -n 10`, one trace at a time: the machine is shared.
# Output: bench/out/accuracy/ (CSVs, logs) and the markdown tables on stdout.
# Environment: LOCUS_BIN (default ${CARGO_TARGET_DIR:-target}/release/locus; built when missing).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib.sh"
klru=1 klru_max=999999999999 only="" keep_truth=0 truth_jobs=1
while [ $# -gt 0 ]; do
  case "$1" in
    --no-klru) klru=0; shift ;;
    --klru-max) klru_max=$2; shift 2 ;;
    --only) only=",$2,"; shift 2 ;;
    --keep-truth) keep_truth=1; shift ;;
    --truth-jobs) truth_jobs=$2; shift 2 ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "accuracy.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ "$klru_max" =~ ^[0-9]+$ ]] || { echo "accuracy.sh: --klru-max needs a number" >&2; exit 2; }
[[ "$truth_jobs" =~ ^[12]$ ]] || { echo "accuracy.sh: --truth-jobs is 1 or 2" >&2; exit 2; }
if [ ! -x "$LOCUS_BIN" ]; then
  (cd "$here/.." && cargo build --release --bin locus)
fi
traces_dir="$here/../../shared/traces"
[ -f "$traces_dir/stats.json" ] || { echo "accuracy.sh: no $traces_dir/stats.json" >&2; exit 1; }
out="$here/out/accuracy"
mkdir -p "$out"
rates="0.01 0.001"
exponents="1.0 1.2 1.4 1.6 1.8 1.9 2.0 2.2"

# Generated traces: 1,000,000 requests each, fixed seed.
gen() { # NAME TENANT-SPEC
  [ -s "$out/$1.csv.zst" ] || nice -n 10 "$LOCUS_BIN" trace generate -t "$2" -n 1000000 --seed 42 -o "$out/$1.csv.zst" >/dev/null
}
gen gen_zipf  pattern=zipf,alpha=0.99,keys=100000
gen gen_loop  pattern=loop,keys=50000
gen gen_phase pattern=zipf,alpha=0.99,keys=100000,phase=100000

# name path requests format
list="$out/traces.tsv"
python3 - "$traces_dir" > "$list" <<'PY'
import json, os, sys
d = sys.argv[1]
for e in json.load(open(os.path.join(d, "stats.json"))):
    f = e["file"]
    if e["requests"] < 100000:
        continue
    # cloudPhysicsIO is stored in four encodings of the same requests: measure one.
    if f.startswith("cloudPhysicsIO") and f != "cloudPhysicsIO.txt":
        continue
    # Raw key streams cannot be detected from their content: pass stats.json's format for them.
    fmt = e["format"] if e["format"] in ("int32-be", "int64-be") else "-"
    print(f.split(".")[0], os.path.join(d, f), e["requests"], fmt, sep="\t")
PY
for g in gen_zipf gen_loop gen_phase; do printf '%s\t%s\t%s\t-\n' "$g" "$out/$g.csv.zst" 1000000 >> "$list"; done
# Smallest first: an interrupted run still has every trace but the largest.
sort -t $'\t' -k3,3n -o "$list" "$list"

locus() { nice -n 10 "$LOCUS_BIN" "$@"; }
while IFS=$'\t' read -r name path reqs fmt; do
  if [ -n "$only" ] && [[ "$only" != *",$name,"* ]]; then continue; fi
  fa=()
  [ "$fmt" = - ] || fa=(--format "$fmt")
  for r in $rates; do
    echo "accuracy: LRU models $name R=$r" >&2
    locus mrc "$path" "${fa[@]}" --model exact,shards,aet,eaet,footprint --sample "$r" --mae \
      --csv "$out/lru_${name}_R$r.csv" 2> "$out/lru_${name}_R$r.log"
  done
  if [ "$klru" = 1 ] && [ "$reqs" -le "$klru_max" ]; then
    for ev in 0 16; do
      truth="$out/klru_${name}_truth_ev$ev.csv"
      if [ "$keep_truth" = 1 ] && [ -s "$truth" ]; then
        echo "accuracy: K-LRU truth $name evpool=$ev: kept $truth" >&2
        continue
      fi
      echo "accuracy: K-LRU truth $name evpool=$ev ($(date -u +%H:%M:%S) UTC)" >&2
      locus mrc "$path" "${fa[@]}" --model mini --sample 1 --evpool "$ev" --points 20 \
        --csv "$truth" 2> "$out/klru_${name}_truth_ev$ev.log" &
      [ "$truth_jobs" = 2 ] || wait $! || exit 1
    done
    # With --truth-jobs 2 both simulations run at once; each must succeed.
    for j in $(jobs -p); do wait "$j" || exit 1; done
    cap=$(tail -n 1 "$out/klru_${name}_truth_ev0.csv" | cut -d, -f4)
    for r in $rates; do
      for x in $exponents; do
        locus mrc "$path" "${fa[@]}" --model krr --k 5 --exponent "$x" --sample "$r" --points 20 \
          --max-capacity "$cap" --csv "$out/klru_${name}_R${r}_krr_x$x.csv" 2>/dev/null
      done
      for ev in 0 16; do
        locus mrc "$path" "${fa[@]}" --model mini --evpool "$ev" --sample "$r" --points 20 \
          --max-capacity "$cap" --csv "$out/klru_${name}_R${r}_mini_ev$ev.csv" 2>/dev/null
      done
    done
  fi
done < "$list"
python3 "$here/accuracy.py" "$out"
