"""Error replies, word for word as Redis sends them (code included), in RESP2 and RESP3: one table of
(command, exact error line), run over a raw socket. Every line was checked against redis-server 7.0."""

import pytest

from harness import Raw, RespError

SETUP = [("SET", "str", "abc"), ("SET", "int", "10"), ("SET", "max", str(2**63 - 1)),
         ("SET", "float", "1.5")]

CASES = [
    (("GET",), "ERR wrong number of arguments for 'get' command"),
    (("SET", "k"), "ERR wrong number of arguments for 'set' command"),
    (("MGET",), "ERR wrong number of arguments for 'mget' command"),
    (("MSET", "a", "1", "b"), "ERR wrong number of arguments for 'mset' command"),
    (("DEL",), "ERR wrong number of arguments for 'del' command"),
    (("EXPIRE", "k"), "ERR wrong number of arguments for 'expire' command"),
    (("SET", "k", "v", "NX", "XX"), "ERR syntax error"),
    (("SET", "k", "v", "EX", "0"), "ERR invalid expire time in 'set' command"),
    (("SET", "k", "v", "PX", "-1"), "ERR invalid expire time in 'set' command"),
    (("SET", "k", "v", "EX", "1.5"), "ERR value is not an integer or out of range"),
    (("SETEX", "k", "0", "v"), "ERR invalid expire time in 'setex' command"),
    (("SETEX", "k", "x", "v"), "ERR value is not an integer or out of range"),
    (("PSETEX", "k", "0", "v"), "ERR invalid expire time in 'psetex' command"),
    (("GETEX", "str", "EX", "-1"), "ERR invalid expire time in 'getex' command"),
    (("GETEX", "str", "FOO"), "ERR syntax error"),
    (("INCR", "str"), "ERR value is not an integer or out of range"),
    (("INCR", "float"), "ERR value is not an integer or out of range"),
    (("INCRBY", "int", "x"), "ERR value is not an integer or out of range"),
    (("INCR", "max"), "ERR increment or decrement would overflow"),
    (("DECRBY", "int", str(-(2**63))), "ERR decrement would overflow"),
    (("INCRBYFLOAT", "str", "1"), "ERR value is not a valid float"),
    (("INCRBYFLOAT", "int", "x"), "ERR value is not a valid float"),
    (("INCRBYFLOAT", "int", "inf"), "ERR increment would produce NaN or Infinity"),
    (("INCRBYFLOAT", "str", "inf"), "ERR value is not a valid float"),  # the stored value is checked first
    (("SETRANGE", "str", "-1", "x"), "ERR offset is out of range"),
    (("SETRANGE", "str", str(512 * 1024 * 1024), "x"), "ERR string exceeds maximum allowed size (proto-max-bulk-len)"),
    (("GETRANGE", "str", "x", "1"), "ERR value is not an integer or out of range"),
    (("EXPIRE", "str", "x"), "ERR value is not an integer or out of range"),
    (("EXPIRE", "str", "10", "NX", "XX"), "ERR NX and XX, GT or LT options at the same time are not compatible"),
    (("EXPIRE", "str", "10", "GT", "LT"), "ERR GT and LT options at the same time are not compatible"),
    (("EXPIRE", "str", "10", "BAD"), "ERR Unsupported option BAD"),
    (("EXPIRE", "str", str(2**63 - 1)), "ERR invalid expire time in 'expire' command"),
    (("RENAME", "missing", "x"), "ERR no such key"),
    (("RENAMENX", "missing", "x"), "ERR no such key"),
    (("SCAN", "x"), "ERR invalid cursor"),
    (("SCAN", "0", "COUNT", "0"), "ERR syntax error"),
    (("SELECT", "x"), "ERR value is not an integer or out of range"),
    (("SELECT", "100000"), "ERR DB index is out of range"),
    (("HELLO", "4"), "NOPROTO unsupported protocol version"),
    (("CLIENT", "SETNAME", "a b"), "ERR Client names cannot contain spaces, newlines or special characters."),
    (("CLIENT", "KILL", "127.0.0.1:1"), "ERR No such client"),
    (("CONFIG", "SET", "maxmemory", "x"),
     "ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value"),
    (("CONFIG", "SET", "nope", "1"), "ERR Unknown option or number of arguments for CONFIG SET - 'nope'"),
    (("OBJECT", "FREQ", "str"), "ERR An LFU maxmemory policy is not selected, access frequency not tracked. "
     "Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."),
    (("NOSUCHCMD", "a"), "ERR unknown command 'NOSUCHCMD', with args beginning with: 'a' "),
    (("FLUSHALL", "x"), "ERR syntax error"),
]


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
def test_error_wording(server, protocol):
    with Raw(server.port) as c:
        c.call("HELLO", str(protocol))
        c.call("FLUSHALL")
        policy = c.call("CONFIG", "GET", "maxmemory-policy")
        policy = policy[1] if isinstance(policy, list) else policy[b"maxmemory-policy"]
        assert not policy.startswith(b"allkeys-lfu") and not policy.startswith(b"volatile-lfu")
        for cmd in SETUP:
            assert c.call(*cmd) == "OK"
        mismatches = []
        for args, want in CASES:
            got = c.call(*args)
            if not isinstance(got, RespError) or got != want:
                mismatches.append(f"{' '.join(args)[:60]!s}: got {got!r}, Redis: {want!r}")
        # the data is untouched by the failed commands
        assert c.call("MGET", "str", "int", "max", "float") == [b"abc", b"10", str(2**63 - 1).encode(), b"1.5"]
        assert not mismatches, "\n".join(mismatches)
