"""CLUSTER as a Redis 7.0 server without cluster mode answers it: the command and its subcommands
exist (COMMAND LIST, COMMAND INFO), each checks its arity, an unknown subcommand is refused, and
every subcommand, HELP included, answers `ERR This instance has cluster support disabled`.
Compared call by call with a reference redis-server started by this module; under `--peer redis`
the server under test is itself a redis-server, so every assertion is Redis's behaviour.

Tenancy: CLUSTER reads and changes nothing, so a tenant gets exactly the admin's answers (checked in
user tenancy, where a tenant is a user of the shared port)."""

import pytest
import redis

from conftest import no_retry
from harness import HOST, free_ports, start_redis

DISABLED = "This instance has cluster support disabled"


def plain(port, **kw):
    c = redis.Redis(host=HOST, port=port, socket_timeout=30, retry=no_retry(), decode_responses=True, **kw)
    for k in [k for k in c.response_callbacks if k.startswith(("COMMAND", "CLUSTER"))]:
        del c.response_callbacks[k]
    return c


def answer(c, *args):
    try:
        return c.execute_command(*args)
    except redis.ResponseError as e:
        return f"error: {e}"


@pytest.fixture(scope="module")
def reference():
    srv = start_redis()
    c = plain(srv.port)
    yield c
    c.close()
    srv.stop()


def subcommands(c):
    """`cluster|x` names and arities, from COMMAND INFO."""
    (info,) = c.execute_command("COMMAND", "INFO", "cluster")
    return {s[0]: s[1] for s in info[9]}


def calls(subs):
    """For every subcommand: too few arguments, its arity exactly, and more if it is variadic."""
    for name, arity in sorted(subs.items()):
        words = ["CLUSTER", name.split("|")[1]]
        n = abs(arity)
        yield words + ["1"] * (n - 3) if n > 2 else words[:1]
        yield words + ["1"] * (n - 2)
        yield words + ["1"] * (n - 1)
    yield ["CLUSTER"]
    yield ["CLUSTER", "nosuch"]
    yield ["CLUSTER", "HELP"]
    yield ["cluster", "Keyslot", "k"]


def test_cluster_answers_as_redis_without_cluster_mode(server, reference):
    c = plain(server.port)
    subs = subcommands(reference)
    assert len(subs) >= 27 and "cluster|help" in subs
    assert set(subcommands(c)) == set(subs)
    differ = {}
    for call in calls(subs):
        mine, theirs = answer(c, *call), answer(reference, *call)
        if mine != theirs:
            differ[" ".join(call)] = (mine, theirs)
    assert differ == {}
    assert answer(c, "CLUSTER", "HELP") == f"error: {DISABLED}"
    assert answer(c, "CLUSTER", "INFO") == f"error: {DISABLED}"
    assert answer(c, "CLUSTER", "KEYSLOT") == "error: wrong number of arguments for 'cluster|keyslot' command"
    assert answer(c, "CLUSTER", "nosuch") == "error: unknown subcommand 'nosuch'. Try CLUSTER HELP."
    # COMMAND LIST sees the subcommands (Redis's unit/introspection-2 pattern `cl*help`).
    listed = c.execute_command("COMMAND", "LIST", "FILTERBY", "PATTERN", "cl*help")
    assert "cluster|help" in listed and "client|help" in listed
    assert "A container for cluster commands" in str(c.execute_command("COMMAND", "DOCS", "cluster"))
    c.close()


@pytest.mark.locus_only
def test_cluster_is_the_same_for_a_tenant(start_locus_toml):
    (main,) = free_ports(1)
    srv = start_locus_toml(f"""
[server]
bind = "127.0.0.1"
port = {main}

[tenancy]
mode = "user"

[admin]
user = "root"
password = "root-pw"

[[tenant]]
name = "a"
user = "alice"
password = "alice-pw"
""", main)
    alice = plain(srv.port, username="alice", password="alice-pw")
    root = plain(srv.port, username="root", password="root-pw")
    alice.set("k", "v")
    for call in (["CLUSTER", "INFO"], ["CLUSTER", "NODES"], ["CLUSTER", "KEYSLOT", "k"],
                 ["CLUSTER", "COUNTKEYSINSLOT", "1"], ["CLUSTER", "GETKEYSINSLOT", "1", "10"],
                 ["CLUSTER", "RESET", "HARD"], ["CLUSTER", "FLUSHSLOTS"], ["CLUSTER", "HELP"]):
        assert answer(alice, *call) == f"error: {DISABLED}"
        assert answer(root, *call) == f"error: {DISABLED}"
    assert alice.get("k") == "v"
    alice.close()
    root.close()
