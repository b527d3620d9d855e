"""CLIENT PAUSE / UNPAUSE, MONITOR and LATENCY (issue #26).

The tests not marked locus_only state Redis 7.0's behaviour and pass against redis-server too
(--peer redis): what a WRITE pause holds and what it lets through, that a held command waits and
then runs, the pause's errors, MONITOR's line format, quoting, redaction and script lines,
LATENCY's events, RESET and HISTOGRAM. The locus_only tests: tenants (user, port, db and prefix
tenancy) never see another tenant's commands in MONITOR nor get held by another tenant's pause,
the admin's monitor and pause cover every tenant; a monitor that never reads is disconnected by
the output buffer limit with the server's memory bounded (Redis leaves a monitor unlimited).
"""

import re
import socket
import time

import pytest

import harness
from harness import HOST, Raw, free_ports, wait_until
from test_privileges import tenants  # noqa: F401  (the fixture)

LINE = re.compile(rb'^\d{10}\.\d{6} \[(\d+) ([^\]]+)\] (.*)$')


def no_reply_within(c: Raw, seconds: float) -> bool:
    """True when nothing arrives on `c` for `seconds` (the command is held)."""
    if c.buf:
        return False
    c.sock.settimeout(seconds)
    try:
        c.sock.recv(1, socket.MSG_PEEK)
        return False
    except (socket.timeout, BlockingIOError):
        return True
    finally:
        c.sock.settimeout(10)


def info_field(c: Raw, section: str, field: str) -> int:
    text = c.call("INFO", section)
    text = text.decode() if isinstance(text, bytes) else str(text)
    m = re.search(rf"^{field}:(\d+)", text, re.M)
    assert m, text
    return int(m.group(1))


def monitor_line(m: Raw) -> tuple[int, str, bytes]:
    line = m.read()
    raw = str(line).encode()
    got = LINE.match(raw)
    assert got, raw
    return int(got.group(1)), got.group(2).decode(), got.group(3)


def monitor_until(m: Raw, marker: bytes) -> list[bytes]:
    """Monitor lines (their argument part) up to and including the one that holds `marker`."""
    out = []
    while True:
        _, _, args = monitor_line(m)
        out.append(args)
        if marker in args:
            return out


@pytest.fixture
def clean(server):
    yield
    with Raw(server.port) as c:
        c.call("CLIENT", "UNPAUSE")
        c.call("CONFIG", "SET", "latency-monitor-threshold", "0")
        c.call("LATENCY", "RESET")
        c.call("FLUSHALL")


# ------------------------------------------------------------------------------------ pause


def test_write_pause_holds_writes_and_lets_reads_through(server, clean):
    with Raw(server.port) as admin, Raw(server.port) as w, Raw(server.port) as r:
        assert r.call("SET", "k", "v0") == "OK"
        assert admin.call("CLIENT", "PAUSE", "20000", "WRITE") == "OK"
        # Reads, and commands that are neither, go on.
        assert r.call("GET", "k") == b"v0"
        assert r.call("PING") == "PONG"
        assert info_field(r, "clients", "blocked_clients") == 0
        # A write waits, it is not refused; the pipeline's earlier replies go out first.
        w.send(harness.encode("GET", "k") + harness.encode("SET", "k", "v1") + harness.encode("GET", "k"))
        assert w.read() == b"v0"
        assert no_reply_within(w, 0.3)
        wait_until(lambda: info_field(r, "clients", "blocked_clients") == 1, what="one paused client")
        assert r.call("GET", "k") == b"v0"
        # Errors of arity are answered at once, as Redis answers them before its pause check.
        assert r.call("SET", "k") == "ERR wrong number of arguments for 'set' command"
        assert admin.call("CLIENT", "UNPAUSE") == "OK"
        assert w.read() == "OK"
        assert w.read() == b"v1"
        assert info_field(r, "clients", "blocked_clients") == 0


