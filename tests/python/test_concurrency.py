"""Many clients at once: commands from concurrent connections are atomic and every client is served."""

import threading

from harness import Raw, encode


def test_concurrent_incr_is_atomic(server):
    threads, per_thread = 8, 400
    errors = []

    def worker():
        try:
            with Raw(server.port) as c:
                for _ in range(per_thread):
                    c.send(encode("INCR", "conc:counter"))
                for _ in range(per_thread):
                    reply = c.read()
                    if not isinstance(reply, int):
                        errors.append(reply)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    with Raw(server.port) as c:
        c.call("DEL", "conc:counter")
    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=60)
    assert not errors, errors[:5]
    with Raw(server.port) as c:
        assert c.call("GET", "conc:counter") == str(threads * per_thread).encode()
        c.call("DEL", "conc:counter")


def test_many_open_connections(server):
    conns = [Raw(server.port) for _ in range(200)]
    try:
        for i, c in enumerate(conns):
            c.send(b"*3\r\n$3\r\nSET\r\n$%d\r\nconn:%d\r\n$1\r\nv\r\n" % (len(b"conn:%d" % i), i))
        for c in conns:
            assert c.read() == "OK"
        clients = conns[0].call("INFO", "clients").decode()
        connected = int(next(l for l in clients.splitlines() if l.startswith("connected_clients:")).split(":")[1])
        assert connected >= 200
        assert conns[-1].call("DBSIZE") >= 200
    finally:
        for c in conns:
            c.close()
    with Raw(server.port) as c:
        assert c.call("DEL", *[f"conn:{i}" for i in range(200)]) == 200


def test_concurrent_writers_distinct_keys(server):
    errors = []

    def worker(t):
        try:
            with Raw(server.port) as c:
                payload = b"".join(
                    b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(k), k)
                    for k in (b"w%d:%d" % (t, i) for i in range(500)))
                c.send(payload)
                for _ in range(500):
                    if c.read() != "OK":
                        errors.append(t)
                for i in range(0, 500, 50):
                    k = b"w%d:%d" % (t, i)
                    if c.call("GET", k) != k:
                        errors.append((t, i))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(t,)) for t in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=60)
    assert not errors, errors[:5]
    with Raw(server.port) as c:
        assert c.call("DEL", *[f"w{t}:{i}" for t in range(6) for i in range(500)]) == 3000
