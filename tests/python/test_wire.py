"""Exact reply bytes, RESP2 and RESP3: one table of (command, RESP2 reply, RESP3 reply) run in order on
one connection per protocol. Checked against redis-server 7.0; the reply types (simple vs bulk, null
bulk vs RESP3 null, map vs flat array) are what client libraries decode."""

import pytest

from harness import Raw, encode

NIL2, NIL3 = b"$-1\r\n", b"_\r\n"

TABLE = [
    (("PING",), b"+PONG\r\n", None),
    (("PING", "hi"), b"$2\r\nhi\r\n", None),
    (("ECHO", ""), b"$0\r\n\r\n", None),
    (("SET", "k", "v"), b"+OK\r\n", None),
    (("GET", "k"), b"$1\r\nv\r\n", None),
    (("GET", "missing"), NIL2, NIL3),
    (("SET", "k", "w", "NX"), NIL2, NIL3),
    (("SET", "k", "w", "XX", "GET"), b"$1\r\nv\r\n", None),
    (("SET", "new", "x", "GET"), NIL2, NIL3),
    (("MGET", "k", "missing"), b"*2\r\n$1\r\nw\r\n$-1\r\n", b"*2\r\n$1\r\nw\r\n_\r\n"),
    (("MGET", "missing"), b"*1\r\n$-1\r\n", b"*1\r\n_\r\n"),
    (("INCR", "n"), b":1\r\n", None),
    (("INCRBY", "n", "-5"), b":-4\r\n", None),
    (("INCRBYFLOAT", "n", "1.5"), b"$4\r\n-2.5\r\n", None),
    (("APPEND", "k", "xyz"), b":4\r\n", None),
    (("STRLEN", "k"), b":4\r\n", None),
    (("GETRANGE", "k", "1", "2"), b"$2\r\nxy\r\n", None),
    (("GETRANGE", "missing", "0", "-1"), b"$0\r\n\r\n", None),
    (("SETRANGE", "k", "4", "!"), b":5\r\n", None),
    (("GET", "k"), b"$5\r\nwxyz!\r\n", None),
    (("EXISTS", "k", "missing", "k"), b":2\r\n", None),
    (("TYPE", "k"), b"+string\r\n", None),
    (("TYPE", "missing"), b"+none\r\n", None),
    (("TTL", "k"), b":-1\r\n", None),
    (("PTTL", "missing"), b":-2\r\n", None),
    (("EXPIRE", "k", "1000"), b":1\r\n", None),
    (("EXPIRE", "k", "1000", "NX"), b":0\r\n", None),
    (("PERSIST", "k"), b":1\r\n", None),
    (("EXPIRETIME", "k"), b":-1\r\n", None),
    (("OBJECT", "ENCODING", "n"), b"$6\r\nembstr\r\n", None),
    (("OBJECT", "ENCODING", "missing"), NIL2, NIL3),
    (("MEMORY", "USAGE", "missing"), NIL2, NIL3),
    (("CLIENT", "GETNAME"), NIL2, NIL3),
    (("CLIENT", "SETNAME", "wire"), b"+OK\r\n", None),
    (("CLIENT", "GETNAME"), b"$4\r\nwire\r\n", None),
    (("CONFIG", "SET", "maxmemory-samples", "7"), b"+OK\r\n", None),
    (("CONFIG", "GET", "maxmemory-samples"), b"*2\r\n$17\r\nmaxmemory-samples\r\n$1\r\n7\r\n",
     b"%1\r\n$17\r\nmaxmemory-samples\r\n$1\r\n7\r\n"),
    (("CONFIG", "GET", "no-such-param"), b"*0\r\n", b"%0\r\n"),
    (("DEL", "k", "n", "new", "missing"), b":3\r\n", None),
    (("GETDEL", "missing"), NIL2, NIL3),
    (("MSETNX", "a", "1", "b", "2"), b":1\r\n", None),
    (("RENAME", "a", "c"), b"+OK\r\n", None),
    (("RENAMENX", "b", "c"), b":0\r\n", None),
    (("DEL", "b"), b":1\r\n", None),
    (("RANDOMKEY",), b"$1\r\nc\r\n", None),
    (("KEYS", "*"), b"*1\r\n$1\r\nc\r\n", None),
    (("SCAN", "0"), b"*2\r\n$1\r\n0\r\n*1\r\n$1\r\nc\r\n", None),
    (("DBSIZE",), b":1\r\n", None),
    (("FLUSHALL",), b"+OK\r\n", None),
    (("RANDOMKEY",), NIL2, NIL3),
    (("SCAN", "0"), b"*2\r\n$1\r\n0\r\n*0\r\n", None),
    (("GET",), b"-ERR wrong number of arguments for 'get' command\r\n", None),
]


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
def test_reply_bytes(server, protocol):
    with Raw(server.port) as c:
        c.call("HELLO", str(protocol))
        c.call("FLUSHALL")
        before = c.call("CONFIG", "GET", "maxmemory-samples")
        before = before[1] if isinstance(before, list) else before[b"maxmemory-samples"]
        mismatches = []
        # each command is followed by ECHO <sentinel>: everything before the sentinel's reply is the
        # command's complete reply, so missing and extra bytes are both caught without waiting
        sentinel = b"$14\r\n--end-of-reply\r\n"
        try:
            for args, want2, want3 in TABLE:
                want = want2 if protocol == 2 or want3 is None else want3
                c.send(encode(*args) + encode("ECHO", "--end-of-reply"))
                got = c.buf
                c.buf = b""
                while not got.endswith(sentinel):
                    chunk = c.sock.recv(65536)
                    assert chunk, f"connection closed after {' '.join(args)}"
                    got += chunk
                got = got[: -len(sentinel)]
                if got != want:
                    mismatches.append(f"{' '.join(args)}: got {got[:120]!r}, Redis: {want!r}")
        finally:
            c.call("CONFIG", "SET", "maxmemory-samples", before)
        assert not mismatches, "\n".join(mismatches)
