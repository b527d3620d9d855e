"""memcached's ASCII authentication (`memcached -Y <authfile>`; Locus: `[memcached] auth = true`
with the tenants' `user`/`password`).

The shared tests hold on Debian's memcached started with `-Y` (`--peer memcached`) and on Locus
(`--peer locus`): the same bytes in, the same replies out. The `locus_only` ones check that a
tenant's credentials open its own tenant only.
"""

from __future__ import annotations

import pytest

import harness
from test_memcached import Mc

pytestmark = pytest.mark.memcached

USER, PASSWORD = "alice", "pw1"


@pytest.fixture(scope="module")
def auth_server(peer):
    if peer == "memcached":
        wd = harness.new_workdir()
        authfile = wd / "auth"
        authfile.write_text(f"{USER}:{PASSWORD}\n")
        srv = harness.start_memcached(["-Y", str(authfile)], probe=harness.memcached_answers)
        srv.mc_port = srv.port
    else:
        resp, mcp = harness.free_ports(2)
        toml = (
            f'[server]\nbind = "127.0.0.1"\nport = {resp}\n\n[memory]\nmaxmemory = 67108864\n\n'
            f"[memcached]\nport = {mcp}\nauth = true\n\n"
            f'[[tenant]]\nname = "a"\nuser = "{USER}"\npassword = "{PASSWORD}"\n'
        )
        srv = harness.start_locus(toml, resp, {"memcached": mcp})
        srv.mc_port = mcp
    yield srv
    alive = srv.alive()
    srv.stop()
    assert alive, f"{srv.kind} died during the auth suite:\n{srv.log_tail()}"


def auth_block(user: str, password: str, key: bytes = b"auth") -> bytes:
    data = f"{user} {password}".encode()
    return b"set " + key + b" 0 0 " + str(len(data)).encode() + b"\r\n" + data + b"\r\n"


def test_commands_before_authentication_are_refused(auth_server):
    c = Mc(auth_server.mc_port)
    for req in [b"get foo\r\n", b"version\r\n", b"stats\r\n", b"mg foo v\r\n", b"set foo 0 0\r\n",
                b"gets a b c\r\n"]:
        assert c.cmd(req) == b"CLIENT_ERROR unauthenticated", req
    # A refused command's data is not swallowed: it is read as the next command line.
    assert c.cmd(b"add k 0 0 7\r\n") == b"CLIENT_ERROR unauthenticated"
    assert c.cmd(b"abcdefg\r\n") == b"CLIENT_ERROR unauthenticated"
    c.close()


def test_wrong_and_malformed_credentials_then_success(auth_server):
    c = Mc(auth_server.mc_port)
    assert c.cmd(auth_block(USER, "wrong")) == b"CLIENT_ERROR authentication failure"
    assert c.cmd(auth_block("bob", PASSWORD)) == b"CLIENT_ERROR authentication failure"
    assert c.cmd(b"set k 0 0 5\r\nalice\r\n") == b"CLIENT_ERROR bad authentication token format"
    assert c.cmd(b"set k 0 0 3\r\nabcde") == b"CLIENT_ERROR bad command line termination"
    assert c.cmd(b"get k\r\n") == b"CLIENT_ERROR unauthenticated"
    # The key, flags and exptime are ignored, and so is noreply: STORED is always sent.
    data = f"{USER} {PASSWORD}".encode()
    assert c.cmd(b"set anything 5 100 %d noreply\r\n%s\r\n" % (len(data), data)) == b"STORED"
    # Now a normal connection; the credentials were not stored as an item.
    assert c.lines(b"get anything auth\r\n") == [b"END"]
    assert c.lines(b"set k 3 0 2\r\nhi\r\nget k\r\n") == [b"STORED", b"VALUE k 3 2", b"hi", b"END"]
    # memcached shows its auth file, Locus "yes" (its credentials are the tenants').
    assert c.stats(b"settings")["auth_enabled_ascii"] not in ("no", None)
    s = c.stats()
    assert int(s["auth_cmds"]) >= 3 and int(s["auth_errors"]) >= 2
    # A second set with credentials is an ordinary set now.
    assert c.lines(auth_block(USER, "x", b"cred")) == [b"STORED"]
    assert c.lines(b"get cred\r\n")[1] == b"alice x"
    assert c.lines(b"delete k\r\ndelete cred\r\n") == [b"DELETED", b"DELETED"]
    c.close()


