"""Connection commands: PING ECHO TIME SELECT HELLO AUTH CLIENT RESET QUIT, over raw sockets where the
exact reply type matters and through redis-py elsewhere."""

import re
import time

import pytest
import redis
from redis.exceptions import AuthenticationError, ResponseError

from conftest import no_retry
from harness import Closed, Raw, RespError, Simple


def raises(msg):
    return pytest.raises(ResponseError, match="^" + re.escape(msg) + "$")


def test_ping_echo(r):
    assert r.ping() is True
    assert r.echo("hi there") == "hi there"
    with raises("wrong number of arguments for 'echo' command"):
        r.execute_command("ECHO")
    with raises("wrong number of arguments for 'ping' command"):
        r.execute_command("PING", "a", "b")


def test_ping_reply_types(raw):
    assert raw.call("PING") == Simple("PONG") and isinstance(raw.call("PING"), Simple)
    assert raw.call("PING", "x") == b"x"  # bulk string, not a simple string


def test_time(r):
    secs, usecs = r.time()
    assert abs(secs + usecs / 1e6 - time.time()) < 2
    assert 0 <= usecs < 1_000_000


def test_select_errors(raw):
    assert raw.call("SELECT", "0") == "OK"
    assert raw.call("SELECT", "abc") == "ERR value is not an integer or out of range"
    assert raw.call("SELECT", "-1") == "ERR DB index is out of range"
    assert raw.call("SELECT", "100000") == "ERR DB index is out of range"


def test_hello_3_and_2(server):
    with Raw(server.port) as c:
        m = c.call("HELLO", "3")
        assert isinstance(m, dict)
        assert m[b"proto"] == 3
        assert m[b"server"] and m[b"version"]
        assert isinstance(m[b"id"], int)
        assert m[b"mode"] == b"standalone" and m[b"role"] == b"master"
        assert m[b"modules"] == []
        # RESP3 framing from now on: null is `_`, the map reply of CONFIG GET is `%`
        c.send(b"*2\r\n$3\r\nGET\r\n$10\r\nno-such-ky\r\n")
        assert c.read_line() == b"_"
        flat = c.call("HELLO", "2")
        assert isinstance(flat, list) and len(flat) == 14
        assert dict(zip(flat[0::2], flat[1::2]))[b"proto"] == 2
        c.send(b"*2\r\n$3\r\nGET\r\n$10\r\nno-such-ky\r\n")
        assert c.read_line() == b"$-1"


def test_hello_no_args_and_errors(raw):
    flat = raw.call("HELLO")
    assert dict(zip(flat[0::2], flat[1::2]))[b"proto"] == 2
    assert raw.call("HELLO", "4") == "NOPROTO unsupported protocol version"
    assert raw.call("HELLO", "1") == "NOPROTO unsupported protocol version"
    assert raw.call("HELLO", "abc") == "ERR Protocol version is not an integer or out of range"
    assert raw.call("PING") == "PONG"


def test_hello_setname(raw):
    raw.call("HELLO", "3", "SETNAME", "hello-client")
    assert raw.call("CLIENT", "GETNAME") == b"hello-client"


def test_auth_without_password_configured(raw):
    assert raw.call("AUTH", "foo") == (
        "ERR AUTH <password> called without any password configured for the default user. "
        "Are you sure your configuration is correct?"
    )


