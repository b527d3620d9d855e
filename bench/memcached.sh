#!/usr/bin/env bash
# Locus's memcached listener against memcached 1.6 (-t 2), side by side in one run (issue #13):
# throughput with bench/mcload.c (2 threads, 50 connections, unpipelined, 100-byte values, 90% get /
# 10% set, and gets of 16 keys; every reply checked) and RSS per item for
# 1,000,000 x 100-byte items, both servers at the same memory limit, repeats interleaved
# (Locus, memcached, Locus, ...), min / median / max.
#
#   bench/memcached.sh [--repeats 3] [--seconds 10] [--items 1000000] [--maxmemory-mb 1024]
#                      [--servers "locus memcached"] [--skip-throughput] [--skip-memory] [--slices N]
#                      [--variant LABEL=BINARY[,offload|,inline]]   (another Locus, named in --servers;
#                      [memcached] offload = true / false, or the binary's default)
#                      [--workloads "get set mget16 pipeget16 pipeset16"]   (issue 28: pure get / set,
#                      16-key gets, 16-deep pipelines; default the 90/10 mix and the 16-key get)
#                      [--mixed-sets 500000 --mixed-mb 64 --seed 1]   (issue 28: RSS and items held after
#                      that many sets of 50..5000-byte values under a 64 MiB budget)
#
# Builds the release binary first unless LOCUS_BIN is set. Not run in CI.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ -z "${LOCUS_BIN:-}" ]; then
  (cd "$here/.." && CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-1}" cargo build --release --bin locus -q)
fi
mkdir -p "$here/out"
export MCLOAD="$here/out/mcload"
cc -O2 -Wall -pthread -o "$MCLOAD" "$here/mcload.c"
command -v memcached >/dev/null || { echo "memcached missing: scripts/install-deps.sh" >&2; exit 1; }
exec python3 "$here/memcached_bench.py" "$@"
