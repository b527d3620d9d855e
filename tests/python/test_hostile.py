"""Hostile tenants, round three (issue #27, points 4 and 6): arguments where Locus answered
differently from Redis 7.0 (a negative SCAN cursor, a count of 2^63-1, an empty or space-led
score bound, a hexadecimal BLPOP timeout), and the tenant boundary: CLIENT LIST names the user a
connection logged in as, a tenant's INFO tells nothing of the process, a tenant cap the server
cannot give is refused, a memcached port without auth may reach no tenant that has a password
(in user, port, db and prefix tenancy), and a port-mode tenant with a password asks for AUTH.

The Redis-behaviour tests hold under `--peer redis` too; the tenant ones are Locus's own."""

import subprocess
import threading
import time

import pytest
import redis

from harness import HOST, Raw, free_ports, locus_bin, wait_until

I64_MAX = 2**63 - 1
WRONGPASS = "WRONGPASS invalid username-password pair or user is disabled."
NOAUTH = "NOAUTH Authentication required."


# ------------------------------------------------------------------------------ Redis 7.0


def d(x):
    """A reply with its bulk strings decoded (errors and simple strings are str already)."""
    if isinstance(x, bytes):
        return x.decode()
    if isinstance(x, list):
        return [d(v) for v in x]
    return x


def test_negative_scan_cursor_wraps_as_strtoul(raw):
    for i in range(20):
        raw.call("SET", f"k{i}", "v")
    raw.call("SADD", "s", *(f"m{i}" for i in range(200)))
    raw.call("HSET", "h", "f", "v")
    # strtoul reads "-1" as 2^64 - 1: a cursor past every position, so the scan ends there.
    cur, keys = d(raw.call("SCAN", "-1"))
    assert cur == "0" and set(keys) <= {f"k{i}" for i in range(20)} | {"s", "h"}
    cur, members = d(raw.call("SSCAN", "s", "-1"))
    assert cur == "0" and set(members) <= {f"m{i}" for i in range(200)}
    # A small hash is answered whole whatever the cursor.
    assert d(raw.call("HSCAN", "h", "-5")) == ["0", ["f", "v"]]
    # The empty cursor is 0 (strtoul converts nothing and stops at the end).
    cur, _ = d(raw.call("SCAN", "", "COUNT", "1000"))
    assert cur == "0"
    for bad in ("18446744073709551616", "-18446744073709551616", "+", "-", " 1", "1 ", "0x1", "1a"):
        assert raw.call("SCAN", bad) == "ERR invalid cursor", bad
        assert raw.call("SSCAN", "s", bad) == "ERR invalid cursor", bad


