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
  step "slow tests (release): oracles on every shared trace"
  cargo test --release --workspace -- --ignored
fi

step "end-to-end: redis-cli smoke test"
bash tests/redis_cli_smoke.sh target/release/locus

step "end-to-end: python suites (redis-py and friends) against the real binary"
LOCUS_BIN="$PWD/target/release/locus" python3 -m pytest -q tests/python
