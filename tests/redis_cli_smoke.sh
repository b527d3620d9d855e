#!/usr/bin/env bash
# redis-cli smoke test: starts `BIN serve` on a free loopback port, drives it with redis-cli
# (plain commands, RESP3, --pipe mass insert, --scan), checks every output, stops the server by PID.
# Usage: tests/redis_cli_smoke.sh BIN      (BIN = target/release/locus, or a redis-server to validate
#                                           the script itself against Redis)
# Exits non-zero with a message naming the failed check.
set -euo pipefail

BIN="${1:?usage: $0 path/to/locus (or redis-server)}"
command -v redis-cli >/dev/null || { echo "FAIL: redis-cli not installed (scripts/install-deps.sh)"; exit 1; }
[ -x "$BIN" ] || BIN="$(command -v "$BIN" || true)"
[ -n "$BIN" ] && [ -x "$BIN" ] || { echo "FAIL: server binary '${1}' not found or not executable"; exit 1; }

WORK="$(mktemp -d)"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
LOG="$WORK/server.log"
PID=""

cleanup() {
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
    kill -TERM "$PID" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$PID" 2>/dev/null && kill -KILL "$PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*"
  echo "--- server log ($LOG) ---"
  tail -n 40 "$LOG" 2>/dev/null || true
  exit 1
}

if [ "$(basename "$BIN")" = "redis-server" ]; then
  "$BIN" --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize no --dir "$WORK" >"$LOG" 2>&1 &
else
  "$BIN" serve --port "$PORT" --bind 127.0.0.1 >"$LOG" 2>&1 &
fi
PID=$!

cli() { redis-cli -h 127.0.0.1 -p "$PORT" "$@"; }

# readiness: poll PING (bounded), fail fast if the process exited
ready=0
for _ in $(seq 1 200); do
  kill -0 "$PID" 2>/dev/null || fail "server exited before answering PING"
  if [ "$(cli PING 2>/dev/null || true)" = "PONG" ]; then ready=1; break; fi
  sleep 0.05
done
[ "$ready" = 1 ] || fail "no PONG on port $PORT within 10 s"

expect() {  # expect "description" "expected output" command...
  local what="$1" want="$2"; shift 2
  local got
  got="$("$@" 2>&1)" || fail "$what: command failed: $* -> $got"
  [ "$got" = "$want" ] || fail "$what: expected '$want', got '$got'"
  echo "ok  $what"
}

cli FLUSHALL >/dev/null
expect "SET"               "OK"    cli SET smoke:foo bar
expect "GET"               "bar"   cli GET smoke:foo
expect "GET missing"       ""      cli GET smoke:missing
expect "INCR 1"            "1"     cli INCR smoke:counter
expect "INCRBY"            "11"    cli INCRBY smoke:counter 10
expect "INCR error"        "ERR value is not an integer or out of range" cli INCR smoke:foo
expect "SET EX"            "OK"    cli SET smoke:ttl v EX 100
ttl="$(cli TTL smoke:ttl)"
{ [ "$ttl" -ge 99 ] && [ "$ttl" -le 100 ]; } || fail "TTL: expected 99..100, got '$ttl'"
echo "ok  TTL ($ttl)"
expect "TTL no expiry"     "-1"    cli TTL smoke:foo
expect "TTL missing"       "-2"    cli TTL smoke:missing
expect "RESP3 GET"         "bar"   cli -3 GET smoke:foo
expect "RESP3 HELLO proto" "proto 3" bash -c "redis-cli -h 127.0.0.1 -p $PORT -3 HELLO 3 | grep '^proto '"
expect "DBSIZE"            "3"     cli DBSIZE

info="$(cli INFO)" || fail "INFO failed"
grep -q '^# Keyspace' <<<"$info" || fail "INFO has no '# Keyspace' section"
grep -q '^db0:keys=3,expires=1,' <<<"$(tr -d '\r' <<<"$info")" || fail "INFO keyspace: expected db0:keys=3,expires=1, got: $(grep '^db0' <<<"$info")"
grep -q '^used_memory:[0-9]' <<<"$(tr -d '\r' <<<"$info")" || fail "INFO has no used_memory"
echo "ok  INFO (Keyspace, used_memory)"

# mass insert with --pipe: 20000 SETs in RESP
N=20000
python3 - "$N" >"$WORK/mass.resp" <<'PY'
import sys
out = sys.stdout.buffer
for i in range(int(sys.argv[1])):
    k, v = b"mass:%d" % i, b"value-%d" % i
    out.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
PY
pipe_out="$(cli --pipe <"$WORK/mass.resp" 2>&1)" || fail "--pipe failed: $pipe_out"
grep -q "errors: 0, replies: $N" <<<"$pipe_out" || fail "--pipe: expected 'errors: 0, replies: $N', got: $pipe_out"
echo "ok  --pipe ($N SETs)"
expect "DBSIZE after --pipe" "$((N + 3))" cli DBSIZE
expect "GET mass key"        "value-12345" cli GET mass:12345

# --scan: full iteration with a pattern
scanned="$(cli --scan --pattern 'mass:1*' | sort -u | wc -l)"
want="$(python3 -c "print(sum(1 for i in range($N) if str(i).startswith('1')))")"
[ "$scanned" = "$want" ] || fail "--scan --pattern 'mass:1*': expected $want keys, got $scanned"
echo "ok  --scan --pattern ($scanned keys)"
all="$(cli --scan | wc -l)"
[ "$all" -ge "$((N + 3))" ] || fail "--scan: expected at least $((N + 3)) keys, got $all"
echo "ok  --scan ($all keys)"

expect "FLUSHALL" "OK" cli FLUSHALL
expect "DBSIZE after FLUSHALL" "0" cli DBSIZE
kill -0 "$PID" 2>/dev/null || fail "server died during the smoke test"
echo "redis-cli smoke test passed against $BIN"