def test_each_connection_authenticates(auth_server):
    a = Mc(auth_server.mc_port)
    assert a.cmd(auth_block(USER, PASSWORD)) == b"STORED"
    b = Mc(auth_server.mc_port)
    assert b.cmd(b"get k\r\n") == b"CLIENT_ERROR unauthenticated"
    a.close()
    b.close()


def test_auth_line_split_over_many_writes(auth_server):
    c = Mc(auth_server.mc_port)
    for byte in auth_block(USER, PASSWORD):
        c.send(bytes([byte]))
    assert c.line() == b"STORED"
    assert c.lines(b"mn\r\n") == []
    c.close()


# ------------------------------------------------------------------------------------------
# Locus only: credentials open their own tenant, nobody else's
# ------------------------------------------------------------------------------------------


@pytest.mark.locus_only
def test_credentials_open_only_their_own_tenant(start_locus_toml):
    resp, shared, a_mc, b_mc = harness.free_ports(4)
    toml = (
        f'[server]\nbind = "127.0.0.1"\nport = {resp}\n\n[tenancy]\nmode = "prefix"\n\n'
        f"[memcached]\nport = {shared}\nauth = true\n\n"
        f'[[tenant]]\nname = "a"\nprefix = "a:"\nuser = "ua"\npassword = "pa"\nmemcached_port = {a_mc}\n\n'
        f'[[tenant]]\nname = "b"\nprefix = "b:"\nuser = "ub"\npassword = "pb"\nmemcached_port = {b_mc}\n'
    )
    start_locus_toml(toml, resp)
    # b's credentials do not open a's port, and a's do not open b's.
    on_a = Mc(a_mc)
    assert on_a.cmd(auth_block("ub", "pb")) == b"CLIENT_ERROR authentication failure"
    assert on_a.cmd(auth_block("ua", "pa")) == b"STORED"
    on_b = Mc(b_mc)
    assert on_b.cmd(auth_block("ua", "pa")) == b"CLIENT_ERROR authentication failure"
    assert on_b.cmd(auth_block("ub", "pb")) == b"STORED"
    assert on_a.lines(b"set a:1 0 0 1\r\nx\r\n") == [b"STORED"]
    assert on_b.lines(b"set b:1 0 0 1\r\ny\r\n") == [b"STORED"]
    # On the shared port, a's credentials bind the connection to a: b's keys are out of reach.
    sh = Mc(shared)
    assert sh.cmd(auth_block("ua", "pa")) == b"STORED"
    # (a key no tenant of the connection owns reads as a miss, as on the shared port without auth)
    assert sh.lines(b"get a:1 b:1\r\n") == [b"VALUE a:1 0 1", b"x", b"END"]
    assert sh.lines(b"delete b:1\r\n") == [b"SERVER_ERROR no tenant owns this key"]
    assert sh.lines(b"set b:1 0 0 1\r\nz\r\n") == [b"SERVER_ERROR no tenant owns this key"]
    # Its stats and flush_all are a's.
    assert sh.stats()["curr_items"] == "1"
    assert sh.lines(b"flush_all\r\n") == [b"OK"]
    assert on_b.lines(b"get b:1\r\n") == [b"VALUE b:1 0 1", b"y", b"END"]
    assert on_a.lines(b"get a:1\r\n") == [b"END"]
    # Connection gauges: an unauthenticated connection on the shared port counts for nobody;
    # once bound, it counts for its tenant.
    idle = Mc(shared)
    assert idle.cmd(b"get x\r\n") == b"CLIENT_ERROR unauthenticated"
    assert on_a.stats()["curr_connections"] == "2"
    assert on_b.stats()["curr_connections"] == "1"
    idle.close()
    # a's failed attempts are counted for a only.
    assert on_a.stats()["auth_errors"] == "1"
    assert on_b.stats()["auth_errors"] == "1"
    for c in (on_a, on_b, sh):
        c.close()
