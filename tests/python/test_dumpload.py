"""pRedis's automatic dump/load in `locus serve` (`[[tenant]] dump_load`, docs/snapshots.md).

A dumped tenant's items go to `<snapshot dir>/<tenant>.locus-dump` and out of memory, so the other
tenants get its pages; they come back (values, TTLs) before its active window, never over keys
written or deleted meanwhile. Locus's own feature: every test is `locus_only`.
"""

from __future__ import annotations

import random
import socket
import tempfile
import time
from pathlib import Path

import pytest

import harness
from harness import Raw, encode

pytestmark = pytest.mark.locus_only

MIB = 1 << 20
VALUE = b"v" * 1000


def config(port: int, snap: Path, a_mode: str, extra: str = "", maxmemory: str = "16mb") -> str:
    return (
        f'[server]\nbind = "127.0.0.1"\nport = {port}\nhz = 20\n'
        f'[memory]\nmaxmemory = "{maxmemory}"\n'
        f'[snapshot]\ndir = "{snap}"\n'
        '[tenancy]\nmode = "user"\n[admin]\nuser = "root"\npassword = "rootpw"\n'
        f'[[tenant]]\nname = "a"\nuser = "alice"\npassword = "apw"\ndump_load = "{a_mode}"\n'
        '[[tenant]]\nname = "b"\nuser = "bob"\npassword = "bpw"\n' + extra
    )


def start(snap: Path, a_mode: str, extra: str = "", port: int | None = None,
          maxmemory: str = "16mb") -> harness.ServerProcess:
    port = port or harness.free_port()
    return harness.start_locus(config(port, snap, a_mode, extra, maxmemory), port)


def info(c: Raw, section: str) -> dict[str, str]:
    text = c.call("INFO", section)
    text = text.decode() if isinstance(text, bytes) else text
    return dict(line.split(":", 1) for line in text.split("\r\n") if ":" in line)


def fields(line: str) -> dict[str, str]:
    return dict(kv.split("=", 1) for kv in line.split(","))


def dl(c: Raw, tenant: str = "a") -> dict[str, str]:
    return fields(info(c, "dumpload")[f"dumpload_{tenant}"])


def tenant_items(c: Raw, tenant: str) -> int:
    return int(fields(info(c, "tenants")[f"tenant_{tenant}"])["items"])


def login(port: int, user: str, pw: str) -> Raw:
    c = Raw(port)
    assert c.call("AUTH", user, pw) == "OK"
    return c


def fill(c: Raw, prefix: str, n: int, ttl_every: int = 0) -> None:
    cmds = []
    for i in range(n):
        if ttl_every and i % ttl_every == 0:
            cmds.append(encode("SET", f"{prefix}{i}", VALUE + str(i).encode(), "EX", "1000"))
        else:
            cmds.append(encode("SET", f"{prefix}{i}", VALUE + str(i).encode()))
    for i in range(0, n, 2000):
        part = cmds[i:i + 2000]
        c.send(b"".join(part))
        for _ in part:
            assert c.read() == "OK"


def wait_phase(period: float, lo: float, hi: float) -> None:
    """Sleeps until the Unix time's offset into a `period`-second cycle is in [lo, hi)."""
    while True:
        off = time.time() % period
        if lo <= off < hi:
            return
        time.sleep(min(0.05, max(0.001, (lo - off) % period)))


def wait_loaded(c: Raw, loads0: int, tenant: str = "a", timeout: float = 10.0) -> dict[str, str]:
    """Polls INFO dumpload until `tenant`'s load after `loads0` loads has ended (a loaded
    machine may take a few tick steps more than the schedule's lead)."""
    end = time.time() + timeout
    while True:
        s = dl(c, tenant)
        if int(s["loads"]) > loads0 and s["state"] == "resident" or time.time() > end:
            return s
        time.sleep(0.05)


@pytest.fixture
def snap():
    return Path(tempfile.mkdtemp(prefix="locus-dl-"))


# A 12 s cycle: idle from 3 s to 9 s, loaded back 1.5 s before the idle window ends.
SCHEDULE = "every 12s idle 3s-9s lead 1500ms"


