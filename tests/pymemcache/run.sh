#!/usr/bin/env bash
# pymemcache's own integration tests (pymemcache/test/test_integration.py from the PyPI sdist of
# the installed pymemcache) against a server speaking memcached's protocol.
#   tests/pymemcache/run.sh [--bin PATH]      Locus (default target/release/locus), [memcached] port
#   tests/pymemcache/run.sh --memcached       Debian's memcached, to check the suite itself
# The sdist is downloaded into a temporary directory (pip download --no-binary), never committed.
# Prints pytest's summary line; exits non-zero if any test fails.
set -euo pipefail
cd "$(dirname "$0")/../.."

bin="${LOCUS_BIN:-target/release/locus}"
peer=locus
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --memcached) peer=memcached; shift ;;
    *) echo "usage: $0 [--bin PATH | --memcached]" >&2; exit 2 ;;
  esac
done

work="$(mktemp -d)"
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

version="$(python3 -c 'import pymemcache; print(pymemcache.__version__)')"
python3 -m pip download -q --no-deps --no-binary :all: "pymemcache==$version" -d "$work" >/dev/null
tar -xzf "$work"/pymemcache-"$version".tar.gz -C "$work"
src="$work/pymemcache-$version"

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
if [ "$peer" = memcached ]; then
  user=(); [ "$(id -u)" = 0 ] && user=(-u root)
  memcached -p "$port" -U 0 -l 127.0.0.1 "${user[@]}" >"$work/server.log" 2>&1 &
  pid=$!
else
  resp="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
  cat >"$work/locus.toml" <<EOF
[server]
bind = "127.0.0.1"
port = $resp

[memory]
maxmemory = 67108864

[memcached]
port = $port
EOF
  "$bin" serve --config "$work/locus.toml" >"$work/server.log" 2>&1 &
  pid=$!
fi
for _ in $(seq 100); do
  if python3 -c "import socket,sys; s=socket.create_connection(('127.0.0.1',$port),1); s.sendall(b'version\r\n'); sys.exit(0 if s.recv(64).startswith(b'VERSION') else 1)" 2>/dev/null; then
    break
  fi
  sleep 0.1
done

# The sources' own pytest configuration (setup.cfg) and conftest (--server/--port); run from the
# source tree so its conftest is used, against the installed package (same version).
cd "$src"
rc=0
python3 -m pytest -q -p no:cacheprovider -o addopts="" -m integration \
  pymemcache/test/test_integration.py --server 127.0.0.1 --port "$port" 2>&1 | tail -n 15 || rc=$?
if ! kill -0 "$pid" 2>/dev/null; then
  echo "the $peer server died during pymemcache's tests:" >&2
  cat "$work/server.log" >&2
  exit 1
fi
exit "$rc"