def test_auth_requirepass(start_server, client_for):
    srv = start_server(requirepass="s3cret")
    with Raw(srv.port) as c:
        assert c.call("GET", "k") == "NOAUTH Authentication required."
        assert c.call("SET", "k", "v") == "NOAUTH Authentication required."
        assert c.call("AUTH", "wrong") == "WRONGPASS invalid username-password pair or user is disabled."
        assert c.call("AUTH", "s3cret") == "OK"
        assert c.call("SET", "k", "v") == "OK"
        assert c.call("GET", "k") == b"v"
    with Raw(srv.port) as c:
        assert c.call("HELLO", "3", "AUTH", "default", "wrong") == (
            "WRONGPASS invalid username-password pair or user is disabled.")
        m = c.call("HELLO", "3", "AUTH", "default", "s3cret")
        assert m[b"proto"] == 3
        assert c.call("GET", "k") == b"v"
        assert c.call("RESET") == "RESET"  # back to the default user, who needs a password
        assert c.call("GET", "k") == "NOAUTH Authentication required."
    ok = client_for(srv, password="s3cret", protocol=3)
    assert ok.get("k") == "v"
    bad = client_for(srv, password="nope")
    with pytest.raises(AuthenticationError):
        bad.get("k")


def test_auth_acl_user(start_server, client_for):
    srv = start_server(requirepass="defaultpw", users={"alice": "alicepw"})
    with Raw(srv.port) as c:
        assert c.call("GET", "k") == "NOAUTH Authentication required."
        assert c.call("AUTH", "alice", "bad") == "WRONGPASS invalid username-password pair or user is disabled."
        assert c.call("AUTH", "nobody", "alicepw") == (
            "WRONGPASS invalid username-password pair or user is disabled.")
        assert c.call("AUTH", "alice", "alicepw") == "OK"
        assert c.call("SET", "k", "v") == "OK"
    with Raw(srv.port) as c:
        m = c.call("HELLO", "3", "AUTH", "alice", "alicepw")
        assert m[b"proto"] == 3
        assert c.call("GET", "k") == b"v"
        assert c.call("RESET") == "RESET"
        assert c.call("GET", "k") == "NOAUTH Authentication required."
    for proto in (2, 3):
        cl = client_for(srv, protocol=proto, username="alice", password="alicepw")
        assert cl.get("k") == "v"
        assert cl.execute_command("ACL", "WHOAMI") == "alice"


def test_client_id_setname_getname(raw):
    cid = raw.call("CLIENT", "ID")
    assert isinstance(cid, int) and cid > 0
    assert raw.call("CLIENT", "GETNAME") is None
    assert raw.call("CLIENT", "SETNAME", "my-conn") == "OK"
    assert raw.call("CLIENT", "GETNAME") == b"my-conn"
    assert raw.call("CLIENT", "SETNAME", "bad name") == (
        "ERR Client names cannot contain spaces, newlines or special characters.")
    assert raw.call("CLIENT", "GETNAME") == b"my-conn"
    assert raw.call("CLIENT", "SETNAME", "") == "OK"
    assert raw.call("CLIENT", "GETNAME") is None


def test_client_list_and_info(server):
    with Raw(server.port) as a, Raw(server.port) as b:
        a.call("CLIENT", "SETNAME", "conn-a")
        ida, idb = a.call("CLIENT", "ID"), b.call("CLIENT", "ID")
        assert ida != idb
        listing = a.call("CLIENT", "LIST").decode()
        lines = [l for l in listing.split("\n") if l]
        ids = {int(re.search(r"\bid=(\d+)", l).group(1)) for l in lines}
        assert {ida, idb} <= ids
        line_a = next(l for l in lines if re.search(rf"\bid={ida}\b", l))
        assert " name=conn-a " in line_a
        assert re.search(r"\baddr=127\.0\.0\.1:\d+\b", line_a)
        info = a.call("CLIENT", "INFO").decode()
        assert info.startswith(f"id={ida} ") and " name=conn-a " in info and info.endswith("\n")
        assert "\n" not in info[:-1]
        only = a.call("CLIENT", "LIST", "ID", str(idb)).decode()
        assert [l for l in only.split("\n") if l][0].startswith(f"id={idb} ")