def test_schedule_dumps_frees_memory_for_the_other_tenant_and_loads_back(snap):
    srv = start(snap, SCHEDULE)
    try:
        port = srv.port
        with login(port, "alice", "apw") as a, login(port, "bob", "bpw") as b, \
                login(port, "root", "rootpw") as root:
            wait_phase(12, 0.0, 1.0)
            fill(a, "a", 9000, ttl_every=3)  # ~9 MiB, a third with a TTL
            ttl_before = a.call("TTL", "a0")
            assert 990 <= ttl_before <= 1000
            base = dl(a)
            assert base["state"] == "resident"
            dumps0, loads0 = int(base["dumps"]), int(base["loads"])
            # The idle window: everything dumped, memory gone from the tenant.
            wait_phase(12, 3.5, 4.0)
            s = dl(a)
            assert (s["state"], int(s["dumps"]), s["items_dumped"]) == ("dumped", dumps0 + 1, "9000"), s
            assert tenant_items(root, "a") == 0
            assert (snap / "a.locus-dump").exists()
            got = root.call("LOCUS.TENANT", "a", "GET", "dump_load*")
            assert dict(zip(got[::2], got[1::2])) == {
                b"dump_load": SCHEDULE.encode(), b"dump_load-state": b"dumped"}, got
            assert root.call("LOCUS.TENANT", "b", "GET", "dump_load") == [b"dump_load", b"never"]
            assert root.call("LOCUS.TENANT", "a", "SET", "dump_load", "never").startswith("ERR")
            assert a.call("GET", "a5") is None
            # While dumped: a1 rewritten, a2 deleted (not in memory: DEL finds nothing).
            assert a.call("SET", "a1", "new") == "OK"
            assert a.call("DEL", "a2") == 0
            # b gets the pages: 9 MiB more fit into 16 MiB without evicting anything.
            fill(b, "b", 9000)
            assert info(root, "stats")["evicted_keys"] == "0"
            assert tenant_items(root, "b") == 9000
            # b's busy time ends (its keys go) before a's comes back.
            assert b.call("FLUSHDB") == "OK"
            # Loaded back 1.5 s before the idle window's end (at 7.5 s): the file is read on a
            # thread, then restored 5,000 items per tick step.
            wait_phase(12, 7.5, 8.5)
            s = wait_loaded(a, loads0)
            assert (s["state"], int(s["loads"])) == ("resident", loads0 + 1), s
            assert s["items_loaded"] == "8998", s
            assert not (snap / "a.locus-dump").exists()
            assert a.call("GET", "a5") == VALUE + b"5"
            assert a.call("GET", "a8999") == VALUE + b"8999"
            assert a.call("GET", "a1") == b"new"
            assert a.call("GET", "a2") is None
            assert tenant_items(root, "a") == 8999
            ttl_after = a.call("TTL", "a0")
            assert ttl_before - 12 <= ttl_after <= ttl_before, (ttl_before, ttl_after)
            assert a.call("TTL", "a4") == -1
            # Tenants are a security boundary: b sees nothing of a's dump/load.
            assert "dumpload_a" not in info(b, "dumpload")
            assert b.call("LOCUS.TENANT", "a", "GET", "dump_load").startswith("NOPERM")
            assert info(b, "all").get("dumpload_a") is None
    finally:
        srv.stop()


def test_without_dump_load_the_other_tenant_evicts(snap):
    """The control of the test above: with `never`, b's 9 MiB do not fit beside a's."""
    srv = start(snap, "never")
    try:
        with login(srv.port, "alice", "apw") as a, login(srv.port, "bob", "bpw") as b, \
                login(srv.port, "root", "rootpw") as root:
            fill(a, "a", 9000)
            fill(b, "b", 9000)
            assert int(info(root, "stats")["evicted_keys"]) > 0
            assert "dumpload_a" not in info(root, "dumpload")
    finally:
        srv.stop()


