"""Pub/sub: SUBSCRIBE/PSUBSCRIBE/PUBLISH/PUBSUB with Redis's replies in RESP2 and RESP3, subscribed
mode, RESET, the pubsub output buffer limit, and (Locus only) channels that stay inside a tenant."""

import socket
import time

import pytest
import redis

from harness import HOST, Raw, free_ports, wait_until


def test_subscribe_publish_unsubscribe(server):
    with Raw(server.port) as sub, Raw(server.port) as pub:
        sub.send(b"*3\r\n$9\r\nSUBSCRIBE\r\n$3\r\nch1\r\n$3\r\nch2\r\n")
        assert sub.read() == [b"subscribe", b"ch1", 1]
        assert sub.read() == [b"subscribe", b"ch2", 2]
        # The same channel twice: still two subscriptions.
        assert sub.call("SUBSCRIBE", "ch1") == [b"subscribe", b"ch1", 2]
        assert pub.call("PUBLISH", "ch1", "hello") == 1
        assert pub.call("PUBLISH", "nobody", "x") == 0
        assert sub.read() == [b"message", b"ch1", b"hello"]
        assert pub.call("PUBSUB", "NUMSUB", "ch1", "ch2", "nobody") == [b"ch1", 1, b"ch2", 1, b"nobody", 0]
        assert sorted(pub.call("PUBSUB", "CHANNELS")) == [b"ch1", b"ch2"]
        assert pub.call("PUBSUB", "CHANNELS", "*2") == [b"ch2"]
        sub.send(b"*1\r\n$11\r\nUNSUBSCRIBE\r\n")
        got = [sub.read(), sub.read()]
        assert sorted(got) == [[b"unsubscribe", b"ch1", 0], [b"unsubscribe", b"ch2", 1]] or \
            sorted(got) == [[b"unsubscribe", b"ch1", 1], [b"unsubscribe", b"ch2", 0]]
        # Nothing left: one reply with a null channel.
        assert sub.call("UNSUBSCRIBE") == [b"unsubscribe", None, 0]
        assert sub.call("UNSUBSCRIBE", "never") == [b"unsubscribe", b"never", 0]
        assert pub.call("PUBLISH", "ch1", "after") == 0
        # Out of subscribed mode: ordinary commands again.
        assert sub.call("PING") == "PONG"


def test_psubscribe_and_pmessage(server):
    with Raw(server.port) as sub, Raw(server.port) as pub:
        assert sub.call("PSUBSCRIBE", "news.*") == [b"psubscribe", b"news.*", 1]
        assert sub.call("SUBSCRIBE", "news.art") == [b"subscribe", b"news.art", 2]
        assert pub.call("PUBSUB", "NUMPAT") == 1
        # Both the channel and the pattern subscription receive it.
        assert pub.call("PUBLISH", "news.art", "m1") == 2
        got = [sub.read(), sub.read()]
        assert [b"message", b"news.art", b"m1"] in got
        assert [b"pmessage", b"news.*", b"news.art", b"m1"] in got
        assert pub.call("PUBLISH", "sport.x", "m2") == 0
        assert sub.call("PUNSUBSCRIBE", "news.*") == [b"punsubscribe", b"news.*", 1]
        assert sub.call("PUNSUBSCRIBE") == [b"punsubscribe", None, 1]
        assert pub.call("PUBSUB", "NUMPAT") == 0