def test_client_kill(server):
    with Raw(server.port) as killer, Raw(server.port) as victim, Raw(server.port) as victim2:
        vid = victim.call("CLIENT", "ID")
        assert killer.call("CLIENT", "KILL", "ID", str(vid)) == 1
        victim.expect_closed()
        assert killer.call("CLIENT", "KILL", "ID", "99999999") == 0
        assert killer.call("CLIENT", "KILL", "127.0.0.1:1") == "ERR No such client"
        # old form by address
        info = victim2.call("CLIENT", "INFO").decode()
        addr = re.search(r"\baddr=(\S+)", info).group(1)
        assert killer.call("CLIENT", "KILL", addr) == "OK"
        victim2.expect_closed()
        assert killer.call("PING") == "PONG"


def test_reset(server):
    with Raw(server.port) as c:
        c.call("CLIENT", "SETNAME", "before-reset")
        c.call("HELLO", "3")
        assert c.call("RESET") == Simple("RESET")
        assert c.call("CLIENT", "GETNAME") is None
        c.send(b"*2\r\n$3\r\nGET\r\n$4\r\nnone\r\n")
        assert c.read_line() == b"$-1"  # back to RESP2


def test_quit(server):
    with Raw(server.port) as c:
        assert c.call("QUIT") == "OK"
        c.expect_closed()


def test_unknown_command(raw):
    assert raw.call("FOOBAR", "a", "b") == "ERR unknown command 'FOOBAR', with args beginning with: 'a' 'b' "
    assert raw.call("NOPE") == "ERR unknown command 'NOPE', with args beginning with: "
    assert raw.call("PING") == "PONG"


def test_redis_py_resp3_types(server):
    c = redis.Redis(port=server.port, protocol=3, decode_responses=True, retry=no_retry())
    try:
        c.flushall()
        c.set("n", "1")
        assert c.get("missing") is None
        assert c.incr("n") == 2
        assert c.mget("n", "missing") == ["2", None]
        assert isinstance(c.execute_command("CONFIG", "GET", "maxmemory"), dict)
    finally:
        c.close()


@pytest.fixture
def restore_client_limits(server):
    with Raw(server.port) as c:
        before = c.call("CONFIG", "GET", "maxclients")[1], c.call("CONFIG", "GET", "timeout")[1]
    yield
    with Raw(server.port) as c:
        assert c.call("CONFIG", "SET", "maxclients", before[0]) == "OK"
        assert c.call("CONFIG", "SET", "timeout", before[1]) == "OK"


def test_maxclients(server, restore_client_limits):
    admin = Raw(server.port)
    extra = []
    try:
        assert admin.call("CONFIG", "SET", "maxclients", "5") == "OK"
        assert admin.call("CONFIG", "GET", "maxclients") == [b"maxclients", b"5"]
        while True:
            c = Raw(server.port)
            extra.append(c)
            c.send(b"PING\r\n")
            line = c.read_line()
            if line != b"+PONG":
                break
            assert len(extra) <= 5
        assert line == b"-ERR max number of clients reached"
        extra.pop().expect_closed()
        extra.pop().close()  # one slot free again
        def accepted():
            try:
                with Raw(server.port) as c:
                    return c.call("PING") == "PONG"
            except (Closed, OSError):
                return False
        from harness import wait_until
        wait_until(accepted, timeout=5, what="a freed slot to accept a new client")
    finally:
        admin.call("CONFIG", "SET", "maxclients", "10000")
        admin.close()
        for c in extra:
            c.close()


def test_idle_timeout_closes_idle_clients(server, restore_client_limits):
    with Raw(server.port) as admin:
        assert admin.call("CONFIG", "SET", "timeout", "1") == "OK"
    with Raw(server.port) as idle:
        assert idle.call("PING") == "PONG"
        t0 = time.monotonic()
        idle.expect_closed(timeout=8)
        assert time.monotonic() - t0 >= 0.9
    with Raw(server.port) as busy:  # a client that keeps talking is not idle
        t0 = time.monotonic()
        while time.monotonic() - t0 < 1.5:
            assert busy.call("PING") == "PONG"
            time.sleep(0.2)  # the client's own pace, shorter than the timeout
