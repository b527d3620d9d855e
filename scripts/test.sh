#!/usr/bin/env bash
# The whole Locus test suite, on a fresh machine: installs what it needs, then runs
#   1. cargo test --workspace (unit, conformance, model-based, in-process server tests),
#   2. the slow oracle tests (every shared trace against ../shared/traces/stats.json), release build,
#   3. the end-to-end suites in tests/ against the real `locus` binary: redis-py (RESP2/RESP3),
#      redis-cli smoke test, malformed-input tests.
# Usage: scripts/test.sh [--fast]   (--fast skips step 2)
set -euo pipefail
cd "$(dirname "$0")/.."

fast=0
[ "${1:-}" = "--fast" ] && fast=1

step() { printf '\n=== %s\n' "$*"; }

step "dependencies"
scripts/install-deps.sh

step "cargo build (release binary for the end-to-end tests)"
cargo build --release --bin locus

step "cargo test --workspace"
cargo test --workspace

if [ "$fast" = 0 ]; then
  step "slow tests (release): oracles on every shared trace, large accuracy checks"
  cargo test --release --workspace -- --ignored
fi

# honour CARGO_TARGET_DIR (relative paths are relative to the workspace root, like cargo does)
target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$PWD/$target_dir" ;; esac
locus_bin="$target_dir/release/locus"

step "end-to-end: the python suites against redis-server (checks that every assertion is Redis's behaviour)"
python3 -m pytest -q -p no:cacheprovider tests/python --peer redis

step "end-to-end: redis-cli smoke test"
bash tests/redis_cli_smoke.sh "$locus_bin"

step "end-to-end: python suites (redis-py and friends) against the real binary"
LOCUS_BIN="$locus_bin" python3 -m pytest -q -p no:cacheprovider tests/python