def test_subscribed_mode_allows_only_pubsub_ping_quit_reset(server):
    with Raw(server.port) as sub:
        assert sub.call("SUBSCRIBE", "c") == [b"subscribe", b"c", 1]
        assert sub.call("GET", "k") == ("ERR Can't execute 'get': only (P|S)SUBSCRIBE / "
                                        "(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
        assert sub.call("PING") == [b"pong", b""]
        assert sub.call("PING", "hi") == [b"pong", b"hi"]
        assert sub.call("RESET") == "RESET"
        assert sub.call("GET", "k") is None
    with Raw(server.port) as pub:
        assert pub.call("PUBSUB", "NUMSUB", "c") == [b"c", 0]


def test_resp3_pushes_and_commands_while_subscribed(server):
    with Raw(server.port) as sub, Raw(server.port) as pub:
        sub.call("HELLO", "3")
        sub.send(b"*2\r\n$9\r\nSUBSCRIBE\r\n$2\r\nr3\r\n")
        assert sub._line() == b">3"
        assert [sub.read() for _ in range(3)] == [b"subscribe", b"r3", 1]
        # RESP3 clients keep running commands while subscribed.
        assert sub.call("SET", "k3", "v") == "OK"
        assert pub.call("PUBLISH", "r3", "hi") == 1
        assert sub._line() == b">3"
        assert [sub.read() for _ in range(3)] == [b"message", b"r3", b"hi"]
        # Publishing to a channel it listens to: the message comes before PUBLISH's reply.
        sub.send(b"*3\r\n$7\r\nPUBLISH\r\n$2\r\nr3\r\n$4\r\nself\r\n")
        assert sub.read() == [b"message", b"r3", b"self"]
        assert sub.read() == 1
        sub.call("DEL", "k3")


def test_redis_py_pubsub(server):
    r = redis.Redis(host=HOST, port=server.port, decode_responses=True)
    p = r.pubsub(ignore_subscribe_messages=True)
    p.subscribe("py")
    p.psubscribe("py*")
    assert r.publish("py", "data") == 2
    msgs = []
    deadline = time.time() + 5
    while len(msgs) < 2 and time.time() < deadline:
        m = p.get_message(timeout=0.5)
        if m:
            msgs.append((m["type"], m["channel"], m["data"]))
    assert sorted(msgs) == [("message", "py", "data"), ("pmessage", "py", "data")]
    p.close()
    r.close()


def test_subscribe_inside_multi_and_queued_error(server):
    with Raw(server.port) as c:
        assert c.call("MULTI") == "OK"
        assert c.call("PUBLISH", "m", "x") == "QUEUED"
        assert c.call("EXEC") == [0]


def test_a_subscriber_that_does_not_read_is_disconnected_at_the_pubsub_limit(start_server):
    srv = start_server()
    with Raw(srv.port) as admin:
        assert admin.call("CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 0 0") == "OK"
    lazy = socket.create_connection((HOST, srv.port))
    lazy.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    lazy.sendall(b"*2\r\n$9\r\nSUBSCRIBE\r\n$5\r\nflood\r\n")
    with Raw(srv.port) as pub:
        wait_until(lambda: pub.call("PUBSUB", "NUMSUB", "flood") == [b"flood", 1], what="subscribed")
        payload = "x" * 10_000
        for _ in range(3_000):  # 30 MB to a client that reads nothing
            pub.call("PUBLISH", "flood", payload)
            if pub.call("PUBSUB", "NUMSUB", "flood") == [b"flood", 0]:
                break
        wait_until(lambda: pub.call("PUBSUB", "NUMSUB", "flood") == [b"flood", 0],
                   what="the lazy subscriber disconnected")
        assert pub.call("PING") == "PONG"
    lazy.close()


TENANTS = """
[server]
bind = "127.0.0.1"
port = {main}

[memory]
maxmemory = "16MiB"

[tenancy]
mode = "port"

[[tenant]]
name = "a"
port = {pa}

[[tenant]]
name = "b"
port = {pb}
"""


@pytest.mark.locus_only
def test_channels_stay_inside_their_tenant(start_locus_toml):
    main, pa, pb = free_ports(3)
    start_locus_toml(TENANTS.format(main=main, pa=pa, pb=pb), pa)
    with Raw(pa) as sub_a, Raw(pb) as sub_b, Raw(pb) as pub_b:
        assert sub_a.call("SUBSCRIBE", "shared") == [b"subscribe", b"shared", 1]
        assert sub_a.call("PSUBSCRIBE", "*") == [b"psubscribe", b"*", 2]
        assert sub_b.call("SUBSCRIBE", "shared") == [b"subscribe", b"shared", 1]
        # b's message reaches b's subscriber only; a's pattern does not see b's channels.
        assert pub_b.call("PUBLISH", "shared", "for-b") == 1
        assert sub_b.read() == [b"message", b"shared", b"for-b"]
        assert pub_b.call("PUBSUB", "CHANNELS") == [b"shared"]
        assert pub_b.call("PUBSUB", "NUMSUB", "shared") == [b"shared", 1]
        assert pub_b.call("PUBSUB", "NUMPAT") == 0
        sub_a.sock.settimeout(0.3)
        with pytest.raises((socket.timeout, TimeoutError)):
            sub_a.read()


def test_client_reply_off_skip_on(server):
    with Raw(server.port) as c, Raw(server.port) as pub:
        c.send(b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$3\r\nOFF\r\n")
        c.send(b"*3\r\n$3\r\nSET\r\n$2\r\nro\r\n$1\r\n1\r\n")
        c.send(b"*2\r\n$3\r\nGET\r\n$2\r\nro\r\n")
        c.send(b"*2\r\n$5\r\nBOGUS\r\n$1\r\nx\r\n")  # errors are dropped too
        # Subscription replies and messages still reach a client with replies off.
        assert c.call("SUBSCRIBE", "quiet") == [b"subscribe", b"quiet", 1]
        assert pub.call("PUBLISH", "quiet", "m") == 1
        assert c.read() == [b"message", b"quiet", b"m"]
        assert c.call("UNSUBSCRIBE") == [b"unsubscribe", b"quiet", 0]
        assert c.call("CLIENT", "REPLY", "ON") == "OK"
        # SKIP: no reply to it nor to the next command; the one after answers.
        c.send(b"*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$4\r\nSKIP\r\n")
        c.send(b"*2\r\n$3\r\nGET\r\n$2\r\nro\r\n")
        assert c.call("INCR", "ro") == 2
        assert c.call("CLIENT", "REPLY", "MAYBE") == "ERR syntax error"
        c.call("DEL", "ro")


def _events(c: Raw, n: int):
    return [c.read() for _ in range(n)]


def test_keyspace_notifications(start_server):
    srv = start_server()
    with Raw(srv.port) as c, Raw(srv.port) as sub:
        assert c.call("CONFIG", "SET", "notify-keyspace-events", "KEA") == "OK"
        assert c.call("CONFIG", "GET", "notify-keyspace-events") == [b"notify-keyspace-events", b"AKE"]
        assert sub.call("PSUBSCRIBE", "__key*__:*") == [b"psubscribe", b"__key*__:*", 1]
        c.call("SET", "foo", "bar", "EX", "100")
        c.call("INCR", "n")
        c.call("APPEND", "foo", "x")
        c.call("RENAME", "foo", "foo2")
        c.call("DEL", "foo2", "missing")
        c.call("EXPIRE", "n", "-1")  # a time in the past deletes: `del`
        got = [(m[2], m[3]) for m in _events(sub, 16)]
        assert got == [
            (b"__keyspace@0__:foo", b"set"), (b"__keyevent@0__:set", b"foo"),
            (b"__keyspace@0__:foo", b"expire"), (b"__keyevent@0__:expire", b"foo"),
            (b"__keyspace@0__:n", b"incrby"), (b"__keyevent@0__:incrby", b"n"),
            (b"__keyspace@0__:foo", b"append"), (b"__keyevent@0__:append", b"foo"),
            (b"__keyspace@0__:foo", b"rename_from"), (b"__keyevent@0__:rename_from", b"foo"),
            (b"__keyspace@0__:foo2", b"rename_to"), (b"__keyevent@0__:rename_to", b"foo2"),
            (b"__keyspace@0__:foo2", b"del"), (b"__keyevent@0__:del", b"foo2"),
            (b"__keyspace@0__:n", b"del"), (b"__keyevent@0__:del", b"n"),
        ]
        # Masks: only expired events, key-event channels only.
        assert c.call("CONFIG", "SET", "notify-keyspace-events", "Ex") == "OK"
        assert c.call("CONFIG", "GET", "notify-keyspace-events") == [b"notify-keyspace-events", b"xE"]
        c.call("SET", "short", "v", "PX", "50")
        time.sleep(0.3)
        assert c.call("GET", "short") is None
        assert sub.read()[2:] == [b"__keyevent@0__:expired", b"short"]
        assert c.call("CONFIG", "SET", "notify-keyspace-events", "Kw").startswith(
            "ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events')")
        assert c.call("CONFIG", "SET", "notify-keyspace-events", "") == "OK"


def test_evicted_keys_are_notified(start_server):
    srv = start_server(maxmemory=2 << 20, policy="allkeys-lru")
    with Raw(srv.port) as c, Raw(srv.port) as sub:
        assert c.call("CONFIG", "SET", "notify-keyspace-events", "Ee") == "OK"
        assert sub.call("SUBSCRIBE", "__keyevent@0__:evicted") == \
            [b"subscribe", b"__keyevent@0__:evicted", 1]
        for i in range(400):
            c.call("SET", f"big{i}", "x" * 10_000)
        ev = sub.read()
        assert ev[:2] == [b"message", b"__keyevent@0__:evicted"] and ev[2].startswith(b"big")
        assert c.call("CONFIG", "SET", "notify-keyspace-events", "") == "OK"


def test_new_key_events(start_server):
    srv = start_server()
    with Raw(srv.port) as c, Raw(srv.port) as sub:
        assert c.call("CONFIG", "SET", "notify-keyspace-events", "En") == "OK"
        assert sub.call("SUBSCRIBE", "__keyevent@0__:new") == [b"subscribe", b"__keyevent@0__:new", 1]
        c.call("SET", "foo", "bar")
        c.call("SET", "foo", "baz")  # not new
        c.call("MSET", "foo", "x", "bar", "y")  # only bar is new
        c.call("INCR", "n")
        assert [sub.read()[2] for _ in range(3)] == [b"foo", b"bar", b"n"]
        assert c.call("CONFIG", "SET", "notify-keyspace-events", "") == "OK"
