"""pRedis's automatic dump/load in `locus serve` (`[[tenant]] dump_load`, README "Snapshots").

A dumped tenant's items go to `<snapshot dir>/<tenant>.locus-dump` and out of memory, so the other
tenants get its pages; they come back (values, TTLs) before its active window, never over keys
written or deleted meanwhile. Locus's own feature: every test is `locus_only`.
"""

from __future__ import annotations

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


def start(snap: Path, a_mode: str, extra: str = "", port: int | None = None) -> harness.ServerProcess:
    port = port or harness.free_port()
    return harness.start_locus(config(port, snap, a_mode, extra), port)


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
            # Loaded back 1.5 s before the idle window's end (at 7.5 s).
            wait_phase(12, 7.8, 8.5)
            s = dl(a)
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
                events.append((time.time() - t0, int(s["dumps"]), int(s["loads"]), s["state"]))
            dumps = [e for p, e in zip(events, events[1:]) if e[1] > p[1]]
            loads = [e for p, e in zip(events, events[1:]) if e[2] > p[2]]
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
            wait_phase(12, 7.8, 8.5)
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