def test_write_pause_holds_publish_pfcount_and_writing_scripts(server, clean):
    with Raw(server.port) as admin, Raw(server.port) as p, Raw(server.port) as e, Raw(server.port) as ro:
        assert admin.call("PFADD", "h", "x") == 1
        assert admin.call("CLIENT", "PAUSE", "20000", "WRITE") == "OK"
        p.send(harness.encode("PUBLISH", "ch", "m"))
        e.send(harness.encode("EVAL", "return 1", "0"))
        # A script with the no-writes flag, EVAL_RO and a read-only MULTI go on.
        assert ro.call("EVAL", "#!lua flags=no-writes\nreturn 2", "0") == 2
        assert ro.call("EVAL_RO", "return redis.call('get', KEYS[1])", "1", "h") is not None
        assert ro.call("MULTI") == "OK" and ro.call("GET", "h") == "QUEUED"
        assert ro.call("EXEC")[0] is not None
        assert no_reply_within(p, 0.2) and no_reply_within(e, 0.2)
        with Raw(server.port) as c:
            c.send(harness.encode("PFCOUNT", "h"))
            assert no_reply_within(c, 0.2)
            assert admin.call("CLIENT", "UNPAUSE") == "OK"
            assert c.read() == 1
        assert p.read() == 0
        assert e.read() == 1


def test_pause_all_holds_every_command_until_its_timeout(server, clean):
    with Raw(server.port) as admin, Raw(server.port) as c:
        assert admin.call("CLIENT", "PAUSE", "1500", "ALL") == "OK"
        c.send(harness.encode("PING"))
        assert no_reply_within(c, 0.2)
        # No UNPAUSE: the pause ends by itself and the command runs.
        c.sock.settimeout(10)
        assert c.read() == "PONG"


def test_pause_in_a_transaction_starts_after_it(server, clean):
    with Raw(server.port) as c, Raw(server.port) as other:
        assert c.call("MULTI") == "OK"
        assert c.call("SET", "a", "1") == "QUEUED"
        assert c.call("CLIENT", "PAUSE", "20000", "WRITE") == "QUEUED"
        assert c.call("SET", "b", "2") == "QUEUED"
        assert c.call("EXEC") == ["OK", "OK", "OK"]
        other.send(harness.encode("SET", "c", "3"))
        assert no_reply_within(other, 0.2)
        assert c.call("MGET", "a", "b", "c") == [b"1", b"2", None]
        assert c.call("CLIENT", "UNPAUSE") == "OK"
        assert other.read() == "OK"


def test_pause_errors(server, clean):
    with Raw(server.port) as c:
        assert c.call("CLIENT", "PAUSE", "x") == "ERR timeout is not an integer or out of range"
        assert c.call("CLIENT", "PAUSE", "-1") == "ERR timeout is negative"
        assert c.call("CLIENT", "PAUSE", "10", "SOME") == "ERR CLIENT PAUSE mode must be WRITE or ALL"
        assert c.call("CLIENT", "PAUSE") == "ERR wrong number of arguments for 'client|pause' command"
        assert c.call("CLIENT", "UNPAUSE", "x") == \
            "ERR wrong number of arguments for 'client|unpause' command"
        assert c.call("CLIENT", "UNPAUSE") == "OK"  # nothing paused: fine


# ---------------------------------------------------------------------------------- monitor


