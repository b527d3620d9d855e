#!/usr/bin/env bash
# Installs what the tests and benchmarks need, when it is missing: Debian's redis-server,
# redis-tools and memcached (the peers and their clients), tcl (Redis's test suite), chromium (the
# live page's browser test), nutcracker (twemproxy), postgresql (`locus replay`'s backend), numactl, netcat and curl (the
# book's examples), and the Python packages in tests/requirements.txt. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"

need_apt=()
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need_apt+=(redis-tools)
command -v redis-benchmark >/dev/null 2>&1 || need_apt+=(redis-tools)
command -v memcached >/dev/null 2>&1 || need_apt+=(memcached)
command -v tclsh >/dev/null 2>&1 || need_apt+=(tcl)  # Redis's own test suite (tests/redis-suite)
command -v prove >/dev/null 2>&1 || need_apt+=(perl)  # memcached's own test suite (tests/memcached-suite)
command -v nutcracker >/dev/null 2>&1 || need_apt+=(nutcracker)  # twemproxy (tests/python/test_twemproxy.py)
command -v nc >/dev/null 2>&1 || need_apt+=(netcat-openbsd)  # the book's memcached examples (tests/docs)
command -v curl >/dev/null 2>&1 || need_apt+=(curl)  # the book's /metrics examples (tests/docs)
# The live page's browser test (tests/python/test_live_page.py): Debian's headless Chromium.
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || need_apt+=(chromium)
python3 -m pip --version >/dev/null 2>&1 || need_apt+=(python3-pip)
# numactl -H: how many NUMA nodes the machine has (the engine's numa:<node> slow-tier backend and
# its node-1 test, which skips on a one-node machine).
command -v numactl >/dev/null 2>&1 || need_apt+=(numactl)
# `locus replay`'s postgres backend (tests/python/test_replay.py, bench/live): Debian's PostgreSQL,
# whose initdb/postgres live under /usr/lib/postgresql/<version>/bin (the harness finds them there).
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || need_apt+=(postgresql)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "installing: ${need_apt[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
  # Debian may start the packaged services; Locus's tests use their own ports and processes.
fi

# Debian's own python3 refuses system-wide pip installs (PEP 668): retry for the user, then override.
pip_install() {
  python3 -m pip install -q -r tests/requirements.txt 2>/dev/null \
    || python3 -m pip install -q --user -r tests/requirements.txt 2>/dev/null \
    || python3 -m pip install -q --user --break-system-packages -r tests/requirements.txt
}
if ! python3 -c 'import redis, pytest, prometheus_client, pymemcache' >/dev/null 2>&1 || [ "${LOCUS_REINSTALL_PY:-0}" = 1 ]; then
  pip_install
  python3 -c 'import redis, pytest, prometheus_client, pymemcache' || { echo "install-deps: redis-py/pytest/prometheus_client/pymemcache still not importable" >&2; exit 1; }
else
  python3 -m pip install -q -r tests/requirements.txt >/dev/null 2>&1 || true
fi
# The Node and Go clients of tests/python/test_scripting_frameworks.py (pinned in tests/clients);
# without node or go that test skips and says so.
if command -v npm >/dev/null 2>&1; then
  (cd tests/clients && npm ci --no-audit --no-fund --loglevel=error) || echo "install-deps: npm ci in tests/clients failed" >&2
fi
if command -v go >/dev/null 2>&1; then
  (cd tests/clients/go && go mod download) || echo "install-deps: go mod download in tests/clients/go failed" >&2
fi
echo "dependencies ok: $(redis-server --version | cut -d' ' -f3), python $(python3 -c 'import redis; print("redis-py", redis.__version__)')"
