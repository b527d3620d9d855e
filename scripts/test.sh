#!/usr/bin/env bash
# The whole Locus test suite, on a fresh machine: installs what it needs, then runs
#   1. cargo test --workspace (unit, conformance, model-based, in-process server tests),
#   2. the slow oracle tests (every shared trace against ../shared/traces/stats.json), release build,
#   3. the end-to-end suites in tests/ against the real `locus` binary: redis-py (RESP2/RESP3),
#      redis-cli smoke test, malformed-input tests, the memcached suite (also run against Debian's
#      memcached) and pymemcache's own integration tests,
#   4. Redis's own test suite, tag 7.0.15 (../shared/redis-tests), the units Locus can run, with
#      the skips in tests/redis-suite/skip.txt, and memcached's own (1.6.18,
#      ../shared/memcached-tests) with the skips in tests/memcached-suite/skip.txt,
#   5. the commands of the README and the book (docs/), run against the release binary
#      (tests/docs/check_commands.py; conventions in docs/README.md), and their links,
#   6. the soak run (tests/soak/soak.py): 3 minutes (LOCUS_SOAK_SECONDS) of mixed load with faults
#      under a checker of every value, the budget and RSS.
# Usage: scripts/test.sh [--fast]   (--fast skips step 2)
set -euo pipefail
cd "$(dirname "$0")/.."

fast=0
[ "${1:-}" = "--fast" ] && fast=1

step() { printf '\n=== %s   [%ss since start]\n' "$*" "$SECONDS"; }

# honour CARGO_TARGET_DIR (relative paths are relative to the workspace root, like cargo does)
target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$PWD/$target_dir" ;; esac
locus_bin="$target_dir/release/locus"

# Tests that need ../shared (traces with oracles) skip loudly without it and list themselves in
# this log (crates/locus-testdata); with ../shared beside the checkout, as in CI, a skip fails.
export LOCUS_SKIP_LOG="$target_dir/skipped-tests.txt"
mkdir -p "$target_dir"
: > "$LOCUS_SKIP_LOG"
# A step that retries a flaky failure once (tests/redis-suite) lists it here; printed at the end.
export LOCUS_FLAKY_LOG="$target_dir/flaky-tests.txt"
: > "$LOCUS_FLAKY_LOG"
if [ -d ../shared/traces ]; then
  export LOCUS_REQUIRE_SHARED=1
  echo "shared data: $(cd ../shared && pwd) (every test that needs it runs)"
else
  export LOCUS_REQUIRE_SHARED=0
  echo "shared data: ../shared not found beside the checkout; the tests that need it will be skipped and listed at the end"
fi
print_skips() {
  if [ -s "$LOCUS_SKIP_LOG" ]; then
    printf '\n=== %s tests skipped for missing shared data (../shared) or hardware this machine lacks:\n' "$(sort -u "$LOCUS_SKIP_LOG" | wc -l)"
    sort -u "$LOCUS_SKIP_LOG" | sed 's/^/  /'
  else
    printf '\n=== no tests skipped for missing shared data\n'
  fi
}

print_flaky() {
  if [ -s "$LOCUS_FLAKY_LOG" ]; then
    printf '\n=== %s failed once and passed on retry (flaky; see the step output above):\n' "$(wc -l < "$LOCUS_FLAKY_LOG")"
    sed 's/^/  /' "$LOCUS_FLAKY_LOG"
  fi
}

step "dependencies"
scripts/install-deps.sh

step "lint: cargo clippy (with the workspace's rust-version, so std APIs newer than it are errors)"
cargo clippy --workspace --all-targets -- -D warnings
msrv="$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)"
if rustup toolchain list 2>/dev/null | grep -q "^$msrv"; then
  step "cargo +$msrv check (the declared minimum Rust version builds)"
  cargo "+$msrv" check --workspace --all-targets
else
  echo "note: Rust $msrv (rust-version) is not installed here; clippy's incompatible_msrv lint checked std API use against it"
fi

step "cargo build (release binary for the end-to-end tests)"
cargo build --release --bin locus

step "docs: every command of the README and the book against the release binary, and their links (tests/docs)"
python3 tests/docs/check_commands.py --bin "$locus_bin"

step "cargo test --workspace"
cargo test --workspace

if [ "$fast" = 0 ]; then
  step "slow tests (release): oracles on every shared trace, large accuracy checks"
  # Only the crates that have #[ignore]d tests (a release build of every test target costs minutes),
  # and the golden numbers, which are ignored in debug builds only (minutes there, seconds here).
  ignored_pkgs=$(grep -rl '#\[ignore' crates/*/src crates/*/tests | cut -d/ -f2 | sort -u | sed 's/^/-p /')
  # shellcheck disable=SC2086
  cargo test --release $ignored_pkgs -- --ignored
  cargo test --release -p locus-sim --test golden
fi

step "end-to-end: the python suites against redis-server (checks that every assertion is Redis's behaviour)"
python3 -m pytest -q -p no:cacheprovider tests/python --peer redis

step "end-to-end: the memcached suite against Debian's memcached (checks that every assertion is memcached's behaviour)"
python3 -m pytest -q -p no:cacheprovider tests/python/test_memcached.py tests/python/test_memcached_auth.py --peer memcached

step "end-to-end: redis-cli smoke test"
bash tests/redis_cli_smoke.sh "$locus_bin"

step "end-to-end: python suites (redis-py and friends) against the real binary"
LOCUS_BIN="$locus_bin" python3 -m pytest -q -p no:cacheprovider tests/python

step "end-to-end: pymemcache's own integration tests (PyPI sdist) against the real binary's memcached port"
bash tests/pymemcache/run.sh --bin "$locus_bin"

step "end-to-end: Redis's own test suite (7.0.15, external mode) against the real binary (tests/redis-suite)"
python3 tests/redis-suite/run.py --bin "$locus_bin"

step "end-to-end: memcached's own test suite (1.6.18, external mode) against the real binary (tests/memcached-suite)"
python3 tests/memcached-suite/run.py --bin "$locus_bin"

step "soak: the checker's self-test, then ${LOCUS_SOAK_SECONDS:=180} s of mixed load with faults (tests/soak)"
LOCUS_BIN="$locus_bin" python3 tests/soak/soak.py --self-test --out "$target_dir/soak-self-test"
LOCUS_BIN="$locus_bin" python3 tests/soak/soak.py --duration "$LOCUS_SOAK_SECONDS" --out "$target_dir/soak"

print_skips
print_flaky
printf '\n=== all passed in %ss\n' "$SECONDS"
