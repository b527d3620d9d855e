# Shared helpers for the bench/*.sh scripts (sourced, not run).
#
# Servers are started by the script that needs them, each on its own free loopback port, and
# stopped by the PID this file recorded (SIGTERM, then SIGKILL after 5 s). Nothing here ever
# signals a process it did not start.
#
#   bench_free_port                      -> prints a free TCP port on 127.0.0.1
#   bench_start KIND PORT MAXMEM POLICY SAMPLES LOGFILE
#                                        -> starts `redis` or `locus`, sets BENCH_PID, waits for PING
#   bench_stop PID                       -> stops one server started by bench_start
#   bench_stop_all                       -> stops every server this shell started (trap EXIT)
#
# Environment: LOCUS_BIN (default ${CARGO_TARGET_DIR:-<repo>/target}/release/locus),
# REDIS_SERVER (default redis-server), BENCH_PIN=1 puts servers on CPU 0 (taskset) so that the
# client can be put on CPU 1.

BENCH_HOST=127.0.0.1
BENCH_PIDS=()
: "${REDIS_SERVER:=redis-server}"
: "${LOCUS_BIN:=${CARGO_TARGET_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/target}/release/locus}"

bench_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# bench_ping PORT -> 0 when a PING on PORT answers PONG
bench_ping() {
  [ "$(redis-cli -h "$BENCH_HOST" -p "$1" PING 2>/dev/null)" = "PONG" ]
}

# bench_start KIND PORT MAXMEM_BYTES POLICY SAMPLES LOGFILE
bench_start() {
  local kind=$1 port=$2 maxmem=$3 policy=$4 samples=$5 log=$6
  local pin=()
  [ "${BENCH_PIN:-0}" = 1 ] && pin=(taskset -c 0)
  case "$kind" in
    redis)
      # No persistence, no protected-mode surprises; same memory limit and policy as Locus.
      "${pin[@]}" "$REDIS_SERVER" --port "$port" --bind "$BENCH_HOST" --save '' --appendonly no \
        --daemonize no --protected-mode no --maxmemory "$maxmem" --maxmemory-policy "$policy" \
        --maxmemory-samples "$samples" --dir "$(dirname "$log")" --logfile "$log" >/dev/null 2>&1 &
      ;;
    locus)
      if [ ! -x "$LOCUS_BIN" ]; then
        echo "bench: no Locus binary at $LOCUS_BIN (build it: cargo build --release --bin locus)" >&2
        return 1
      fi
      "${pin[@]}" "$LOCUS_BIN" serve --bind "$BENCH_HOST" --port "$port" --maxmemory "$maxmem" \
        --maxmemory-policy "$policy" --maxmemory-samples "$samples" >"$log" 2>&1 &
      ;;
    *)
      echo "bench: unknown server kind '$kind' (redis|locus)" >&2
      return 1
      ;;
  esac
  BENCH_PID=$!
  BENCH_PIDS+=("$BENCH_PID")
  local i
  for i in $(seq 1 200); do
    if bench_ping "$port"; then return 0; fi
    if ! kill -0 "$BENCH_PID" 2>/dev/null; then
      echo "bench: $kind exited during startup; log $log:" >&2
      tail -5 "$log" >&2
      return 1
    fi
    sleep 0.05
  done
  echo "bench: $kind on port $port did not answer PING within 10 s" >&2
  bench_stop "$BENCH_PID"
  return 1
}

# bench_stop PID: SIGTERM, wait up to 5 s, then SIGKILL. Only PIDs from bench_start.
bench_stop() {
  local pid=$1 i
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    sleep 0.05
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

bench_stop_all() {
  local pid
  for pid in "${BENCH_PIDS[@]}"; do bench_stop "$pid"; done
  BENCH_PIDS=()
}

# bench_rss_kib PID -> VmRSS of PID in KiB (from /proc, not INFO)
bench_rss_kib() {
  awk '/^VmRSS:/ {print $2}' "/proc/$1/status"
}