def test_monitor_lines_quoting_and_redaction(server, clean):
    with Raw(server.port) as m, Raw(server.port) as c:
        assert m.call("MONITOR") == "OK"
        assert c.call("set", 'a"b\\', "\x01\n\t v") == "OK"
        db, who, args = monitor_line(m)
        assert db == 0 and re.fullmatch(r"127\.0\.0\.1:\d+", who), who
        assert args == b'"set" "a\\"b\\\\" "\\x01\\n\\t v"'
        # AUTH's arguments and HELLO's after AUTH are redacted, failed ones too.
        assert str(c.call("auth", "not-real")).startswith("ERR AUTH <password> called without")
        assert str(c.call("auth", "nobody", "secret-pw")).startswith("WRONGPASS")
        assert str(c.call("hello", "2", "AUTH", "nobody", "secret-pw", "SETNAME", "n")).startswith("WRONGPASS")
        c.call("get", "marker")
        lines = monitor_until(m, b"marker")
        assert b"secret" not in b"".join(lines) and b"not-real" not in b"".join(lines)
        assert lines[0] == b'"auth" "(redacted)"'
        assert lines[1] == b'"auth" "(redacted)" "(redacted)"'
        assert lines[2] == b'"hello" "2" "AUTH" "(redacted)" "(redacted)" "SETNAME" "n"'
        # Administrative commands are not shown; unknown and wrong-arity ones neither.
        c.call("config", "get", "maxmemory")
        c.call("nosuchcommand")
        c.call("get")
        c.call("get", "marker2")
        assert monitor_until(m, b"marker2") == [b'"get" "marker2"']


def test_monitor_shows_scripts_then_their_commands_and_multi_in_order(server, clean):
    with Raw(server.port) as m, Raw(server.port) as c:
        assert m.call("MONITOR") == "OK"
        assert c.call("eval", "return redis.call('set', KEYS[1], ARGV[1])", "1", "k", "v") == "OK"
        _, who, args = monitor_line(m)
        assert args.startswith(b'"eval"')
        _, who, args = monitor_line(m)
        assert who == "lua" and args == b'"set" "k" "v"'
        assert c.call("multi") == "OK"
        assert c.call("incr", "n") == "QUEUED"
        assert c.call("exec") == [1]
        assert [monitor_line(m)[2] for _ in range(3)] == [b'"multi"', b'"incr" "n"', b'"exec"']


@pytest.mark.locus_only
def test_a_monitor_that_never_reads_is_disconnected(start_locus_toml):
    (main,) = free_ports(1)
    srv = start_locus_toml(f"""
[server]
bind = "127.0.0.1"
port = {main}

[limits]
client_output_buffer_limit = "pubsub 4mb 1mb 2"
""", main)
    m = socket.create_connection((HOST, main))
    m.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    m.sendall(harness.encode("MONITOR"))
    with Raw(main) as c:
        wait_until(lambda: b"cmd=monitor" in c.call("CLIENT", "LIST"), what="the monitor attached")
        rss_before = harness.rss(srv.proc.pid)
        value = "x" * 20_000
        # 40 MB of monitor lines for a client that reads none of them.
        for _ in range(20):
            c.send(b"".join(harness.encode("SET", f"k{i}", value) for i in range(100)))
            for _ in range(100):
                assert c.read() == "OK"
        wait_until(lambda: b"cmd=monitor" not in c.call("CLIENT", "LIST"), what="the monitor disconnected")
        assert info_field(c, "stats", "client_output_buffer_limit_disconnections") >= 1
        grew = harness.rss(srv.proc.pid) - rss_before
        assert grew < 24 << 20, f"the server grew by {grew} bytes"
    m.close()


# ---------------------------------------------------------------------------------- latency


def slow_eval(c: Raw, ms: int):
    """A script that runs about `ms` milliseconds."""
    body = ("local t0 = redis.call('TIME') local s0 = t0[1] * 1000000 + t0[2] "
            "while true do local t = redis.call('TIME') "
            "if t[1] * 1000000 + t[2] - s0 >= tonumber(ARGV[1]) * 1000 then return 1 end end")
    assert c.call("EVAL", body, "0", str(ms)) == 1