def test_auto_dumps_the_quiet_tenant_and_loads_it_back_ahead_of_its_rise(snap):
    # 250 ms buckets; a 2 s window; loads 0.75 s ahead of a predicted rise.
    extra = ('[dump_load]\nbucket = "250ms"\nwindow = 8\nvalley_buckets = 2\n'
             'load_misses = 20\nlead = "750ms"\n')
    srv = start(snap, "auto", extra)
    try:
        with login(srv.port, "alice", "apw") as a:
            fill(a, "a", 2000)
            events = []  # (time, dumps, loads, items in memory)
            t0 = time.time()
            # Three cycles of 4 s: busy 2 s (GETs of all keys, refilling misses), quiet 2 s.
            while time.time() - t0 < 12.6:
                phase = (time.time() - t0) % 4
                if phase < 2:
                    cmds = [encode("GET", f"a{i}") for i in range(0, 2000, 10)]
                    a.send(b"".join(cmds))
                    for i, _ in zip(range(0, 2000, 10), cmds):
                        if a.read() is None:
                            a.call("SET", f"a{i}", VALUE + str(i).encode())
                else:
                    a.call("GET", "a0")
                    time.sleep(0.1)
                s = dl(a)
                # A dump takes a few tick steps (bounded slices) and a load's file is read on a
                # thread: the server's own times of the dump's start and the load's end say
                # where they fell, not when this client saw them.
                events.append((time.time() - t0, int(s["dumps"]), int(s["loads"]), s["state"],
                               int(s["last_dump_ms"]) / 1000 - t0,
                               int(s["last_load_ms"]) / 1000 - t0))
            dumps = [(e[4],) + e[1:4] for p, e in zip(events, events[1:]) if e[1] > p[1]]
            loads = [(e[5],) + e[1:4] for p, e in zip(events, events[1:]) if e[2] > p[2]]
            assert len(dumps) >= 2, events
            # Every dump in a quiet half (2..4 s into a cycle).
            for e in dumps:
                assert 2.0 <= e[0] % 4 < 4.0, (e, events)
            assert len(loads) >= 2, events
            # The last load came from the learned period: before the busy half began, so
            # the busy half found its items there.
            last = loads[-1]
            assert last[0] % 4 >= 2.0, (last, events)
            assert dl(a)["items_loaded"] != "0"
    finally:
        srv.stop()


