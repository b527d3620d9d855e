"""Malformed input from outside, over raw sockets: bad and huge declared lengths, truncated frames,
binary garbage, oversized inline commands. The server answers with Redis's protocol errors (and closes
the connection when framing is lost, as Redis does), never crashes, and keeps serving other clients."""

import random
import socket

import pytest

from harness import Closed, Raw

# (request bytes, exact reply line, connection closed afterwards) — all checked against redis-server 7.0
PROTOCOL_ERRORS = [
    (b"*99999999999\r\n", b"-ERR Protocol error: invalid multibulk length"),
    (b"*2147483648\r\n", b"-ERR Protocol error: invalid multibulk length"),
    (b"*abc\r\n", b"-ERR Protocol error: invalid multibulk length"),
    (b"*1\r\n$9999999999\r\n", b"-ERR Protocol error: invalid bulk length"),
    (b"*1\r\n$536870913\r\n", b"-ERR Protocol error: invalid bulk length"),
    (b"*1\r\n$-5\r\n", b"-ERR Protocol error: invalid bulk length"),
    (b"*1\r\n$abc\r\n", b"-ERR Protocol error: invalid bulk length"),
    (b"*2\r\n$4\r\nECHO\r\n$-1\r\n", b"-ERR Protocol error: invalid bulk length"),
    (b"*1\r\nfoo\r\n", b"-ERR Protocol error: expected '$', got 'f'"),
    (b"*1\r\n:1\r\n", b"-ERR Protocol error: expected '$', got ':'"),
    (b"*2\r\n$3\r\nGET\r\n*1\r\n", b"-ERR Protocol error: expected '$', got '*'"),
    (b"A" * 70_000, b"-ERR Protocol error: too big inline request"),
    (b"*" + b"1" * 70_000, b"-ERR Protocol error: too big mbulk count string"),
    (b"*1\r\n$" + b"1" * 70_000, b"-ERR Protocol error: too big bulk count string"),
]


def served_normally(port):
    """Another, fresh client gets normal service."""
    with Raw(port) as c:
        assert c.call("PING") == "PONG"
        assert c.call("SET", "malformed:probe", "ok") == "OK"
        assert c.call("GET", "malformed:probe") == b"ok"
        assert c.call("DEL", "malformed:probe") == 1


@pytest.mark.parametrize("request_bytes,reply", PROTOCOL_ERRORS,
                         ids=[repr(r[:24])[2:-1] for r, _ in PROTOCOL_ERRORS])
def test_protocol_error_reply_then_close(server, request_bytes, reply):
    with Raw(server.port) as c:
        c.send(request_bytes)
        assert c.read_line() == reply
        c.expect_closed()
    assert server.alive()
    served_normally(server.port)


def test_unbalanced_quotes_inline(server):
    """Redis closes the connection after this error (its `setProtocolError`), though the line
    end is known; so does Locus, and the PING sent with it is not answered."""
    with Raw(server.port) as c:
        c.send(b'SET "foo\r\nPING\r\n')
        assert c.read_line() == b"-ERR Protocol error: unbalanced quotes in request"
        c.expect_closed()
    for line in (b"SET 'a b\r\n", b'SET "a"b c\r\n'):
        with Raw(server.port) as c:
            c.send(line)
            assert c.read_line() == b"-ERR Protocol error: unbalanced quotes in request"
            c.expect_closed()
    served_normally(server.port)


def test_commands_before_a_protocol_error_are_answered(server):
    with Raw(server.port) as c:
        c.send(b"*1\r\n$4\r\nPING\r\nPING\r\n*1\r\n$-7\r\n*1\r\n$4\r\nPING\r\n")
        assert c.read() == "PONG"
        assert c.read() == "PONG"
        assert c.read_line() == b"-ERR Protocol error: invalid bulk length"
        c.expect_closed()


def test_empty_and_null_multibulk_are_ignored(server):
    with Raw(server.port) as c:
        c.send(b"*-1\r\n*0\r\nPING\r\n\r\n\r\n*1\r\n$4\r\nPING\r\n")
        assert c.read() == "PONG"
        assert c.read() == "PONG"
        assert c.nothing_within(0.2)
        assert c.call("ECHO", "still open") == b"still open"


def test_empty_command_name_and_inline_unknown(server):
    with Raw(server.port) as c:
        c.send(b"*1\r\n$0\r\n\r\n")
        assert c.read() == "ERR unknown command '', with args beginning with: "
        c.send(b"FOO bar baz\r\n")
        assert c.read() == "ERR unknown command 'FOO', with args beginning with: 'bar' 'baz' "
        c.send(b"\x01\xff\xfe\x80 garbage\r\n")
        assert c.read().startswith("ERR unknown command ")
        assert c.call("PING") == "PONG"