def test_latency_events_history_reset(server, clean):
    with Raw(server.port) as c:
        assert c.call("CONFIG", "SET", "latency-monitor-threshold", "5") == "OK"
        assert c.call("CONFIG", "GET", "latency-monitor-threshold") == [b"latency-monitor-threshold", b"5"]
        assert c.call("LATENCY", "RESET") >= 0
        slow_eval(c, 30)
        latest = c.call("LATENCY", "LATEST")
        names = [e[0] for e in latest]
        assert b"command" in names, latest
        ev = latest[names.index(b"command")]
        assert ev[1] > 1_600_000_000 and ev[2] >= 30 and ev[3] >= ev[2]
        hist = c.call("LATENCY", "HISTORY", "command")
        assert len(hist) == 1 and hist[0][1] >= 30
        assert c.call("LATENCY", "HISTORY", "nosuch") == []
        doctor = c.call("LATENCY", "DOCTOR")
        assert b"command" in bytes(doctor)
        assert b"command" in bytes(c.call("LATENCY", "GRAPH", "command"))
        assert str(c.call("LATENCY", "GRAPH", "nosuch")).startswith("ERR")
        assert c.call("LATENCY", "RESET", "nosuch") == 0
        assert c.call("LATENCY", "RESET") >= 1
        assert c.call("LATENCY", "LATEST") == []
        assert c.call("LATENCY", "HELP", "x") == "ERR wrong number of arguments for 'latency|help' command"


def test_latency_expire_cycle_event(server, clean):
    with Raw(server.port) as c:
        # A million members: freeing them takes a few ms or more in Locus and in Redis.
        for i in range(100):
            c.send(harness.encode("SADD", "big", *[str(i * 10_000 + j) for j in range(10_000)]))
        for i in range(100):
            assert c.read() == 10_000
        assert c.call("CONFIG", "SET", "latency-monitor-threshold", "1") == "OK"
        c.call("LATENCY", "RESET")
        assert c.call("PEXPIRE", "big", "10") == 1
        wait_until(lambda: c.call("DBSIZE") == 0, what="the set expired")
        wait_until(lambda: b"expire-cycle" in [e[0] for e in c.call("LATENCY", "LATEST")],
                   what="an expire-cycle event")


