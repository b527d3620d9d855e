"""`server.threads` event loops (crates/locus-server/src/server/loops.rs): every connection lives on
one loop, and what one connection does to another reaches it wherever its loop is.

Each test opens more clients than there are loops (the default two; three in the Locus-only test),
so that some clients share a loop and others do not, and checks the behaviour for all of them:
a busy script answers BUSY to the clients of its own loop as to the others' (its loop is handed to
a fresh thread), pub/sub messages, a push that serves a blocked client, CLIENT KILL and SHUTDOWN
cross loops. The cross-loop tests run against redis-server too (`--peer redis`)."""

import os
import socket
import threading
import time

import pytest
import redis

import harness
from harness import HOST, free_port

CLIENTS = 6


def _clients(client_for, srv, n=CLIENTS):
    cs = [client_for(srv) for _ in range(n)]
    for c in cs:
        assert c.ping()  # connected now, in this order: the loops take them in turn
    return cs


def test_a_busy_script_answers_busy_on_every_loop(start_server, client_for):
    srv = start_server()
    a, *others = _clients(client_for, srv)
    others[0].config_set("busy-reply-threshold", "50")
    got = {}

    def run():
        try:
            a.eval("while true do end", 0)
        except redis.ResponseError as e:
            got["err"] = str(e)

    t = threading.Thread(target=run)
    t.start()
    try:
        busy = set()
        deadline = time.time() + 10
        while len(busy) < len(others):
            for i, c in enumerate(others):
                if i in busy:
                    continue
                try:
                    c.ping()
                except redis.ResponseError as e:
                    assert str(e).startswith("BUSY"), e
                    busy.add(i)
            assert time.time() < deadline, f"only clients {sorted(busy)} got BUSY"
            time.sleep(0.02)
    finally:
        assert others[-1].execute_command("SCRIPT", "KILL") in (True, "OK")
        t.join(10)
    assert not t.is_alive()
    assert "killed by user" in got["err"], got
    for c in [a, *others]:
        assert c.ping()


def test_pubsub_blocked_clients_and_kill_reach_every_loop(start_server, client_for):
    srv = start_server()
    subs = [client_for(srv).pubsub() for _ in range(CLIENTS)]
    for p in subs:
        p.subscribe("ch")
        assert p.get_message(timeout=5)["type"] == "subscribe"
    pub = client_for(srv)
    assert pub.publish("ch", "hello") == CLIENTS
    for p in subs:
        m = p.get_message(timeout=5)
        assert m and m["type"] == "message" and m["data"] == "hello", m
        p.close()

    # Clients blocked on one list each, served by a push from one other connection.
    blocked = _clients(client_for, srv)
    replies = [None] * CLIENTS

    def wait(i):
        replies[i] = blocked[i].blpop([f"list{i}"], timeout=10)

    ts = [threading.Thread(target=wait, args=(i,)) for i in range(CLIENTS)]
    for t in ts:
        t.start()
    deadline = time.time() + 10
    while pub.info("clients")["blocked_clients"] < CLIENTS:
        assert time.time() < deadline, pub.info("clients")
        time.sleep(0.01)
    for i in range(CLIENTS):
        assert pub.lpush(f"list{i}", f"v{i}") == 1
    for t in ts:
        t.join(10)
    assert [list(r) for r in replies] == [[f"list{i}", f"v{i}"] for i in range(CLIENTS)]

    # CLIENT KILL from one connection closes each of the others, wherever it is served (raw
    # sockets: redis-py would reconnect a closed connection on its next command).
    victims = [socket.create_connection((HOST, srv.port), timeout=10) for _ in range(CLIENTS)]
    ids = []
    for s in victims:
        s.sendall(b"CLIENT ID\r\n")
        reply = s.recv(64)
        assert reply.startswith(b":"), reply
        ids.append(int(reply[1:].strip()))
    for cid in ids:
        assert pub.client_kill_filter(_id=cid) == 1
    for s in victims:
        assert s.recv(64) == b""  # closed by the server
        s.close()
    # (Locus drops a client from CLIENT LIST when its task has ended, just after the close.)
    deadline = time.time() + 5
    while {int(c["id"]) for c in pub.client_list()} & set(ids):
        assert time.time() < deadline, pub.client_list()
        time.sleep(0.01)


@pytest.mark.locus_only
def test_three_loops_serve_and_shut_down(client_for):
    port = free_port()
    # Not the start_locus_toml fixture: this server is meant to stop.
    srv = harness.start_locus(f'[server]\nbind = "{HOST}"\nport = {port}\nthreads = 3\n', port)
    try:
        _serve_and_shut_down(srv, client_for)
    finally:
        srv.stop()


def _serve_and_shut_down(srv, client_for):
    names = set()
    for t in os.listdir(f"/proc/{srv.proc.pid}/task"):
        with open(f"/proc/{srv.proc.pid}/task/{t}/comm") as f:
            names.add(f.read().strip())
    assert {"locus-loop-0", "locus-loop-1", "locus-loop-2"} <= names, names
    assert not any(n.startswith("locus-worker") for n in names), names
    cs = _clients(client_for, srv, 9)
    for i, c in enumerate(cs):
        assert c.set(f"k{i}", i)
    for i, c in enumerate(cs):
        assert [int(v) for v in c.mget([f"k{j}" for j in range(9)])] == list(range(9))
    # SHUTDOWN from one loop stops the server with clients connected to all three.
    try:
        cs[4].shutdown(nosave=True)
    except redis.ConnectionError:
        pass
    deadline = time.time() + 10
    while srv.alive():
        assert time.time() < deadline, "SHUTDOWN did not stop the server"
        time.sleep(0.05)
    assert srv.proc.returncode == 0, srv.log_tail()