def test_random_picks_with_the_largest_count(raw):
    raw.call("ZADD", "z", 1, "a", 2, "b")
    raw.call("HSET", "h", "f", "v", "g", "w")
    raw.call("SADD", "s", "x", "y")
    assert sorted(d(raw.call("ZRANDMEMBER", "z", I64_MAX))) == ["a", "b"]
    assert sorted(d(raw.call("HRANDFIELD", "h", I64_MAX))) == ["f", "g"]
    assert sorted(d(raw.call("SRANDMEMBER", "s", I64_MAX))) == ["x", "y"]
    # Paired with scores or values, the count must stay within half of that.
    assert raw.call("ZRANDMEMBER", "z", I64_MAX, "WITHSCORES") == "ERR value is out of range"
    assert raw.call("HRANDFIELD", "h", I64_MAX, "WITHVALUES") == "ERR value is out of range"
    assert len(raw.call("ZRANDMEMBER", "z", I64_MAX // 2, "WITHSCORES")) == 4
    assert raw.call("ZRANDMEMBER", "z", -(2**63)).startswith("ERR value is out of range")
    assert raw.call("HRANDFIELD", "nokey", I64_MAX) == []
    # The count is read before the option word, as Redis reads them.
    assert raw.call("ZRANDMEMBER", "z", "x", "nope") == "ERR value is not an integer or out of range"


def test_empty_and_space_led_score_bounds(raw):
    raw.call("ZADD", "z", -1, "neg", 0, "zero", 1, "one", 2, "two")
    # strtod: "" is 0, a leading space is skipped; a trailing one is not.
    assert raw.call("ZCOUNT", "z", "", "+inf") == 3
    assert raw.call("ZCOUNT", "z", "(", "+inf") == 2
    assert raw.call("ZCOUNT", "z", " 1", "+inf") == 2
    assert raw.call("ZCOUNT", "z", "-inf", "(\t1") == 2
    assert d(raw.call("ZRANGEBYSCORE", "z", "", " 1")) == ["zero", "one"]
    assert raw.call("ZRANGE", "z", "(", "", "BYSCORE") == []
    assert raw.call("ZREMRANGEBYSCORE", "z", " 2", "  2") == 1
    for bad in ("1 ", "  ", "( ", "-", " (1"):
        assert raw.call("ZCOUNT", "z", bad, "+inf") == "ERR min or max is not a float", repr(bad)
    # A score to store is stricter: neither empty nor space-led.
    for bad in ("", " 1", "1 "):
        assert raw.call("ZADD", "z", bad, "m") == "ERR value is not a valid float", repr(bad)
        assert raw.call("ZINCRBY", "z", bad, "m") == "ERR value is not a valid float", repr(bad)


def test_hexadecimal_blpop_timeout(server, raw):
    # strtold reads hexadecimal floats: 0x0.1 is 1/16 s.
    t0 = time.monotonic()
    assert raw.call("BLPOP", "nolist", "0x0.1") is None
    assert time.monotonic() - t0 < 5
    # 0x10 is 16 s: the client waits, and is served by a push.
    got = {}

    def waiter():
        with Raw(server.port, timeout=20) as c:
            got["reply"] = c.call("BLPOP", "l", "0x10")

    th = threading.Thread(target=waiter)
    th.start()
    deadline = time.monotonic() + 10
    while raw.call("LPUSH", "probe", "x") and time.monotonic() < deadline:
        info = d(raw.call("INFO", "clients"))
        if "blocked_clients:1" in info:
            break
        time.sleep(0.02)
    raw.call("RPUSH", "l", "v")
    th.join(20)
    assert d(got.get("reply")) == ["l", "v"]
    for bad in ("0x", "0x1p", "0x10x", " 0x1"):
        assert raw.call("BLPOP", "l", bad) == "ERR timeout is not a float or out of range", bad
    assert raw.call("BLPOP", "l", "-0x1") == "ERR timeout is negative"


# ------------------------------------------------------------------------------- tenants


def tenant_config(mode, main, pa, pb, extra_a="", extra_b="", more=""):
    key = {"user": ('user = "alice"\npassword = "apw"', 'user = "bob"\npassword = "bpw"'),
           "port": (f'port = {pa}\npassword = "apw"', f"port = {pb}"),
           "db": ('db = 0\nuser = "alice"\npassword = "apw"', "db = 1"),
           "prefix": ('prefix = "a:"\nuser = "alice"\npassword = "apw"', 'prefix = "b:"')}[mode]
    return (f'[server]\nbind = "{HOST}"\nport = {main}\n\n[memory]\nmaxmemory = "64MiB"\n\n'
            f'[tenancy]\nmode = "{mode}"\n{more}\n'
            f'[admin]\nuser = "root"\npassword = "rootpw"\n\n'
            f'[[tenant]]\nname = "a"\n{key[0]}\n{extra_a}\n\n[[tenant]]\nname = "b"\n{key[1]}\n{extra_b}\n')


def refused(tmp_path, toml):
    """Runs `locus serve` on `toml`; the exit status and stderr when it refused to start."""
    cfg = tmp_path / "locus.toml"
    cfg.write_text(toml)
    try:
        out = subprocess.run([locus_bin(), "serve", "--config", str(cfg)], capture_output=True,
                             text=True, timeout=15)
    except subprocess.TimeoutExpired:
        pytest.fail("locus started (and served for 15 s) with a configuration it must refuse")
    return out.returncode, out.stderr


@pytest.mark.locus_only
@pytest.mark.parametrize("mode", ["user", "port", "db", "prefix"])
def test_memcached_port_without_auth_may_not_reach_a_password(tmp_path, mode):
    main, pa, pb, mc, mca = free_ports(5)
    default = '\ndefault_tenant = "a"' if mode in ("user", "port", "db") else ""
    # The shared port reaches the default tenant (prefix mode: every tenant with a prefix).
    toml = tenant_config(mode, main, pa, pb, more=default) + f"\n[memcached]\nport = {mc}\n"
    code, err = refused(tmp_path, toml)
    assert code != 0 and "memcached.auth" in err and '"a"' in err, err
    # A tenant's own memcached port without auth: refused as well.
    toml = tenant_config(mode, main, pa, pb, extra_a=f"memcached_port = {mca}")
    code, err = refused(tmp_path, toml)
    assert code != 0 and "memcached.auth" in err and "memcached_port" in err, err
    # On a tenant without a password (b, in port and db tenancy) the port serves.
    if mode in ("port", "db"):
        toml = tenant_config(mode, main, pa, pb, extra_b=f"memcached_port = {mca}")
        cfg = tmp_path / "ok.toml"
        cfg.write_text(toml)
        out = subprocess.run([locus_bin(), "serve", "--config", str(cfg), "--print-config"],
                             capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr


@pytest.mark.locus_only
def test_tenant_max_over_maxmemory_is_refused(tmp_path):
    main, pa, pb = free_ports(3)
    code, err = refused(tmp_path, tenant_config("db", main, pa, pb, extra_b='max = "1gb"'))
    assert code != 0 and "tenant[1].max" in err and "memory.maxmemory" in err, err


@pytest.mark.locus_only
def test_port_tenant_with_password_requires_auth(start_locus_toml):
    main, pa, pb = free_ports(3)
    srv = start_locus_toml(tenant_config("port", main, pa, pb), pb)
    with Raw(pa) as c:
        assert c.call("GET", "k") == NOAUTH
        assert c.call("AUTH", "wrong") == WRONGPASS
        assert c.call("SET", "k", "v") == NOAUTH
        assert c.call("AUTH", "apw") == "OK"
        assert c.call("SET", "k", "v") == "OK"
    with Raw(pa) as c:
        assert c.call("AUTH", "default", "apw") == "OK"
        assert c.call("GET", "k") == b"v"
    with Raw(pb) as c:
        # b has no password: its port serves at once, and a's password opens nothing here.
        assert c.call("GET", "k") is None
        assert c.call("AUTH", "apw").startswith("ERR AUTH <password> called without")
    assert srv.alive()


@pytest.mark.locus_only
def test_client_list_names_the_user_and_tenant_info_hides_the_process(start_locus_toml):
    main, pa, pb = free_ports(3)
    srv = start_locus_toml(tenant_config("user", main, pa, pb), main)
    a = redis.Redis(host=HOST, port=main, username="alice", password="apw", decode_responses=True)
    me = a.client_info()
    assert me["user"] == "alice", me
    assert all(c["user"] == "alice" for c in a.client_list())
    root = redis.Redis(host=HOST, port=main, username="root", password="rootpw", decode_responses=True)
    users = {c["user"] for c in root.client_list()}
    assert {"alice", "root"} <= users, users
    # A tenant's INFO: no process id, no configuration path, no process-wide CPU time.
    info = a.execute_command("INFO", "everything")
    for field in ("process_id", "config_file", "used_cpu_sys", "used_cpu_user"):
        assert field not in info, field
    assert "redis_version" in info and "used_memory" in info
    full = root.execute_command("INFO", "everything")
    for field in ("process_id", "config_file", "used_cpu_sys"):
        assert field in full, field
    assert srv.alive()


# ------------------------------------------------------------------- MULTI within the budget


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def queue_sets(port: int, n: int, tag: str, chunk: int = 20_000):
    """MULTI, then `n` pipelined SETs (replies read as they come): (socket, queued, refused)."""
    import socket
    s = socket.create_connection((HOST, port), timeout=60)
    s.sendall(b"*1\r\n$5\r\nMULTI\r\n")
    assert s.recv(64) == b"+OK\r\n"
    queued = refused_n = 0
    buf = b""
    for base in range(0, n, chunk):
        cmds = b"".join(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\nv\r\n" % (len(k), k)
                        for k in (f"{tag}:{i}".encode() for i in range(base, min(n, base + chunk))))
        s.sendall(cmds)
        want = min(n, base + chunk) - base
        got = 0
        while got < want:
            data = s.recv(1 << 20)
            assert data, f"the server closed the connection after {queued + refused_n} replies"
            buf += data
            lines = buf.split(b"\r\n")
            buf = lines.pop()
            got += len(lines)
            queued += sum(1 for ln in lines if ln == b"+QUEUED")
            refused_n += sum(1 for ln in lines if ln.startswith(b"-OOM"))
    return s, queued, refused_n


@pytest.mark.locus_only
def test_queued_transactions_stay_within_the_tenant_budget(start_locus_toml):
    main, pa, pb = free_ports(3)
    toml = (f'[server]\nbind = "{HOST}"\nport = {main}\n\n[memory]\nmaxmemory = "256MiB"\n\n'
            f'[tenancy]\nmode = "db"\n\n[admin]\nuser = "root"\npassword = "rootpw"\n\n'
            f'[[tenant]]\nname = "a"\ndb = 0\nmax = "64MiB"\n\n[[tenant]]\nname = "b"\ndb = 1\n')
    srv = start_locus_toml(toml, main)
    pid = srv.proc.pid
    b = redis.Redis(host=HOST, port=main, db=1, decode_responses=True)
    b.mset({f"b:{i}": "keep" for i in range(1000)})
    base = rss_bytes(pid)
    conns = []
    total_q = total_r = 0
    for c in range(4):
        s, q, r = queue_sets(main, 1_000_000, f"c{c}")
        conns.append(s)
        total_q += q
        total_r += r
    grown = rss_bytes(pid) - base
    print(f"queued {total_q}, refused {total_r}, RSS +{grown / 2**20:.1f} MiB")
    # The queues filled tenant a's budget, then its writes were refused with -OOM.
    assert total_r > 0 and total_q > 0, (total_q, total_r)
    assert grown < 64 * 1024 * 1024, f"RSS grew {grown / 2**20:.0f} MiB for queued transactions"
    # EXEC of a transaction that was refused a command fails whole, as in Redis.
    s = conns[-1]
    s.sendall(b"*1\r\n$4\r\nEXEC\r\n")
    assert s.recv(256).startswith(b"-EXECABORT")
    # Tenant b was not touched.
    assert b.dbsize() == 1000 and b.get("b:999") == "keep"
    for s in conns:
        s.close()
    # The charge went back: tenant a can write again, and the memory was returned.
    a = redis.Redis(host=HOST, port=main, db=0, decode_responses=True)
    wait_until(lambda: a.set("after", "x"), timeout=10)
    assert a.get("after") == "x"
    wait_until(lambda: rss_bytes(pid) - base < 24 * 1024 * 1024, timeout=10)
    print(f"after close: RSS +{(rss_bytes(pid) - base) / 2**20:.1f} MiB")
    assert srv.alive()


@pytest.mark.locus_only
def test_tenant_max_over_maxmemory_is_refused_at_runtime(start_locus_toml):
    main, pa, pb = free_ports(3)
    srv = start_locus_toml(tenant_config("db", main, pa, pb, extra_a='max = "16MiB"'), main)
    root = redis.Redis(host=HOST, port=main, username="root", password="rootpw", decode_responses=True)
    with pytest.raises(redis.ResponseError, match="exceeds the server's maxmemory"):
        root.execute_command("LOCUS.TENANT", "b", "SET", "maxmemory", str(1 << 30))
    assert root.execute_command("LOCUS.TENANT", "b", "SET", "maxmemory", str(8 << 20)) == "OK"
    # Lowering the server's maxmemory below a configured tenant cap is refused the same way.
    with pytest.raises(redis.ResponseError, match="tenant\\[0\\].max"):
        root.config_set("maxmemory", str(8 << 20))
    assert srv.alive()
