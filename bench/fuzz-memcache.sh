#!/usr/bin/env bash
# Fuzzes the memcached parser (text, meta and the ASCII auth exchange) for a bounded time (default 60 s):
#   bench/fuzz-memcache.sh [SECONDS]
# Installs cargo-fuzz if missing. cargo-fuzz needs nightly compiler flags; with a stable toolchain
# RUSTC_BOOTSTRAP=1 enables them. The proptest equivalent runs everywhere:
#   cargo test -p locus-protocol --test memcache
set -euo pipefail
secs="${1:-60}"
cd "$(dirname "$0")/../crates/locus-protocol"
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
export RUSTC_BOOTSTRAP=1
exec cargo fuzz run memcache_request -- -max_total_time="$secs" -rss_limit_mb=1024
