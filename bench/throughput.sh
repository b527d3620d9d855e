#!/usr/bin/env bash
# Throughput and latency, Locus vs redis-server, side by side in one run (issue #2).
#
#   bench/throughput.sh [-n REQUESTS] [-r REPEATS] [-c CLIENTS] [-d BYTES] [-P "1 16"] [-t TESTS]
#                       [--keyspace N] [--servers "locus redis"] [--maxmemory BYTES]
#                       [--policy allkeys-lru] [--samples 5] [--pin] [--out DIR]
#
# For every repeat, each server in turn (A, B, A, B, ...) is started fresh on its own free loopback
# port with the same maxmemory/policy/samples, then `redis-benchmark -t TESTS -n N -c C -d D -P p
# --csv` runs against it for each pipeline depth (TESTS: set,get by default; the collection types:
# -t hset,lpush,lpop,sadd,spop,zadd,zpopmin,lrange_100), and the server is stopped by PID. The same client
# binary drives both servers. Prints a markdown table of min/median/max requests/s, p50 and p99
# (ms) per (server, test, pipeline), and the A/B ratios of the paired runs (same repeat, same test).
#
# Defaults are the issue's: -n 1000000 -c 50 -d 100, -P 1 and 16, 3 repeats, 1 GiB allkeys-lru.
# Development runs: -n 100000 -r 1. `--servers "redis redis"` tests the script without Locus.
# --keyspace N adds `-r N` (random keys key:000000000000..N-1) instead of one fixed key.
# --pin runs the server on CPU 0 and redis-benchmark on CPU 1 (taskset).
# Raw results: DIR/throughput-<UTC timestamp>.csv (default DIR = bench/out).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

n=1000000 repeats=3 clients=50 dsize=100 pipelines="1 16" keyspace="" servers="locus redis" tests=set,get
maxmem=$((1024 * 1024 * 1024)) policy=allkeys-lru samples=5 out="$here/out"
while [ $# -gt 0 ]; do
  case "$1" in
    -n) n=$2; shift 2 ;;
    -r|--repeats) repeats=$2; shift 2 ;;
    -c) clients=$2; shift 2 ;;
    -d) dsize=$2; shift 2 ;;
    -P) pipelines=$2; shift 2 ;;
    -t) tests=$2; shift 2 ;;
    --keyspace) keyspace=$2; shift 2 ;;
    --servers) servers=$2; shift 2 ;;
    --maxmemory) maxmem=$2; shift 2 ;;
    --policy) policy=$2; shift 2 ;;
    --samples) samples=$2; shift 2 ;;
    --pin) export BENCH_PIN=1; shift ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "throughput.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
for v in "$n" "$repeats" "$clients" "$dsize" "$maxmem" "$samples"; do
  [[ "$v" =~ ^[0-9]+$ ]] || { echo "throughput.sh: '$v' is not a non-negative integer" >&2; exit 2; }
done
read -r -a server_list <<<"$servers"
[ "${#server_list[@]}" -eq 2 ] || { echo "throughput.sh: --servers needs exactly two kinds" >&2; exit 2; }

mkdir -p "$out"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
raw="$out/throughput-$stamp.csv"
logdir=$(mktemp -d "${TMPDIR:-/tmp}/locus-bench.XXXXXX")
trap 'bench_stop_all; rm -rf "$logdir"' EXIT
trap 'exit 130' INT TERM

client_pin=()
[ "${BENCH_PIN:-0}" = 1 ] && client_pin=(taskset -c 1)
extra=()
[ -n "$keyspace" ] && extra=(-r "$keyspace")

# Labels: "locus"/"redis", or "redis#1"/"redis#2" when both slots run the same kind.
labels=("${server_list[0]}" "${server_list[1]}")
if [ "${server_list[0]}" = "${server_list[1]}" ]; then
  labels=("${server_list[0]}#1" "${server_list[1]}#2")
fi

echo "server,repeat,pipeline,test,rps,avg_ms,p50_ms,p99_ms,max_ms" >"$raw"
echo "# $(date -u '+%Y-%m-%d %H:%M UTC')  $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')  $(redis-benchmark --version)" >&2
for rep in $(seq 1 "$repeats"); do
  for slot in 0 1; do
    kind=${server_list[$slot]} label=${labels[$slot]}
    port=$(bench_free_port)
    bench_start "$kind" "$port" "$maxmem" "$policy" "$samples" "$logdir/$label-$rep.log"
    pid=$BENCH_PID
    for p in $pipelines; do
      # redis-benchmark --csv: "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",
      #                        "p95_latency_ms","p99_latency_ms","max_latency_ms"
      "${client_pin[@]}" redis-benchmark -h "$BENCH_HOST" -p "$port" -t "$tests" -n "$n" -c "$clients" \
        -d "$dsize" -P "$p" "${extra[@]}" --csv 2>/dev/null |
        tr -d '"' | awk -F, -v s="$label" -v r="$rep" -v p="$p" \
          'NR > 1 && NF >= 8 { printf "%s,%s,%s,%s,%s,%s,%s,%s,%s\n", s, r, p, $1, $2, $3, $5, $7, $8 }' \
        >>"$raw"
      echo "  repeat $rep $label -P $p: $(grep -c "^$label,$rep,$p," "$raw") tests" >&2
    done
    bench_stop "$pid"
  done
done

python3 - "$raw" "${labels[0]}" "${labels[1]}" <<'EOF'
import csv, statistics, sys
raw, a, b = sys.argv[1:4]
rows = list(csv.DictReader(open(raw)))
def mmm(xs, fmt):
    xs = sorted(xs)
    return " / ".join(fmt.format(x) for x in (xs[0], statistics.median(xs), xs[-1])) if xs else "—"
keys = []
for r in rows:
    k = (r["test"], int(r["pipeline"]))
    if k not in keys:
        keys.append(k)
print(f"raw results: {raw}\n")
print("| server | test | -P | requests/s (min / median / max) | p50 ms (min / med / max) | p99 ms (min / med / max) | runs |")
print("|---|---|---:|---|---|---|---:|")
for test, p in keys:
    for s in (a, b):
        rs = [r for r in rows if r["server"] == s and r["test"] == test and int(r["pipeline"]) == p]
        print(f"| {s} | {test} | {p} | {mmm([float(r['rps']) for r in rs], '{:,.0f}')} | "
              f"{mmm([float(r['p50_ms']) for r in rs], '{:.3f}')} | {mmm([float(r['p99_ms']) for r in rs], '{:.3f}')} | {len(rs)} |")
print()
print(f"Paired ratios {a}/{b} (same repeat, same test; min / median / max):\n")
print(f"| test | -P | requests/s ratio | p99 ratio (lower is better for {a}) | pairs |")
print("|---|---:|---|---|---:|")
for test, p in keys:
    rr, lr = [], []
    for rep in sorted({r["repeat"] for r in rows}):
        ra = [r for r in rows if r["server"] == a and r["test"] == test and int(r["pipeline"]) == p and r["repeat"] == rep]
        rb = [r for r in rows if r["server"] == b and r["test"] == test and int(r["pipeline"]) == p and r["repeat"] == rep]
        if ra and rb:
            rr.append(float(ra[0]["rps"]) / float(rb[0]["rps"]))
            if float(rb[0]["p99_ms"]) > 0:
                lr.append(float(ra[0]["p99_ms"]) / float(rb[0]["p99_ms"]))
    print(f"| {test} | {p} | {mmm(rr, '{:.2f}x')} | {mmm(lr, '{:.2f}x')} | {len(rr)} |")
EOF
