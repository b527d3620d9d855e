"""Key specs: `COMMAND INFO`'s key specifications, `COMMAND GETKEYS` and `COMMAND GETKEYSANDFLAGS`,
compared command by command with a reference redis-server 7.0 started by this module.

Every command (and container subcommand) that both servers implement is compared: its key specs
(flags, begin search, find keys, notes), and the keys and flags both find in calls built from its
arity (all-name arguments, all-number arguments) and in hand-picked calls that reach the edges
(SET ... GET, a read-only BITFIELD, SORT ... STORE, MIGRATE ... KEYS, key counts of 0, too large or
not numbers, XREAD's odd STREAMS lists, GEORADIUS with STORE and STOREDIST). A command whose spec
or keys differ fails the test, named with what each server answered.

Under `--peer redis` the server under test is itself a redis-server, so every assertion here is
Redis's behaviour."""

import pytest
import redis

from conftest import no_retry
from harness import HOST, start_redis


def plain(port):
    """A RESP2 client that leaves COMMAND's replies unparsed (redis-py reshapes them)."""
    c = redis.Redis(host=HOST, port=port, socket_timeout=30, retry=no_retry())
    for k in [k for k in c.response_callbacks if k.startswith("COMMAND")]:
        del c.response_callbacks[k]
    return c


@pytest.fixture(scope="module")
def reference():
    srv = start_redis()
    c = plain(srv.port)
    yield c
    c.close()
    srv.stop()


@pytest.fixture(scope="module")
def tested(server):
    c = plain(server.port)
    yield c
    c.close()


def answer(c, *args):
    """The reply, or the error text (both servers must agree on either)."""
    try:
        return c.execute_command(*args)
    except redis.ResponseError as e:
        return f"error: {e}"


def common_commands(tested, reference):
    """Names (`get`, `object|encoding`) both servers list, with the reference's arity."""
    mine = {n.decode() for n in tested.execute_command("COMMAND", "LIST")}
    theirs = {}
    for info in reference.execute_command("COMMAND", "INFO"):
        theirs[info[0].decode()] = info
        for sub in info[9]:
            theirs[sub[0].decode()] = sub
    return {n: theirs[n] for n in sorted(mine & set(theirs))}


def specs_of(c, name):
    """The key specs of a command or `container|subcommand`, from COMMAND INFO."""
    parent, _, _ = name.partition("|")
    (info,) = c.execute_command("COMMAND", "INFO", parent)
    if "|" in name:
        (info,) = [s for s in info[9] if s[0].decode() == name]
    return info[8]


def test_every_common_command_has_redis_key_specs(tested, reference):
    common = common_commands(tested, reference)
    # Sanity: the comparison covers the command table, subcommands included.
    assert len(common) > 250 and "object|encoding" in common and "lmove" in common
    differ = {}
    for name in common:
        mine, theirs = specs_of(tested, name), specs_of(reference, name)
        if mine != theirs:
            differ[name] = (mine, theirs)
    assert differ == {}


def test_subcommands_with_keys_have_redis_arity_and_key_range(tested, reference):
    for name, info in common_commands(tested, reference).items():
        if "|" not in name or not info[8]:
            continue
        parent = name.split("|")[0]
        (mine,) = tested.execute_command("COMMAND", "INFO", parent)
        (sub,) = [s for s in mine[9] if s[0].decode() == name]
        assert sub[1] == info[1] and sub[3:6] == info[3:6], name


def calls_from_arity(name, info):
    """Two calls per command: every argument a distinct name, then every argument `1` (key counts
    that hold)."""
    words = name.split("|")
    n = max(abs(info[1]), len(words) + 1) - len(words)
    yield words + [f"a{i}" for i in range(n)]
    yield words + ["1"] * n
    yield words + ["2"] * (n + 2)


