#!/usr/bin/env bash
# Fuzzes sequences of typed commands against an in-process server for a bounded time (default
# 60 s), checked against the naive model of crates/locus-server/tests/model:
#   bench/fuzz-typed.sh [SECONDS]
# Installs cargo-fuzz if missing (RUSTC_BOOTSTRAP=1 gives cargo-fuzz its nightly flags on a stable
# toolchain). The proptest equivalent runs in the test suite:
#   cargo test -p locus-server --test typed_model
set -euo pipefail
secs="${1:-60}"
cd "$(dirname "$0")/../crates/locus-server"
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
export RUSTC_BOOTSTRAP=1
exec cargo fuzz run typed_commands -- -max_total_time="$secs" -rss_limit_mb=2048
