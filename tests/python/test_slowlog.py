"""SLOWLOG GET|LEN|RESET|HELP and the slowlog-log-slower-than / slowlog-max-len settings, as Redis
7.0 (every test not marked locus_only holds against redis-server 7.0 too: --peer redis). The
locus_only test: a tenant's SLOWLOG shows and resets its own commands only; the admin's covers
every tenant."""

import pytest
import redis
from redis.exceptions import ResponseError

from conftest import no_retry
from harness import HOST, Raw, free_ports
from test_info_instant import two_port_tenants


@pytest.fixture
def slow_all(server):
    """Every command logged, a fresh log; the defaults restored afterwards."""
    with Raw(server.port) as c:
        assert c.call("CONFIG", "SET", "slowlog-log-slower-than", "0", "slowlog-max-len", "128") == "OK"
        c.call("SLOWLOG", "RESET")
    yield
    with Raw(server.port) as c:
        c.call("CONFIG", "SET", "slowlog-log-slower-than", "10000", "slowlog-max-len", "128")
        c.call("SLOWLOG", "RESET")
        c.call("FLUSHALL")  # later tests of the shared server expect it empty


def test_entries(server, slow_all):
    with Raw(server.port) as c:
        c.call("CLIENT", "SETNAME", "slowpoke")
        c.call("SET", "k", "v")
        c.call("SADD", "s", *[str(i) for i in range(40)])
        c.call("SET", "big", "A" * 129)
        got = c.call("SLOWLOG", "GET", "-1")
        # Newest first: the SET big, the SADD, the SET k, CLIENT SETNAME, SLOWLOG RESET.
        assert [e[3][0].lower() for e in got] == [b"set", b"sadd", b"set", b"client", b"slowlog"]
        e = got[2]
        assert len(e) == 6 and e[3] == [b"SET", b"k", b"v"]
        assert isinstance(e[0], int) and e[0] == got[3][0] + 1
        assert e[1] > 1_600_000_000 and e[2] >= 0
        assert e[4].startswith(b"127.0.0.1:") and e[5] == b"slowpoke"
        sadd = got[1][3]
        assert len(sadd) == 32 and sadd[31] == b"... (11 more arguments)" and sadd[30] == b"28"
        assert got[0][3][2] == b"A" * 128 + b"... (1 more bytes)"
        assert len(c.call("SLOWLOG", "GET")) == 6  # 10 by default; the GET -1 is logged too
        assert len(c.call("SLOWLOG", "GET", "2")) == 2
        assert c.call("SLOWLOG", "GET", "0") == []
        assert c.call("SLOWLOG", "LEN") == 9


def test_settings_and_errors(server, slow_all):
    with Raw(server.port) as c:
        assert c.call("CONFIG", "SET", "slowlog-max-len", "3") == "OK"
        for _ in range(10):
            c.call("PING")
        assert c.call("SLOWLOG", "LEN") == 3
        assert c.call("CONFIG", "GET", "slowlog-max-len") == [b"slowlog-max-len", b"3"]
        assert c.call("CONFIG", "SET", "slowlog-log-slower-than", "-1") == "OK"
        assert c.call("SLOWLOG", "RESET") == "OK"
        c.call("PING")
        assert c.call("SLOWLOG", "LEN") == 0  # -1: nothing is logged
        assert c.call("CONFIG", "GET", "slowlog-log-slower-than") == [b"slowlog-log-slower-than", b"-1"]
        assert c.call("CONFIG", "SET", "slowlog-log-slower-than", "1000000") == "OK"
        c.call("PING")
        assert c.call("SLOWLOG", "LEN") == 0  # faster than a second
        assert c.call("CONFIG", "SET", "slowlog-log-slower-than", "-2").startswith(
            "ERR CONFIG SET failed (possibly related to argument 'slowlog-log-slower-than')")
        assert c.call("SLOWLOG", "GET", "-2") == "ERR count should be greater than or equal to -1"
        assert c.call("SLOWLOG", "GET", "x") == "ERR count should be greater than or equal to -1"
        assert c.call("SLOWLOG", "LEN", "x") == "ERR wrong number of arguments for 'slowlog|len' command"
        assert c.call("SLOWLOG", "NOPE") == "ERR unknown subcommand 'NOPE'. Try SLOWLOG HELP."
        assert c.call("SLOWLOG", "HELP")[0].startswith("SLOWLOG <subcommand>")


def test_exec_logs_its_commands_not_itself(server, slow_all):
    with Raw(server.port) as c:
        assert c.call("MULTI") == "OK"
        c.call("SET", "a", "1")
        c.call("INCR", "a")
        assert c.call("EXEC") == ["OK", 2]
        got = c.call("SLOWLOG", "GET")
        assert [e[3] for e in got[:3]] == [[b"INCR", b"a"], [b"SET", b"a", b"1"], [b"MULTI"]]


@pytest.mark.locus_only
def test_tenants_see_their_own_log(start_locus_toml):
    main, pa, pb = free_ports(3)
    start_locus_toml(two_port_tenants(main, pa, pb), pa)

    def cl(port, **kw):
        return redis.Redis(host=HOST, port=port, socket_timeout=10, retry=no_retry(), decode_responses=True,
                           **kw)

    a, b = cl(pa), cl(pb)
    root = cl(pa, username="root", password="root-pw")
    with pytest.raises(ResponseError, match="permission"):
        a.config_set("slowlog-log-slower-than", "0")
    root.config_set("slowlog-log-slower-than", "0")
    root.slowlog_reset()
    a.set("a-secret-key", "a-secret-value")
    b.set("b-key", "1")

    def cmds(c):
        out = []
        for e in c.slowlog_get(-1):
            cmd = e["command"].decode() if isinstance(e["command"], bytes) else e["command"]
            out.append(" ".join(cmd.split()[:2]))
        return out

    seen_a, seen_b = cmds(a), cmds(b)
    assert "SET a-secret-key" in seen_a and not any("b-key" in x for x in seen_a)
    assert "SET b-key" in seen_b and not any("secret" in x for x in seen_b)
    seen_root = cmds(root)
    assert "SET a-secret-key" in seen_root and "SET b-key" in seen_root
    # b's RESET empties b's log only.
    b.slowlog_reset()
    assert a.slowlog_len() >= 1 and b.slowlog_len() == 1  # the RESET itself
    # The admin's RESET empties every log.
    root.slowlog_reset()
    assert a.slowlog_len() == 0 and b.slowlog_len() == 0
    root.config_set("slowlog-log-slower-than", "10000")