EDGES = [
    ["set", "k", "v"],
    ["set", "k", "v", "GET"],
    ["set", "k", "v", "get", "EX", "10"],
    ["set", "k", "v", "getx"],
    ["bitfield", "k", "GET", "u8", "0"],
    ["bitfield", "k", "GET", "u8", "0", "OVERFLOW", "SAT"],
    ["bitfield", "k", "GET", "u8", "0", "SET", "u8", "0", "1"],
    ["bitfield", "k", "GET", "u8"],
    ["bitfield", "k"],
    ["bitfield_ro", "k", "GET", "u8", "0"],
    ["sort", "k"],
    ["sort", "k", "STORE", "d"],
    ["sort", "k", "STORE", "d1", "BY", "store", "STORE", "d2"],
    ["sort", "k", "LIMIT", "0", "1", "GET", "STORE", "STORE"],
    ["sort", "k", "STORE"],
    ["sort_ro", "k", "BY", "w*"],
    ["migrate", "h", "1", "k", "0", "10"],
    ["migrate", "h", "1", "", "0", "10", "COPY", "KEYS", "a", "b"],
    ["migrate", "h", "1", "", "0", "10", "AUTH", "keys", "KEYS", "a"],
    ["migrate", "h", "1", "", "0", "10", "AUTH2", "u", "keys", "KEYS", "a", "b"],
    ["migrate", "h", "1", "k", "0", "10", "KEYS", "a"],
    ["migrate", "h", "1", "", "0", "10", "KEYS"],
    ["eval", "return 1", "0"],
    ["eval", "return 1", "2", "a", "b", "c"],
    ["eval", "return 1", "3", "a", "b"],
    ["eval", "return 1", "-1", "a"],
    ["eval", "return 1", "x"],
    ["fcall_ro", "f", "1", "a"],
    ["zunionstore", "d", "0", "a"],
    ["zunionstore", "d", "2", "a", "b", "WEIGHTS", "1", "2"],
    ["zunionstore", "d", "3", "a", "b"],
    ["zunionstore", "d", "2x", "a", "b"],
    ["zunion", "2", "a", "b", "WITHSCORES"],
    ["zintercard", "1", "a", "LIMIT", "1"],
    ["sintercard", "0", "a"],
    ["lmpop", "2", "a", "b", "LEFT"],
    ["blmpop", "0", "2", "a", "b", "LEFT", "COUNT", "2"],
    ["bzmpop", "1.5", "1", "a", "MIN"],
    ["zmpop", "1", "a", "MAX"],
    ["xread", "STREAMS", "a", "0"],
    ["xread", "COUNT", "1", "STREAMS", "a", "b", "0", "0"],
    ["xread", "STREAMS", "a", "b", "0"],
    ["xread", "STREAMS", "a"],
    ["xread", "BLOCK", "0", "STREAMS"],
    ["xreadgroup", "GROUP", "g", "c", "STREAMS", "a", ">"],
    ["xreadgroup", "GROUP", "g", "c", "NOACK", "COUNT", "1", "streams", "a", "b", ">", ">"],
    ["georadius", "k", "0", "0", "1", "km", "STORE", "d"],
    ["georadius", "k", "0", "0", "1", "km", "STOREDIST", "d"],
    ["georadius", "k", "0", "0", "1", "km", "STORE", "d1", "STOREDIST", "d2"],
    ["georadiusbymember", "k", "m", "1", "km", "STORE", "d"],
    ["georadius_ro", "k", "0", "0", "1", "km"],
    ["geosearchstore", "d", "s", "FROMMEMBER", "m", "BYRADIUS", "1", "km"],
    ["mset", "a", "1", "b", "2"],
    ["mset", "a", "1", "b"],
    ["msetnx", "a", "1"],
    ["lmove", "a", "b", "LEFT", "RIGHT"],
    ["blpop", "a", "b", "0"],
    ["bzpopmin", "a", "0"],
    ["bitop", "AND", "d", "a", "b"],
    ["pfmerge", "d"],
    ["pfmerge", "d", "a"],
    ["lcs", "a", "b", "LEN"],
    ["copy", "a", "b", "DB", "1"],
    ["object", "encoding", "k"],
    ["object", "ENCODING", "k"],
    ["object", "help"],
    ["object", "nosuch", "k"],
    ["object"],
    ["memory", "usage", "k", "SAMPLES", "5"],
    ["memory", "usage"],
    ["xgroup", "create", "k", "g", "$", "MKSTREAM"],
    ["xinfo", "stream", "k", "FULL"],
    ["xinfo", "groups"],
    ["get"],
    ["get", "a", "b"],
    ["nosuchcommand", "a"],
    ["ping", "a"],
    ["client", "list"],
]


def compare_calls(tested, reference, calls):
    differ = {}
    for call in calls:
        for sub in ("GETKEYSANDFLAGS", "GETKEYS"):
            mine = answer(tested, "COMMAND", sub, *call)
            theirs = answer(reference, "COMMAND", sub, *call)
            if mine != theirs:
                differ[(sub, " ".join(call))] = (mine, theirs)
    return differ


def test_getkeysandflags_match_redis_for_every_common_command(tested, reference):
    calls = []
    for name, info in common_commands(tested, reference).items():
        if name in ("client|setinfo", "client|no-touch"):
            continue
        calls.extend(calls_from_arity(name, info))
    assert compare_calls(tested, reference, calls) == {}


def test_getkeysandflags_edges_match_redis(tested, reference):
    assert compare_calls(tested, reference, EDGES) == {}


def test_getkeysandflags_as_redis_documents(tested):
    # Redis's own suite (unit/introspection-2) and its documentation's examples.
    c = tested
    assert c.execute_command("COMMAND", "GETKEYSANDFLAGS", "set", "k1", "v1") == [[b"k1", [b"OW", b"update"]]]
    assert c.execute_command("COMMAND", "GETKEYSANDFLAGS", "LMOVE", "k1", "k2", "left", "right") == [
        [b"k1", [b"RW", b"access", b"delete"]],
        [b"k2", [b"RW", b"insert"]],
    ]
    assert c.execute_command("COMMAND", "GETKEYSANDFLAGS", "sort", "k1", "store", "k2") == [
        [b"k1", [b"RO", b"access"]],
        [b"k2", [b"OW", b"update"]],
    ]
    assert c.execute_command("COMMAND", "GETKEYSANDFLAGS", "set", "k1", "v1", "get") == [
        [b"k1", [b"RW", b"access", b"update"]]
    ]
    assert c.execute_command("COMMAND", "GETKEYSANDFLAGS", "eval", "return 1", "0") == []
    with pytest.raises(redis.ResponseError, match="^Invalid arguments specified for command$"):
        c.execute_command("COMMAND", "GETKEYSANDFLAGS", "zunionstore", "d", "0", "a")
    with pytest.raises(redis.ResponseError, match="^The command has no key arguments$"):
        c.execute_command("COMMAND", "GETKEYSANDFLAGS", "ping", "x")
    with pytest.raises(redis.ResponseError, match="^Invalid command specified$"):
        c.execute_command("COMMAND", "GETKEYSANDFLAGS", "object", "nosuch", "k")
    with pytest.raises(redis.ResponseError, match="^Invalid number of arguments specified for command$"):
        c.execute_command("COMMAND", "GETKEYSANDFLAGS", "get", "a", "b")
    with pytest.raises(redis.ResponseError, match=r"wrong number of arguments for 'command\|getkeysandflags'"):
        c.execute_command("COMMAND", "GETKEYSANDFLAGS", "get")
