#!/usr/bin/env bash
# Fuzzes script inputs (cjson, cmsgpack, bit, struct, redis.call arguments, small script bodies) against
# an in-process two-tenant server for a bounded time (default 60 s): every reply well-formed, the
# server alive, the other tenant's key unchanged:
#   bench/fuzz-scripts.sh [SECONDS]
# Installs cargo-fuzz if missing (RUSTC_BOOTSTRAP=1 gives cargo-fuzz its nightly flags on a stable
# toolchain).
set -euo pipefail
secs="${1:-60}"
cd "$(dirname "$0")/../crates/locus-server"
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
export RUSTC_BOOTSTRAP=1
exec cargo fuzz run scripts -- -max_total_time="$secs" -rss_limit_mb=2048