def test_a_corrupt_dump_file_is_set_aside_and_the_server_carries_on(snap):
    srv = start(snap, SCHEDULE)
    try:
        with login(srv.port, "alice", "apw") as a:
            wait_phase(12, 0.0, 1.0)
            fill(a, "a", 500)
            loads0 = int(dl(a)["loads"])
            wait_phase(12, 3.5, 4.0)
            assert dl(a)["state"] == "dumped"
            path = snap / "a.locus-dump"
            data = bytearray(path.read_bytes())
            data[len(data) // 2] ^= 0x40
            path.write_bytes(bytes(data))
            assert a.call("SET", "fresh", "1") == "OK"
            wait_phase(12, 7.5, 8.5)
            end = time.time() + 10
            while dl(a)["state"] != "resident" and time.time() < end:
                time.sleep(0.05)
            s = dl(a)
            assert s["state"] == "resident" and int(s["loads"]) == loads0, s
            assert "is corrupt at byte" in s["last_error"], s
            assert not path.exists()
            aside = list(snap.glob("a.locus-dump.corrupt-*"))
            assert len(aside) == 1 and aside[0].read_bytes() == bytes(data)
            assert a.call("GET", "fresh") == b"1"
            assert a.call("GET", "a3") is None
            assert a.call("PING") == "PONG"
    finally:
        srv.stop()


@pytest.mark.parametrize("how", ["shutdown", "kill9"])
def test_a_restart_while_dumped_loses_nothing(snap, how):
    port = harness.free_port()
    srv = start(snap, SCHEDULE, port=port)
    try:
        with login(port, "alice", "apw") as a:
            wait_phase(12, 0.0, 1.0)
            fill(a, "a", 1000, ttl_every=2)
            wait_phase(12, 3.5, 4.0)
            assert dl(a)["state"] == "dumped"
            assert a.call("SET", "a1", "new") == "OK"
            if how == "shutdown":
                with login(port, "root", "rootpw") as root:
                    root.send(encode("SHUTDOWN"))
                srv.proc.wait(timeout=10)
            else:
                srv.proc.kill()
                srv.proc.wait(timeout=10)
    finally:
        srv.stop()
    # Restarted with dump/load off (a schedule would dump again in this idle window): the
    # start loads the file. After SHUTDOWN the dump went back into memory before the snapshot
    # (a1's new value honoured); after kill -9 the write made since the last save is lost, as
    # every write since a snapshot is, and the dump file brings the item back as it was.
    srv = start(snap, "never", port=port)
    try:
        with login(port, "alice", "apw") as a:
            assert a.call("GET", "a0") == VALUE + b"0"
            assert a.call("GET", "a999") == VALUE + b"999"
            assert a.call("GET", "a1") == (b"new" if how == "shutdown" else VALUE + b"1")
            assert 980 <= a.call("TTL", "a0") <= 1000
            assert a.call("TTL", "a3") == -1
            assert a.call("DBSIZE") == 1000
            assert not (snap / "a.locus-dump").exists()
    finally:
        srv.stop()


def test_a_dump_runs_in_bounded_steps_and_writes_made_meanwhile_win(snap):
    """The dump walks, writes and deletes at most DUMP_SLICE (5,000) items per tick step, so the
    other tenants never wait for the whole tenant; writes made while it runs (visible as state
    `dumping`) are neither undone by the dump's deletes nor by the load."""
    srv = start(snap, SCHEDULE, maxmemory="64mb")
    try:
        with login(srv.port, "alice", "apw") as a, login(srv.port, "root", "rootpw") as root:
            wait_phase(12, 0.0, 1.0)
            n = 20000
            fill(a, "a", n)
            loads0 = int(dl(a)["loads"])
            order = list(range(n))
            random.Random(7).shuffle(order)
            written, deleted, states = set(), set(), set()
            wait_phase(12, 2.9, 3.0)
            for j, i in enumerate(order):
                if j % 2:
                    assert a.call("SET", f"a{i}", f"new{i}") == "OK"
                    written.add(i)
                else:
                    a.call("DEL", f"a{i}")
                    deleted.add(i)
                if j % 25 == 0:
                    states.add(dl(a)["state"])
                    if "dumped" in states:
                        break
            # On a loaded machine the dump may still be under way (its file's thread behind):
            # its figures are read once it is done, before the idle window ends.
            end = time.time() + 5
            while dl(a)["state"] == "dumping" and time.time() < end:
                time.sleep(0.05)
            s = dl(a)
            assert "dumping" in states, states  # seen mid-dump: it took more than one step
            assert int(s["dump_steps"]) >= 2 * (n // 5000) - 2, s  # walk+write, then delete
            assert 0 < int(s["dump_step_items_max"]) <= 5000, s
            assert int(s["items_dumped"]) <= n, s
            wait_phase(12, 7.5, 8.5)
            s = wait_loaded(a, loads0)
            assert s["state"] == "resident" and int(s["loads"]) == loads0 + 1, s
            got = {}
            for i0 in range(0, n, 2000):
                keys = [f"a{i}" for i in range(i0, min(n, i0 + 2000))]
                got.update(zip(range(i0, i0 + len(keys)), a.call("MGET", *keys)))
            for i, v in got.items():
                if i in written:
                    assert v == f"new{i}".encode(), (i, v)
                elif i in deleted:
                    assert v is None, (i, v)
                else:
                    assert v == VALUE + str(i).encode(), (i, v)
            assert a.call("DBSIZE") == n - len(deleted)
            assert tenant_items(root, "a") == n - len(deleted)
            # Issue 23: no file I/O under the engine lock, for the dump and load just made and
            # for SAVE and BGSAVE (each write checks; a release build counts what it finds).
            assert root.call("SAVE") == "OK"
            assert root.call("BGSAVE") == "Background saving started"
            end = time.time() + 30
            while info(root, "persistence")["rdb_bgsave_in_progress"] != "0":
                assert time.time() < end, "BGSAVE did not end"
                time.sleep(0.05)
            assert info(root, "locus")["io_under_lock"] == "0"
    finally:
        srv.stop()


def locus_info(c: Raw) -> dict[str, dict[str, str]]:
    """INFO locus's `pool_<tenant>` lines as dicts."""
    return {k[len("pool_"):]: fields(v) for k, v in info(c, "locus").items()
            if k.startswith("pool_")}


def test_a_partitioning_controllers_target_for_a_dumped_tenant_goes_to_the_others(snap):
    """Under a partitioning controller (`static`, shares 1:1) the dumped tenant's target drops
    to the pages its resident items need and the other tenant's rises by as much, so it grows
    past its old share without evicting; the load gives both their targets back."""
    port = harness.free_port()
    cfg = (f'[server]\nbind = "127.0.0.1"\nport = {port}\nhz = 20\n'
           '[memory]\nmaxmemory = "16mb"\npage_size = "64KiB"\n'
           f'[snapshot]\ndir = "{snap}"\n'
           '[tenancy]\nmode = "user"\n[admin]\nuser = "root"\npassword = "rootpw"\n'
           '[controller]\nname = "static"\ninterval = "200ms"\n'
           '[controller.settings]\nshares = [1, 1]\n'
           f'[[tenant]]\nname = "a"\nuser = "alice"\npassword = "apw"\ndump_load = "{SCHEDULE}"\n'
           '[[tenant]]\nname = "b"\nuser = "bob"\npassword = "bpw"\n')
    srv = harness.start_locus(cfg, port)
    try:
        with login(port, "alice", "apw") as a, login(port, "bob", "bpw") as b, \
                login(port, "root", "rootpw") as root:
            wait_phase(12, 0.0, 1.0)
            fill(a, "a", 3000)
            loads0 = int(dl(a)["loads"])
            time.sleep(0.5)
            before = locus_info(root)
            ta, tb = int(before["a"]["target"]), int(before["b"]["target"])
            assert abs(ta - tb) <= 1 and ta > 100, before
            wait_phase(12, 3.5, 4.0)
            assert dl(a)["state"] == "dumped"
            during = locus_info(root)
            da, db = int(during["a"]["target"]), int(during["b"]["target"])
            assert da <= 2 and db == tb + ta - da, (before, during)
            # b grows past its old share (tb pages, 8 MiB) without evicting: 11 MiB.
            fill(b, "b", 10000)
            time.sleep(0.5)
            during = locus_info(root)
            assert int(during["b"]["pages"]) > tb, during
            assert int(during["b"]["target"]) == db, during
            assert info(root, "stats")["evicted_keys"] == "0"
            assert tenant_items(root, "b") == 10000
            # Loaded back: both targets as before the dump; a's items back (b gives pages).
            wait_phase(12, 7.5, 8.5)
            s = wait_loaded(a, loads0)
            assert s["state"] == "resident" and s["items_loaded"] == "3000", s
            time.sleep(0.5)
            after = locus_info(root)
            assert int(after["a"]["target"]) == ta and int(after["b"]["target"]) == tb, after
            assert tenant_items(root, "a") == 3000
    finally:
        srv.stop()


def test_memcached_writes_of_a_dumped_tenant_are_not_undone_by_its_load(snap):
    """A memcached `delete`, `set` (text and meta) of a dumped key supersedes the dump's copy,
    as RESP's writes do: the load does not bring the old item back."""
    from pymemcache.client.base import Client

    port, mc_port, a_port = harness.free_ports(3)
    cfg = (f'[server]\nbind = "127.0.0.1"\nport = {port}\nhz = 20\n'
           f'[memory]\nmaxmemory = "16mb"\n[snapshot]\ndir = "{snap}"\n'
           '[tenancy]\nmode = "port"\ndefault_tenant = "a"\n[admin]\nuser = "root"\npassword = "rootpw"\n'
           f'[[tenant]]\nname = "a"\nport = {a_port}\nmemcached_port = {mc_port}\n'
           f'dump_load = "{SCHEDULE}"\n')
    srv = harness.start_locus(cfg, port, {"memcached": mc_port})
    mc = Client(("127.0.0.1", mc_port), timeout=5)
    try:
        with login(port, "root", "rootpw") as root:
            wait_phase(12, 0.0, 1.0)
            for i in range(0, 2000, 500):
                assert mc.set_many({f"k{j}": f"v{j}" for j in range(i, i + 500)}) == []
            loads0 = int(fields(info(root, "dumpload")["dumpload_a"])["loads"])
            wait_phase(12, 3.5, 4.0)
            assert fields(info(root, "dumpload")["dumpload_a"])["state"] == "dumped"
            assert mc.get("k5") is None
            assert mc.delete("k1", noreply=False) is False  # not in memory: NOT_FOUND
            assert mc.set("k2", "new", noreply=False) is True
            assert mc.get("k2") == b"new"
            raw = socket.create_connection(("127.0.0.1", mc_port), timeout=5)
            raw.sendall(b"ms k3 3\r\nnew\r\nmd k4\r\nmn\r\n")
            reply = b""
            while not reply.endswith(b"MN\r\n"):
                reply += raw.recv(4096)
            assert reply == b"HD\r\nNF\r\nMN\r\n", reply
            raw.close()
            assert mc.touch("k6", 1000, noreply=False) is False
            wait_phase(12, 7.5, 8.5)
            s = wait_loaded(root, loads0)
            assert s["state"] == "resident" and int(s["loads"]) == loads0 + 1, s
            assert mc.get("k1") is None
            assert mc.get("k2") == b"new"
            assert mc.get("k3") == b"new"
            assert mc.get("k4") is None
            assert mc.get("k6") is None
            assert mc.get("k5") == b"v5" and mc.get("k1999") == b"v1999"
    finally:
        mc.close()
        srv.stop()