def test_inline_quoting(server):
    with Raw(server.port) as c:
        c.send(b'SET "inline key" "a\\x41\\n b"\r\nGET "inline key"\r\nDEL "inline key"\r\n')
        assert c.read() == "OK"
        assert c.read() == b"aA\n b"
        assert c.read() == 1


@pytest.mark.parametrize("cut", [1, 3, 5, 9, 14, 20, 27, 33])
def test_truncated_frame_then_close(server, cut):
    full = b"*3\r\n$3\r\nSET\r\n$9\r\ntrunc:key\r\n$10\r\n0123456789\r\n"
    assert cut < len(full)
    with Raw(server.port) as c:
        c.send(full[:cut])
        assert c.nothing_within(0.05)  # an incomplete frame gets no reply
    served_normally(server.port)
    with Raw(server.port) as c:
        assert c.call("EXISTS", "trunc:key") == 0  # nothing half-executed


def test_truncated_frame_completed_later(server):
    full = b"*3\r\n$3\r\nSET\r\n$9\r\ntrunc:key\r\n$10\r\n0123456789\r\n"
    with Raw(server.port) as c:
        c.send(full[:20])
        assert c.nothing_within(0.1)
        served_normally(server.port)  # another client is served meanwhile
        c.send(full[20:])
        assert c.read() == "OK"
        assert c.call("GETDEL", "trunc:key") == b"0123456789"


def test_huge_declared_bulk_pending_does_not_block_others(server):
    """A client declares a 500 MB argument and sends 3 bytes: others are served; closing is clean."""
    with Raw(server.port) as slow:
        slow.send(b"*3\r\n$3\r\nSET\r\n$4\r\nhuge\r\n$500000000\r\nabc")
        for _ in range(3):
            served_normally(server.port)
        assert slow.nothing_within(0.05)
    served_normally(server.port)
    with Raw(server.port) as c:
        assert c.call("EXISTS", "huge") == 0


def test_huge_declared_array_pending_does_not_block_others(server):
    with Raw(server.port) as slow:
        slow.send(b"*1000000\r\n$3\r\nSET\r\n")
        served_normally(server.port)
        assert slow.nothing_within(0.05)
    served_normally(server.port)


def test_binary_garbage_from_many_clients(server):
    """Seeded random garbage (including NUL bytes and fake headers) from 30 clients: every reply is an
    error, the server survives, and a well-behaved client is served throughout."""
    rng = random.Random(1234)
    prefixes = [b"", b"*", b"*3\r\n", b"$", b"*1\r\n$", b"*2\r\n$3\r\nGET\r\n$"]
    for i in range(30):
        blob = rng.choice(prefixes) + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 2048)))
        s = socket.create_connection(("127.0.0.1", server.port), timeout=2)
        try:
            s.sendall(blob)
            s.settimeout(0.05)
            got = b""
            try:
                while len(got) < 1 << 20:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    got += chunk
            except (socket.timeout, ConnectionResetError):
                pass
            for line in got.split(b"\r\n"):
                if line:
                    assert line.startswith(b"-"), f"garbage #{i} got a non-error reply line {line[:80]!r}"
        finally:
            s.close()
        if i % 10 == 9:
            served_normally(server.port)
    assert server.alive()
    served_normally(server.port)


def test_abrupt_resets_mid_reply(server):
    """Clients that ask for a large reply and reset the connection at once do not hurt the server."""
    with Raw(server.port) as c:
        c.call("SET", "bigval", "x" * 1_000_000)
    for _ in range(10):
        s = socket.create_connection(("127.0.0.1", server.port))
        s.sendall(b"*2\r\n$3\r\nGET\r\n$6\r\nbigval\r\n" * 20)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.close()  # RST
    served_normally(server.port)
    with Raw(server.port) as c:
        assert len(c.call("GET", "bigval")) == 1_000_000
        c.call("DEL", "bigval")


def test_oversized_argument_count_under_limit_is_fine(server):
    n = 10_000
    with Raw(server.port) as c:
        args = ["MSET"]
        for i in range(n):
            args += [f"many:{i}", "v"]
        assert c.call(*args) == "OK"
        assert c.call("DBSIZE") >= n
        assert c.call("DEL", *[f"many:{i}" for i in range(n)]) == n
