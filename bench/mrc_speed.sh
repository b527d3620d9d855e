#!/usr/bin/env bash
# MRC speed (issue #3): `locus mrc` models vs the libcachesim PyPI package (0.3.5), same input file,
# same 10 capacities, interleaved, several repeats; min / median / max requests per second.
#
#   bench/mrc_speed.sh [-r REPEATS] [--traces "arc_P2 arc_P6"] [--models "exact shards krr"]
#                      [--sample 0.01]
#
# Input: each ARC trace (traces/arc_*.lis.zst, one request per 512-byte block) is expanded once into
# libCacheSim's oracleGeneral binary format under bench/out/ (libCacheSim's fastest reader; Locus
# reads the same file), so both tools parse the same bytes. Sizes are ignored: object capacity.
# Capacities: i/10 of the unique keys for i = 1..10 (`locus mrc --points 10` spaces its points the
# same way up to the working set).
#   locus:       `locus mrc FILE --model M --points 10 [--sample R] --csv OUT` (one pass, all 10 points)
#   libcachesim: plain LRU, one `process_trace` per capacity on a fresh reader (10 passes), and the
#                same with its spatial sampler at rate R (capacities scaled by R).
# requests/s = trace requests / wall seconds for the whole 10-point curve (process start to exit for
# Locus, so it includes reading the file; the libcachesim figure is timed inside Python around the
# 10 simulations, which excludes interpreter start-up).
# Also printed: each curve's miss ratios, so a fast but wrong curve shows.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib.sh"
repeats=3 traces="arc_P2 arc_P6" models="exact shards krr" sample=0.01
while [ $# -gt 0 ]; do
  case "$1" in
    -r|--repeats) repeats=$2; shift 2 ;;
    --traces) traces=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --sample) sample=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "mrc_speed.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ "$repeats" =~ ^[1-9][0-9]*$ ]] || { echo "mrc_speed.sh: -r needs a positive integer" >&2; exit 2; }
traces_dir="$here/../../shared/traces"
out="$here/out"
mkdir -p "$out"
venv="$here/.venv"
if ! "$venv/bin/python" -c 'import libcachesim' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q libcachesim==0.3.5
fi
[ -x "$LOCUS_BIN" ] || { echo "mrc_speed.sh: no Locus binary at $LOCUS_BIN" >&2; exit 1; }
stamp=$(date -u +%Y%m%dT%H%M%SZ)
raw="$out/mrc_speed-$stamp.csv"
echo "trace,tool,model,repeat,requests,seconds,miss_ratios" >"$raw"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC')  $(git -C "$here" rev-parse --short HEAD)  libcachesim $("$venv/bin/python" -c 'import libcachesim; print(libcachesim.__version__)')" >&2

for t in $traces; do
  bin="$out/$t.oracleGeneral.bin"
  meta="$out/$t.meta.json"
  if [ ! -s "$bin" ] || [ ! -s "$meta" ]; then
    echo "converting $t -> $bin" >&2
    "$venv/bin/python" "$here/lcs_mrc.py" convert "$traces_dir/$t.lis.zst" "$bin" >"$meta"
  fi
  reqs=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["requests"])' "$meta")
  uniq=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["unique"])' "$meta")
  fr=0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9,1.0
  for rep in $(seq 1 "$repeats"); do
    for m in $models; do
      args=(--model "$m" --points 10 --format oracle-general)
      case "$m" in shards|krr|footprint|aet|eaet) args+=(--sample "$sample") ;; esac
      csv="$out/mrc-$t-$m.csv"
      s0=$(date +%s.%N)
      "$LOCUS_BIN" mrc "$bin" "${args[@]}" --csv "$csv" >/dev/null 2>"$out/mrc-$t-$m.err" ||
        { echo "locus mrc $m failed:" >&2; tail -3 "$out/mrc-$t-$m.err" >&2; exit 1; }
      s1=$(date +%s.%N)
      mrs=$(awk -F, 'NR > 1 { printf "%s%.4f", (n++ ? " " : ""), $6 }' "$csv")
      label=$m; [ "$m" != exact ] && label="$m R=$sample"
      echo "$t,locus,$label,$rep,$reqs,$(echo "$s1 - $s0" | bc),$mrs" >>"$raw"
      echo "  $t rep $rep locus $label: $(echo "$s1 - $s0" | bc) s" >&2
    done
    for s in 0 "$sample"; do
      line=$("$venv/bin/python" "$here/lcs_mrc.py" run "$bin" --unique "$uniq" --fractions "$fr" --sample "$s" | tail -1)
      secs=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["seconds"])' "$line")
      mrs=$(python3 -c 'import json,sys; print(" ".join("%.4f" % p["miss_ratio"] for p in json.loads(sys.argv[1])["points"]))' "$line")
      label="LRU"; [ "$s" != 0 ] && label="LRU spatial R=$s"
      echo "$t,libcachesim,$label,$rep,$reqs,$secs,$mrs" >>"$raw"
      echo "  $t rep $rep libcachesim $label: $secs s" >&2
    done
  done
done

python3 - "$raw" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def mmm(xs, fmt):
    xs = sorted(xs)
    return " / ".join(fmt.format(x) for x in (xs[0], statistics.median(xs), xs[-1]))
print(f"raw results: {sys.argv[1]}\n")
print("| trace | tool | model | requests | requests/s (min / median / max) | seconds (median) | miss ratio at 10%..100% of keys (last run) |")
print("|---|---|---|---:|---|---:|---|")
seen = []
for r in rows:
    k = (r["trace"], r["tool"], r["model"])
    if k not in seen:
        seen.append(k)
for t, tool, m in seen:
    rs = [r for r in rows if (r["trace"], r["tool"], r["model"]) == (t, tool, m)]
    n = int(rs[0]["requests"])
    print(f"| {t} | {tool} | {m} | {n:,} | {mmm([n / float(r['seconds']) for r in rs], '{:,.0f}')} | "
          f"{statistics.median(float(r['seconds']) for r in rs):.2f} | {rs[-1]['miss_ratios']} |")
EOF