def test_latency_histogram(server, clean):
    with Raw(server.port) as c:
        assert c.call("CONFIG", "RESETSTAT") == "OK"
        c.call("SET", "a", "1")
        c.call("SET", "b", "2")
        c.call("CLIENT", "ID")
        h = c.call("LATENCY", "HISTOGRAM", "set", "client", "nosuch")
        if isinstance(h, list):
            h = dict(zip(h[::2], h[1::2]))
        assert set(h) == {b"set", b"client|id"}
        s = h[b"set"]
        s = dict(zip(s[::2], s[1::2])) if isinstance(s, list) else s
        assert s[b"calls"] == 2
        buckets = s[b"histogram_usec"]
        buckets = dict(zip(buckets[::2], buckets[1::2])) if isinstance(buckets, list) else buckets
        # Redis's keys are the highest value its HDR histogram takes as equal to 1024*2^i ns, in
        # whole microseconds: 1, 2, 4, 8, 16, 33, 66, 132, 264, ... (a slow SET shows which).
        redis_keys = {((129 << (3 + i)) - 1) // 1000 for i in range(41)}
        assert max(buckets.values()) == 2, buckets
        assert set(buckets) <= redis_keys, buckets
        assert list(buckets.values()) == sorted(buckets.values()), "counts are cumulative"


# ---------------------------------------------------------------------------------- tenants


@pytest.mark.locus_only
def test_a_tenants_monitor_sees_only_its_tenant(tenants):
    s = tenants
    mon_a, mon_root = s.raw("alice"), s.raw("admin")
    alice, bob, root = s.raw("alice"), s.raw("bob"), s.raw("admin")
    try:
        assert mon_a.call("MONITOR") == "OK" and mon_root.call("MONITOR") == "OK"
        assert bob.call("SET", s.key("bob", "secret"), "bob-value") == "OK"
        assert alice.call("SET", s.key("alice", "marker"), "1") == "OK"
        seen_a = b" ".join(monitor_until(mon_a, b"marker"))
        assert b"secret" not in seen_a and b"bob" not in seen_a
        seen_root = b" ".join(monitor_until(mon_root, b"marker"))
        assert b"bob-value" in seen_root and b"marker" in seen_root
        # The admin's own commands never reach a tenant's monitor.
        root.call("SET", s.key("alice", "by-root"), "1")
        assert alice.call("GET", s.key("alice", "marker2")) is None
        assert b"by-root" not in b" ".join(monitor_until(mon_a, b"marker2"))
    finally:
        for c in (mon_a, mon_root, alice, bob, root):
            c.close()


@pytest.mark.locus_only
def test_a_tenants_pause_holds_only_its_tenant(tenants):
    s = tenants
    alice, alice2, bob, root = s.raw("alice"), s.raw("alice"), s.raw("bob"), s.raw("admin")
    try:
        # Under ALL even CLIENT UNPAUSE waits (as Redis): the pause ends by its timeout.
        assert alice.call("CLIENT", "PAUSE", "2000", "ALL") == "OK"
        alice2.send(harness.encode("PING"))
        assert bob.call("PING") == "PONG" and root.call("PING") == "PONG"
        assert no_reply_within(alice2, 0.2)
        alice2.sock.settimeout(10)
        assert alice2.read() == "PONG"
        assert alice.call("CLIENT", "PAUSE", "20000", "WRITE") == "OK"
        alice2.send(harness.encode("SET", s.key("alice", 1), "1"))
        # Bob and the admin go on.
        assert bob.call("SET", s.key("bob", 1), "1") == "OK"
        assert bob.call("PING") == "PONG"
        assert root.call("PING") == "PONG"
        assert no_reply_within(alice2, 0.3)
        assert info_field(bob, "clients", "blocked_clients") == 0
        assert info_field(root, "clients", "blocked_clients") == 1
        # Bob's UNPAUSE ends bob's pause only.
        assert bob.call("CLIENT", "UNPAUSE") == "OK"
        assert no_reply_within(alice2, 0.2)
        assert alice.call("CLIENT", "UNPAUSE") == "OK"
        assert alice2.read() == "OK"
        # The admin's pause holds every tenant.
        assert root.call("CLIENT", "PAUSE", "20000", "WRITE") == "OK"
        bob.send(harness.encode("SET", s.key("bob", 2), "2"))
        alice2.send(harness.encode("SET", s.key("alice", 2), "2"))
        assert no_reply_within(bob, 0.3) and no_reply_within(alice2, 0.1)
        # A tenant's UNPAUSE cannot end the admin's pause.
        assert alice.call("CLIENT", "UNPAUSE") == "OK"
        assert no_reply_within(bob, 0.2)
        assert root.call("CLIENT", "UNPAUSE") == "OK"
        assert bob.read() == "OK" and alice2.read() == "OK"
    finally:
        for c in (alice, alice2, bob, root):
            c.close()


@pytest.mark.locus_only
def test_a_tenants_latency_shows_its_own_events(tenants):
    s = tenants
    alice, bob, root = s.raw("alice"), s.raw("bob"), s.raw("admin")
    try:
        assert root.call("CONFIG", "SET", "latency-monitor-threshold", "5") == "OK"
        slow_eval(bob, 30)
        # (A `fast-command` event may come too: the script's own TIME calls, on a busy machine.)
        assert alice.call("LATENCY", "LATEST") == []
        assert b"command" in [e[0] for e in bob.call("LATENCY", "LATEST")]
        assert b"command" in [e[0] for e in root.call("LATENCY", "LATEST")]
        # Alice's RESET leaves bob's events; the admin's resets all.
        assert alice.call("LATENCY", "RESET") == 0
        assert len(bob.call("LATENCY", "HISTORY", "command")) == 1
        assert root.call("LATENCY", "RESET") >= 1
        assert bob.call("LATENCY", "LATEST") == []
        # Server-wide per-command figures are the admin's only.
        assert bob.call("LATENCY", "HISTOGRAM") in ([], {})
    finally:
        for c in (alice, bob, root):
            c.close()
