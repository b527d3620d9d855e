#!/usr/bin/env python3
"""Soak and fault test of the real `locus` binary (issue #11): several tenants, a small
`maxmemory`, a memory controller deciding every few seconds, and for `--duration` seconds a mixed
load from several processes, with faults, while a checker verifies every value read and the memory
budget is sampled every second.

What runs (all on 127.0.0.1, every loop bounded by the deadline):

* `workers` processes: SET (some with PX), GET, DEL, INCR, APPEND, singly and in pipelines, on
  seven of the eight tenants (a to f under six eviction policies, and keep; slow is the slow
  reader's). Each key is owned by one process, which keeps a model of what the key may hold, so
  every read is checked exactly.
* one chaos process: connects, writes a pipeline cut anywhere (or reads only some replies) and
  closes (plain close or RST); waits until the server has dropped that connection (`CLIENT LIST
  ID`) and reads its keys back: each must hold a state that the pipeline's writes lead to, each
  write, in order, applied or not (a cut pipeline runs a prefix; a write in it may meet OOM).
* one slow reader (tenant `slow`): pipelines hundreds of GETs of 48-64 KiB values and reads the
  replies a few KiB at a time; now and then closes with most replies unread.
* one hostile process (tenant `hostile`, capped at 8 MiB; `--hostile 0` leaves it out), doing the
  floods of issue #27 at a smaller scale, in turn: connections each sending megabytes of a
  declared 500 MB bulk; connections sending `*1000000` and hundreds of KiB of one-byte
  arguments; a MULTI queuing SETs without EXEC. Its half-sent requests are charged to its own
  budget, so the server closes the connections past it (a round in which none was closed, or
  in which the queued SETs were never refused, is a failure: `hostile`), while every other
  check above runs on the other tenants.
* in this process: a control thread (`LOCUS.CONTROLLER RUN`, switching between kredis and mpart,
  `LOCUS.TENANT <t> SET maxmemory-policy|maxmemory-samples|maxmemory`, `CONFIG SET
  maxmemory-policy|maxmemory-samples`), and a sampler (INFO and /proc/<pid>/status every second).

The checker. Values are self-describing segments `<tenant|key|version|size|payload|crc32>` (APPEND
adds one); the owner knows which values a key may hold (one after an acknowledged write; several
when a reply was lost with its connection), so a read must be exactly one of them or a miss
(eviction and expiry are allowed). A failure is classified: `corrupt` (bytes that are no value we
wrote), `cross-tenant` (another tenant's value), `wrong-key`, `stale` (an older version after a
newer acknowledged write: a cache may lose a key, never bring back an old value), `expired` (a key
served after its TTL), `counter` (INCR not +1 from a possible value), `append` (APPEND's length),
`resurrected` (DEL removed a key that could not exist), `lost` (a miss of an acknowledged key in
tenant `keep`, noeviction with about 1 MiB of data under an 8 MiB floor, while its policy stayed
noeviction; also its evictions counter above 0 at the end), `error` (an error reply that is
not expected: OOM is expected only while the tenant's policy may be noeviction or volatile-*),
`timeout`, `disconnect`, `hostile` (see above), `budget` (used_memory > maxmemory), `crash`. `--self-test` injects a
corrupted value, another tenant's value, a stale version and a lost key behind the owners' backs
and passes only if the checker reports all four.

The budget: `used_memory <= maxmemory` is checked every second (a failure); RSS (VmRSS) is compared
with 1.15 x maxmemory + 64 MiB every second too: above it, the run fails (`rss`).

Output (`--out`, default target/soak): soak.csv (one row per second: RSS, used_memory, ops/s, p99
of single GET/SET round trips, evictions, per-tenant bytes), soak.png (matplotlib, if installed),
summary.json, failures.txt, locus.log. Exit status 0 only if nothing failed (self-test: only if
every injected fault was reported, on the key it was injected into).

    cargo build --release --bin locus
    LOCUS_BIN=target/release/locus python3 tests/soak/soak.py --duration 180
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing as mp
import queue
import random
import re
import shutil
import socket
import struct
import sys
import threading
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
import harness  # noqa: E402  (tests/python/harness.py: server process, RESP client, free ports)
from harness import Closed, Raw, RespError, encode  # noqa: E402

MiB = 1024 * 1024
RSS_FACTOR = 1.15
RSS_SLACK = 64 * MiB
REPLY_TIMEOUT_S = 10.0
# Eight tenants in all (issue 23: the soak runs 8 tenants under concurrent load): six evicting
# ones under different policies, `keep` (noeviction) and `slow` (the slow reader's).
EVICTING_TENANTS = ("a", "b", "c", "d", "e", "f")
# The admin (controller, other tenants' settings, INFO of every tenant); tenants cannot do these.
ADMIN_USER, ADMIN_PASSWORD = "root", "soak-admin"
REFUSING = ("noeviction", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl")
POLICIES_C = ("allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru", "volatile-ttl",
              "noeviction")
# Initial policy of each tenant (the config below); the control thread changes them.
INITIAL_POLICY = {"a": "allkeys-lru", "b": "allkeys-lfu", "c": "volatile-lru",
                  "d": "allkeys-random", "e": "allkeys-lru", "f": "volatile-ttl",
                  "keep": "noeviction", "slow": "allkeys-lru", "hostile": "allkeys-lru"}
# The hostile tenant's own cap: what its floods may hold at most.
HOSTILE_CAP = 8 * MiB
TENANTS = tuple(INITIAL_POLICY)


# ============================================================================== values


def segment(tenant: str, key: str, ver: int, size: int) -> bytes:
    """One self-describing value segment: `<tenant|key|version|size|payload|crc32>`."""
    head = f"<{tenant}|{key}|{ver}|{size}|".encode()
    d = hashlib.blake2b(head, digest_size=16).hexdigest().encode()
    body = (d * (size // len(d) + 1))[:size]
    return head + body + b"|%08x>" % zlib.crc32(head + body)


def render(tenant: str, key: str, spec: tuple) -> bytes:
    """A value from its spec: a tuple of (version, size) segments."""
    return b"".join(segment(tenant, key, v, s) for v, s in spec)


def seg_len(tenant: str, key: str, ver: int, size: int) -> int:
    """len(segment(tenant, key, ver, size)) without building it."""
    return len(f"<{tenant}|{key}|{ver}|{size}|") + size + 10


def spec_len(tenant: str, key: str, spec: tuple) -> int:
    return sum(seg_len(tenant, key, v, s) for v, s in spec)


SEG_RE = re.compile(rb"<([^|<>]*)\|([^|<>]*)\|(\d+)\|(\d+)\|([0-9a-f]*)\|([0-9a-f]{8})>")


def parse_segments(value: bytes):
    """[(tenant, key, version, size, valid)] if `value` is entirely segments, else None."""
    out, pos = [], 0
    while pos < len(value):
        m = SEG_RE.match(value, pos)
        if not m:
            return None
        t, k, v, s = m.group(1).decode(errors="replace"), m.group(2).decode(errors="replace"), \
            int(m.group(3)), int(m.group(4))
        valid = segment(t, k, v, s) == m.group(0)
        out.append((t, k, v, s, valid))
        pos = m.end()
    return out


def classify(tenant: str, key: str, value: bytes, acceptable: list, newest: int) -> tuple[str, str]:
    """Why `value` is not one of the `acceptable` specs: (kind, detail)."""
    segs = parse_segments(value)
    if not segs or not all(s[4] for s in segs):
        return "corrupt", f"{len(value)} bytes that are no value written: {value[:120]!r}"
    if any(s[0] != tenant for s in segs):
        return "cross-tenant", f"segments of tenant(s) {sorted({s[0] for s in segs})}: {value[:120]!r}"
    if any(s[1] != key for s in segs):
        return "wrong-key", f"segments of key(s) {sorted({s[1] for s in segs})}"
    vers = [s[2] for s in segs]
    want = [[v for v, _ in spec] for spec, _ in acceptable]
    if max(vers) < newest:
        return "stale", f"versions {vers} after version {newest} was acknowledged (acceptable {want})"
    return "unexpected-version", f"versions {vers}, acceptable {want}"


# ============================================================================== key model


@dataclass
class Key:
    """What one key may hold now. `acc`: acceptable values, as (spec, expiry deadline or None) for
    strings or ints for counters; a miss is always acceptable (eviction), so an empty list means
    "only a miss"."""

    name: str
    counter: bool = False
    acc: list = field(default_factory=list)
    newest: int = 0  # newest version whose write was acknowledged
    acked_at: float = 0.0  # when the last write was acknowledged (the `keep` loss check)


def live(acc: list, t: float, slack: float) -> list:
    """Entries that may still exist at time t (expired ones past the slack may not)."""
    return [(s, d) for s, d in acc if d is None or t <= d + slack]


def apply_op(k: Key, op: tuple, t: float) -> list:
    """The acceptable list after `op` applied on every acceptable state (a write whose reply was
    lost, or that any prefix of a cut pipeline contains)."""
    kind = op[0]
    if k.counter:
        if kind == "incr":
            return sorted(set([1] + [v + 1 for v in k.acc]))
        if kind == "del":
            return []
        return list(k.acc)
    if kind == "set":
        _, spec, px = op
        # Applied at some time before the caller learns the outcome: a generous deadline.
        return [(spec, None if px is None else t + px / 1000.0 + 10.0)]
    if kind == "append":
        _, seg = op
        return [((seg,), None)] + [(s + (seg,), d) for s, d in k.acc]
    if kind == "del":
        return []
    return list(k.acc)


# ============================================================================== connections


class SlowRaw(Raw):
    """A Raw client that reads `chunk` bytes at a time and sleeps `delay` between reads."""

    def __init__(self, port, chunk=4096, delay=0.002, timeout=REPLY_TIMEOUT_S):
        super().__init__(port, timeout=timeout)
        self.chunk, self.delay = chunk, delay
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)

    def _fill(self):
        time.sleep(self.delay)
        chunk = self.sock.recv(self.chunk)
        if not chunk:
            raise Closed()
        self.buf += chunk


def close_hard(conn: Raw):
    """Close with RST (SO_LINGER 0): unread replies and unsent requests are dropped."""
    try:
        conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    conn.close()


# ============================================================================== worker base


class Worker:
    """State shared by every load process: its connections, its model, its per-second stats."""

    def __init__(self, wid, args, ports, q, t0, deadline, stop):
        self.wid, self.args, self.ports, self.q = wid, args, ports, q
        self.t0, self.deadline, self.stop = t0, deadline, stop
        self.rng = random.Random(args.seed * 1000 + wid)
        self.conns: dict[str, Raw] = {}
        self.keys: dict[tuple[str, str], Key] = {}
        self.ver = 0
        self.sec = -1
        self.bucket = None
        self.ooms: list = []
        self.counts = {"ops": 0, "hits": 0, "misses": 0, "ooms": 0, "failures": 0}
        self.slack = args.expiry_slack_ms / 1000.0

    # ------------------------------------------------------------------ plumbing

    def conn(self, tenant: str) -> Raw:
        c = self.conns.get(tenant)
        if c is None:
            c = Raw(self.ports[tenant], timeout=REPLY_TIMEOUT_S)
            self.conns[tenant] = c
        return c

    def drop(self, tenant: str):
        c = self.conns.pop(tenant, None)
        if c:
            c.close()

    def fail(self, kind: str, detail: str):
        self.counts["failures"] += 1
        if self.counts["failures"] <= 200:
            self.q.put(("fail", self.wid, kind, detail, time.time() - self.t0))

    def tick(self, ops=0, get_lat=None, set_lat=None):
        now = time.time()
        s = int(now - self.t0)
        if s != self.sec:
            self.flush()
            self.sec = s
            self.bucket = {"ops": 0, "get": [], "set": [], "hits": 0, "misses": 0}
        self.bucket["ops"] += ops
        self.counts["ops"] += ops
        if get_lat is not None:
            self.bucket["get"].append(get_lat)
        if set_lat is not None:
            self.bucket["set"].append(set_lat)

    def flush(self):
        if self.bucket is not None and self.sec >= 0:
            self.q.put(("stats", self.wid, self.sec, self.bucket, self.ooms))
            self.ooms = []
        self.bucket = None

    def running(self) -> bool:
        return time.time() < self.deadline and not self.stop.is_set()

    def next_ver(self) -> int:
        self.ver += 1
        return self.ver

    def key(self, tenant: str, name: str, counter=False) -> Key:
        k = self.keys.get((tenant, name))
        if k is None:
            k = self.keys[(tenant, name)] = Key(name, counter)
        return k

    # ------------------------------------------------------------------ one operation

    def request(self, tenant: str, k: Key, kind: str):
        """(request bytes, op) for one operation on `k`; op drives the model and the check."""
        if kind == "get":
            return encode("GET", k.name), ("get",)
        if kind == "del":
            return encode("DEL", k.name), ("del",)
        if kind == "incr":
            return encode("INCR", k.name), ("incr",)
        if kind == "append":
            seg = (self.next_ver(), self.rng.randint(16, 200))
            return encode("APPEND", k.name, segment(tenant, k.name, *seg)), ("append", seg)
        size = self.value_size()
        spec = ((self.next_ver(), size),)
        px = None
        if self.rng.random() < (0.3 if tenant == "c" else 0.1) and tenant != "keep":
            px = self.rng.randint(200, 4000)
        args = ["SET", k.name, render(tenant, k.name, spec)] + (["PX", px] if px else [])
        return encode(*args), ("set", spec, px)

    def value_size(self) -> int:
        r = self.rng.random()
        if r < 0.70:
            return self.rng.randint(40, 400)
        if r < 0.95:
            return self.rng.randint(400, 4000)
        return self.rng.randint(4000, 16000)

    def check_reply(self, tenant: str, k: Key, op: tuple, reply, t_send: float, t_recv: float):
        """Checks one reply against the model and updates the model."""
        kind = op[0]
        if isinstance(reply, RespError):
            if reply.startswith("OOM ") and kind in ("set", "incr", "append"):
                self.counts["ooms"] += 1
                self.ooms.append((tenant, t_send - self.t0, t_recv - self.t0))
                return
            self.fail("error", f"tenant {tenant} {kind} {k.name}: {reply}")
            return
        if kind == "get":
            self.check_value(tenant, k, reply, t_send)
        elif kind == "set":
            if reply != "OK":
                self.fail("error", f"tenant {tenant} SET {k.name}: {reply!r}")
                return
            _, spec, px = op
            k.acc = [(spec, None if px is None else t_recv + px / 1000.0)]
            k.newest, k.acked_at = spec[-1][0], t_recv
        elif kind == "del":
            could_exist = bool(k.acc) if k.counter else bool(live(k.acc, t_send, self.slack))
            if reply == 1 and not could_exist:
                self.fail("resurrected", f"tenant {tenant} DEL {k.name} removed a key that could not exist")
            k.acc = []
            k.acked_at = t_recv
        elif kind == "incr":
            if not isinstance(reply, int) or (reply != 1 and reply - 1 not in k.acc):
                self.fail("counter", f"tenant {tenant} INCR {k.name} = {reply!r}, possible before {k.acc}")
            k.acc = [reply] if isinstance(reply, int) else []
            k.acked_at = t_recv
        elif kind == "append":
            seg = op[1]
            n = seg_len(tenant, k.name, *seg)
            cands = [((seg,), None)] if reply == n else []
            for s, d in live(k.acc, t_send, self.slack):
                if spec_len(tenant, k.name, s) + n == reply:
                    cands.append((s + (seg,), d))
            if not cands:
                self.fail("append", f"tenant {tenant} APPEND {k.name} -> length {reply!r}, "
                                    f"possible {[spec_len(tenant, k.name, s) for s, _ in k.acc]} + {n}")
            k.acc = cands
            k.newest, k.acked_at = seg[0], t_recv

    def check_value(self, tenant: str, k: Key, value, t_send: float):
        if value is None:
            self.counts["misses"] += 1
            if self.bucket:
                self.bucket["misses"] += 1
            if tenant == "keep" and k.acc and (k.counter or all(d is None for _, d in k.acc)):
                self.q.put(("keep-miss", self.wid, k.name, k.acked_at - self.t0, t_send - self.t0))
            k.acc = []  # absent now: an old value that comes back later is a failure
            return
        self.counts["hits"] += 1
        if self.bucket:
            self.bucket["hits"] += 1
        if k.counter:
            try:
                n = int(value)
            except ValueError:
                n = None
            if n not in k.acc:
                self.fail("counter", f"tenant {tenant} GET {k.name} = {value[:60]!r}, possible {k.acc}")
            else:
                k.acc = [n]
            return
        acceptable = live(k.acc, t_send, self.slack)
        for spec, d in acceptable:
            if render(tenant, k.name, spec) == value:
                k.acc = [(spec, d)]
                return
        expired = [(s, d) for s, d in k.acc if (s, d) not in acceptable]
        for spec, d in expired:
            if render(tenant, k.name, spec) == value:
                self.fail("expired", f"tenant {tenant} GET {k.name} served {(t_send - d) * 1000:.0f} ms "
                                     f"after its TTL ran out")
                return
        kind, detail = classify(tenant, k.name, value, acceptable, k.newest)
        self.fail(kind, f"tenant {tenant} GET {k.name}: {detail}")

    def roundtrip(self, tenant: str, items: list, latency: str | None = None) -> bool:
        """Sends [(Key, kind)] as one pipeline on `tenant`'s connection and checks every reply.
        False if the connection broke (a failure unless the caller expects it)."""
        reqs = [self.request(tenant, k, kind) for k, kind in items]
        try:
            c = self.conn(tenant)
            t_send = time.time()
            c.send(b"".join(r for r, _ in reqs))
            replies = []
            for _ in reqs:
                replies.append(c.read())
            t_recv = time.time()
        except (OSError, Closed) as e:
            self.drop(tenant)
            what = "timeout" if isinstance(e, socket.timeout) else "disconnect"
            self.fail(what, f"tenant {tenant}: {type(e).__name__} {e} during a pipeline of {len(reqs)}")
            # The model no longer knows: every op may or may not have happened.
            for (k, _), (_, op) in zip(items, reqs):
                if op[0] != "get":
                    k.acc = k.acc + [x for x in apply_op(k, op, time.time()) if x not in k.acc]
            return False
        for (k, _), (_, op), reply in zip(items, reqs, replies):
            self.check_reply(tenant, k, op, reply, t_send, t_recv)
        lat = (t_recv - t_send) * 1000.0
        self.tick(len(reqs), get_lat=lat if latency == "get" else None,
                  set_lat=lat if latency == "set" else None)
        return True

    def done(self):
        self.flush()
        for t in list(self.conns):
            self.drop(t)
        self.q.put(("done", self.wid, self.counts))


# ============================================================================== load worker


class LoadWorker(Worker):
    """Mixed load on tenants a, b, c (and a little on keep) on keys it owns."""

    def pick(self, tenant: str, counter=False) -> Key:
        if counter:
            return self.key(tenant, f"w{self.wid}:n{self.rng.randrange(self.args.counters)}", True)
        n = self.args.keep_keys if tenant == "keep" else self.args.keys
        i = int(n * self.rng.random() ** 3)  # skewed: a hot head and a long tail
        return self.key(tenant, f"w{self.wid}:k{i}")

    def one(self, tenant: str):
        r = self.rng.random()
        if r < 0.60:
            kind = "get"
        elif r < 0.85:
            kind = "set"
        elif r < 0.90:
            kind = "incr"
        elif r < 0.95:
            kind = "append"
        else:
            kind = "del"
        k = self.pick(tenant, counter=(kind == "incr" or (kind == "get" and self.rng.random() < 0.05)))
        if kind == "append" and (k.counter or any(len(s) >= 6 for s, _ in k.acc)):
            kind = "set"
        if k.counter and kind not in ("incr", "get", "del"):
            kind = "incr"
        return k, kind

    def run(self):
        injected_at = self.t0 + self.args.inject_after if self.args.self_test and self.wid == 0 else None
        while self.running():
            tenant = "keep" if self.rng.random() < 0.1 else self.rng.choice(EVICTING_TENANTS)
            r = self.rng.random()
            if r < 0.35:
                items = [self.one(tenant) for _ in range(self.rng.randint(10, 60))]
                self.roundtrip(tenant, items)
            elif r < 0.65:
                self.roundtrip(tenant, [(self.pick(tenant), "get")], latency="get")
            elif r < 0.85:
                self.roundtrip(tenant, [(self.pick(tenant), "set")], latency="set")
            else:
                self.roundtrip(tenant, [self.one(tenant)])
            if injected_at and time.time() >= injected_at:
                self.inject()
                injected_at = None
        self.done()

    # ------------------------------------------------------------------ self-test

    def inject(self):
        """Self-test: writes behind the model's back that the checker must report: a corrupted
        value, another tenant's value, an older version, and a key of `keep` deleted (lost)."""
        for name, forge in [
            ("corrupt", lambda k, old, new: new[:30] + bytes([new[30] ^ 0x01]) + new[31:]),
            ("cross-tenant", lambda k, old, new: render("b", k.name, k.acc[0][0])),
            ("stale", lambda k, old, new: old),
        ]:
            # An attempt is lost when the key is evicted before it is read back or a write meets
            # OOM (a refusing policy in force: CI once saw all of 20 back-to-back attempts land in
            # one such window), so attempts are spread over up to 3 s. And they alternate between
            # an evicting tenant and `keep` (noeviction, with memory of its own): CI once saw
            # all 60 attempts on tenant `a` miss the key before reading it back (the build before
            # this change failed 1 self-test in 3 locally the same way).
            for attempt in range(60):
                t = ("a", "keep")[attempt % 2]
                k = self.key(t, f"w{self.wid}:selftest")
                self.roundtrip(t, [(k, "set")])
                old = render(t, k.name, k.acc[0][0]) if k.acc else None
                self.roundtrip(t, [(k, "set")])
                if k.acc and old is not None:
                    new = render(t, k.name, k.acc[0][0])
                    bad = forge(k, old, new)
                    before = self.counts["failures"]
                    self.conn(t).call("SET", k.name, bad)  # the model is not told
                    self.roundtrip(t, [(k, "get")])
                    if self.counts["failures"] > before:
                        self.q.put(("injected", self.wid, name))
                        break
                time.sleep(0.05)
            self.roundtrip(t, [(k, "set")])  # back to a value the model knows
        # A loss is judged at the end against the policy history: a miss while a CONFIG SET of
        # every tenant's policy may have been in force is excused, so one injection can land in
        # such a window (CI saw it once). Three, half a second apart, cannot all.
        for i in range(3):
            k = self.key("keep", f"w{self.wid}:selftest{i}")
            self.roundtrip("keep", [(k, "set")])
            self.conn("keep").call("DEL", k.name)  # the model is not told: the next miss is a loss
            self.roundtrip("keep", [(k, "get")])
            time.sleep(0.5)
        self.q.put(("injected", self.wid, "lost"))


# ============================================================================== chaos worker


class ChaosWorker(Worker):
    """Connects, writes a pipeline cut anywhere or reads only part of the replies, disconnects;
    then waits for the server to drop the connection and checks the keys it touched."""

    def run(self):
        rounds = 0
        while self.running():
            tenant = self.rng.choice(EVICTING_TENANTS)
            self.round(tenant)
            rounds += 1
        self.counts["rounds"] = rounds
        self.done()

    def reaped(self, tenant: str, cid: int) -> bool:
        """Polls `CLIENT LIST ID cid` until the server no longer lists that connection."""
        end = time.time() + 5.0
        while time.time() < end:
            text = self.conn(tenant).call("CLIENT", "LIST", "ID", cid)
            if isinstance(text, RespError):
                self.fail("error", f"CLIENT LIST ID: {text}")
                return False
            if f"id={cid} ".encode() not in (text or b""):
                return True
            time.sleep(0.005)
        self.fail("disconnect", f"tenant {tenant}: connection {cid} still listed 5 s after the client closed it")
        return False

    def round(self, tenant: str):
        n = self.rng.randint(3, 40)
        names = [self.key(tenant, f"x{self.wid}:{self.rng.randrange(self.args.chaos_keys)}") for _ in range(n)]
        items = []
        for k in names:
            r = self.rng.random()
            kind = "get" if r < 0.3 else "set" if r < 0.7 else "append" if r < 0.85 else "del"
            if kind == "append" and any(len(s) >= 6 for s, _ in k.acc):
                kind = "set"
            items.append((k, kind))
        reqs = [self.request(tenant, k, kind) for k, kind in items]
        wire = b"".join(r for r, _ in reqs)
        try:
            c = Raw(self.ports[tenant], timeout=REPLY_TIMEOUT_S)
            cid = c.call("CLIENT", "ID")
        except (OSError, Closed) as e:
            self.fail("disconnect", f"tenant {tenant}: connect: {e}")
            return
        mode = self.rng.choice(("cut", "cut", "partial-read", "unread"))
        read = 0
        t_send = time.time()
        try:
            if mode == "cut":
                c.send(wire[: self.rng.randrange(len(wire))])
            else:
                c.send(wire)
                if mode == "partial-read":
                    want = self.rng.randrange(len(reqs))
                    for (k, _), (_, op) in zip(items[:want], reqs[:want]):
                        self.check_reply(tenant, k, op, c.read(), t_send, time.time())
                        read += 1
        except (OSError, Closed) as e:
            self.fail("disconnect", f"tenant {tenant}: {type(e).__name__} {e} before the client closed")
        (close_hard if self.rng.random() < 0.5 else Raw.close)(c)
        # Unknown: the server ran some prefix of the rest, and any write in it may have been
        # refused (OOM under a refusing policy): each write, in order, applied or not.
        now = time.time()
        for (k, _), (_, op) in zip(items[read:], reqs[read:]):
            if op[0] != "get":
                k.acc = k.acc + [x for x in apply_op(k, op, now) if x not in k.acc]
        self.tick(read)
        if not self.reaped(tenant, cid):
            return
        # Now nothing more can land: read every touched key back.
        uniq = list({id(k): k for k, _ in items}.values())
        self.roundtrip(tenant, [(k, "get") for k in uniq])


# ============================================================================== slow reader


class SlowReader(Worker):
    """Big values in tenant `slow`, fetched in long pipelines and read a few KiB at a time."""

    def run(self):
        n = self.args.slow_keys
        keys = [self.key("slow", f"s{self.wid}:big{i}") for i in range(n)]
        for k in keys:
            self.roundtrip_big(k)
        rounds = abandoned = 0
        while self.running():
            rounds += 1
            abandon = self.rng.random() < 0.25
            picks = [self.rng.choice(keys) for _ in range(self.rng.randint(100, 200))]
            try:
                c = SlowRaw(self.ports["slow"], chunk=self.rng.choice((8192, 16384, 65536)),
                            delay=self.rng.choice((0.001, 0.002, 0.005)))
            except OSError as e:
                self.fail("disconnect", f"slow reader connect: {e}")
                continue
            t_send = time.time()
            try:
                c.send(b"".join(encode("GET", k.name) for k in picks))
                stop_at = self.rng.randrange(len(picks) // 4) if abandon else len(picks)
                for k in picks[:stop_at]:
                    if not self.running():
                        break
                    self.check_value("slow", k, c.read(), t_send)
                    self.tick(1)
                if abandon:
                    abandoned += 1
                    (close_hard if self.rng.random() < 0.5 else Raw.close)(c)
                else:
                    c.close()
            except (OSError, Closed) as e:
                c.close()
                self.fail("timeout" if isinstance(e, socket.timeout) else "disconnect",
                          f"slow reader: {type(e).__name__} {e}")
            for k in self.rng.sample(keys, 3):  # new versions now and then
                self.roundtrip_big(k)
        self.counts["rounds"], self.counts["abandoned"] = rounds, abandoned
        self.done()

    def roundtrip_big(self, k: Key):
        spec = ((self.next_ver(), self.rng.randint(48 * 1024, 64 * 1024)),)
        c = self.conn("slow")
        try:
            t_send = time.time()
            reply = c.call("SET", k.name, render("slow", k.name, spec))
            self.check_reply("slow", k, ("set", spec, None), reply, t_send, time.time())
            self.tick(1)
        except (OSError, Closed) as e:
            self.drop("slow")
            self.fail("disconnect", f"slow reader SET: {e}")
            k.acc = k.acc + [(spec, None)]


# ============================================================================== hostile tenant


class HostileWorker(Worker):
    """Tenant `hostile` floods the server with half-sent requests and an unbounded MULTI
    (issue #27), scaled to the soak's memory; each round checks that the server bounded it."""

    def run(self):
        rounds = {"bulk": 0, "multibulk": 0, "multi": 0, "closed": 0, "refused": 0}
        floods = (self.bulk_flood, self.multibulk_flood, self.multi_flood)
        i = 0
        while self.running():
            name = floods[i % len(floods)].__name__.split("_")[0]
            floods[i % len(floods)](rounds)
            rounds[name] += 1
            i += 1
            self.stop.wait(0.5)  # a pause between floods: the machine is small and shared
        self.counts.update(rounds)
        self.done()

    def open_flood(self, n: int, header: bytes, chunk: bytes, per_conn: int):
        """`n` connections that each send `header` then `per_conn` bytes of `chunk`s, round
        robin; returns (sockets, bytes sent, how many the server closed)."""
        conns, sent, dead = [], 0, set()
        try:
            for _ in range(n):
                s = socket.create_connection(("127.0.0.1", self.ports["hostile"]), timeout=REPLY_TIMEOUT_S)
                s.sendall(header)
                conns.append(s)
            for _ in range(per_conn // len(chunk)):
                if not self.running():
                    break
                for j, s in enumerate(conns):
                    if j in dead:
                        continue
                    try:
                        s.sendall(chunk)
                        sent += len(chunk)
                    except OSError:
                        dead.add(j)
            for j, s in enumerate(conns):
                if j not in dead:
                    s.settimeout(0.05)
                    try:
                        if s.recv(4096) == b"":
                            dead.add(j)
                    except socket.timeout:
                        pass
                    except OSError:
                        dead.add(j)
        finally:
            for s in conns:
                if self.rng.random() < 0.5:  # RST, as close_hard
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                s.close()
        return sent, len(dead)

    def judge(self, what: str, sent: int, closed: int, rounds: dict):
        rounds["closed"] += closed
        # Far more than the tenant's cap was sent: the server must have closed some of it.
        if self.running() and sent > 3 * HOSTILE_CAP and closed == 0:
            self.fail("hostile", f"{what}: {sent / MiB:.0f} MiB of half-sent requests held, "
                                 f"no connection closed (tenant cap {HOSTILE_CAP / MiB:.0f} MiB)")

    def bulk_flood(self, rounds: dict):
        header = b"*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$524288000\r\n"
        sent, closed = self.open_flood(12, header, b"z" * (256 * 1024), 4 * MiB)
        self.judge("declared 500 MB bulks", sent, closed, rounds)

    def multibulk_flood(self, rounds: dict):
        arg = b"$1\r\na\r\n"
        chunk = arg * (64 * 1024 // len(arg))
        sent, closed = self.open_flood(24, b"*1000000\r\n$3\r\nDEL\r\n", chunk, 1280 * 1024)
        self.judge("*1000000 of one-byte arguments", sent, closed, rounds)

    def multi_flood(self, rounds: dict):
        c = None
        try:
            c = Raw(self.ports["hostile"], timeout=REPLY_TIMEOUT_S)
            c.call("MULTI")
            refused = 0
            for base in range(0, 200_000, 10_000):
                if not self.running():
                    break
                c.send(b"".join(encode("SET", f"q:{i}", "v" * 32) for i in range(base, base + 10_000)))
                for _ in range(10_000):
                    if isinstance(c.read(), RespError):
                        refused += 1
                if refused:
                    break
            rounds["refused"] += refused
            if self.running() and not refused:
                self.fail("hostile", "MULTI: 200,000 queued SETs and none refused (tenant cap "
                                     f"{HOSTILE_CAP / MiB:.0f} MiB)")
        except (OSError, Closed) as e:
            self.fail("hostile", f"MULTI flood: {type(e).__name__} {e}")
        finally:
            if c:
                c.close()


def run_worker(cls, wid, args, ports, q, t0, deadline, stop):
    w = cls(wid, args, ports, q, t0, deadline, stop)
    try:
        w.run()
    except Exception as e:  # a bug in the soak script itself: report it, do not hang
        import traceback
        q.put(("fail", wid, "script", f"{type(e).__name__}: {e}\n{traceback.format_exc()}", time.time() - t0))
        q.put(("done", wid, w.counts))


# ============================================================================== server side


def admin_conn(port: int) -> Raw:
    """A connection authenticated as the admin."""
    c = Raw(port, timeout=REPLY_TIMEOUT_S)
    reply = c.call("AUTH", ADMIN_USER, ADMIN_PASSWORD)
    if reply != "OK":
        c.close()
        raise RuntimeError(f"admin AUTH failed: {reply!r}")
    return c


def config_toml(args, main_port: int, ports: dict[str, int]) -> str:
    evicting_tenants = "\n".join(
        f'[[tenant]]\nname = "{t}"\nport = {ports[t]}\npolicy = "{INITIAL_POLICY[t]}"\n'
        for t in EVICTING_TENANTS)
    return f"""
[server]
bind = "127.0.0.1"
port = {main_port}
threads = {args.threads}
maxclients = 1000

[memory]
maxmemory = "{args.maxmemory_mb}MiB"
page_size = "256KiB"
partition = "shared"

[eviction]
policy = "allkeys-lru"

[tenancy]
mode = "port"

[admin]
user = "{ADMIN_USER}"
password = "{ADMIN_PASSWORD}"

[controller]
name = "{args.controller}"
interval = "{args.interval}"
max_moves = 64

{evicting_tenants}
[[tenant]]
name = "keep"
port = {ports["keep"]}
policy = "{INITIAL_POLICY["keep"]}"
min = "8MiB"

[[tenant]]
name = "slow"
port = {ports["slow"]}
policy = "{INITIAL_POLICY["slow"]}"
min = "4MiB"

[[tenant]]
name = "hostile"
port = {ports["hostile"]}
policy = "{INITIAL_POLICY["hostile"]}"
max = "{HOSTILE_CAP // MiB}MiB"
"""


def info_fields(text: bytes | str) -> dict[str, str]:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    out = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k.strip()] = v.strip()
    return out


def tenant_fields(info: dict[str, str]) -> dict[str, dict[str, str]]:
    out = {}
    for k, v in info.items():
        if k.startswith("tenant_"):
            out[k[len("tenant_"):]] = dict(kv.split("=", 1) for kv in v.split(",") if "=" in kv)
    return out


def proc_status(pid: int) -> dict[str, int]:
    out = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                k, v = line.split(":", 1)
                out[k] = int(v.split()[0]) * 1024
    except OSError:
        pass
    return out


class PolicyHistory:
    """Every policy change of every tenant: (sent, acknowledged, policy), to decide whether an
    OOM reply or a miss in `keep` was allowed at the time."""

    def __init__(self):
        self.changes = {t: [(-1e18, -1e18, p)] for t, p in INITIAL_POLICY.items()}
        self.lock = threading.Lock()

    def record(self, tenants, policy: str, sent: float, acked: float):
        with self.lock:
            for t in tenants:
                self.changes[t].append((sent, acked, policy))

    def possible(self, tenant: str, a: float, b: float) -> set[str]:
        """Policies the tenant may have had at some time in [a, b]."""
        with self.lock:
            ch = self.changes[tenant]
        certain = [p for s, k, p in ch if k <= a]
        out = {certain[-1]} if certain else set()
        out |= {p for s, k, p in ch if s <= b and k >= a}
        return out


class Control(threading.Thread):
    """Controller decisions and tenant reconfiguration every `period` seconds."""

    def __init__(self, args, ports, t0, deadline, history: PolicyHistory, failures, log):
        super().__init__(daemon=True)
        self.args, self.ports, self.t0, self.deadline = args, ports, t0, deadline
        self.history, self.failures, self.log = history, failures, log
        self.rng = random.Random(args.seed + 7)
        self.own_policy = dict(INITIAL_POLICY)  # each tenant's own setting, restored after CONFIG SET
        self.actions: dict[str, int] = {}
        self.stop_ev = threading.Event()

    def call(self, c: Raw, *args):
        reply = c.call(*args)
        if isinstance(reply, RespError):
            self.failures.append(("error", f"control {' '.join(map(str, args))}: {reply}", time.time() - self.t0))
        return reply

    def run(self):
        c = admin_conn(self.ports["a"])
        controllers = [("kredis", ["INTERVAL", self.args.interval]),
                       ("mpart", ["INTERVAL", self.args.interval])]
        try:
            while time.time() < self.deadline and not self.stop_ev.wait(self.args.control_period):
                r = self.rng.random()
                if self.args.controller == "none":
                    r = 0.40 + 0.60 * r  # no controller to ask or replace: tenants only
                now = lambda: time.time() - self.t0  # noqa: E731
                if r < 0.30:
                    name = "controller-run"
                    self.call(c, "LOCUS.CONTROLLER", "RUN")
                elif r < 0.40:
                    ctl, extra = self.rng.choice(controllers)
                    name = f"controller-set-{ctl}"
                    self.call(c, "LOCUS.CONTROLLER", "SET", ctl, *extra)
                elif r < 0.60:
                    p = self.rng.choice(POLICIES_C)
                    name = f"tenant-c-policy-{p}"
                    sent = now()
                    if self.call(c, "LOCUS.TENANT", "c", "SET", "maxmemory-policy", p) == "OK":
                        self.history.record(["c"], p, sent, now())
                        self.own_policy["c"] = p
                elif r < 0.70:
                    t = self.rng.choice(("a", "b"))
                    name = f"tenant-{t}-samples"
                    self.call(c, "LOCUS.TENANT", t, "SET", "maxmemory-samples", self.rng.randint(1, 16))
                elif r < 0.82:
                    cap = self.rng.choice((0, 12 * MiB, 20 * MiB, 32 * MiB))
                    name = f"tenant-b-maxmemory-{cap // MiB}mb"
                    self.call(c, "LOCUS.TENANT", "b", "SET", "maxmemory", cap)
                elif r < 0.90:
                    name = "config-set-samples"
                    self.call(c, "CONFIG", "SET", "maxmemory-samples", self.rng.randint(3, 10))
                else:
                    # Every tenant at once, then each tenant back to its own policy.
                    p = self.rng.choice(("allkeys-lru", "allkeys-lfu"))
                    name = f"config-set-policy-{p}"
                    sent = now()
                    if self.call(c, "CONFIG", "SET", "maxmemory-policy", p) == "OK":
                        self.history.record(TENANTS, p, sent, now())
                    for t in TENANTS:
                        cur = self.own_policy[t]
                        sent = now()
                        if self.call(c, "LOCUS.TENANT", t, "SET", "maxmemory-policy", cur) == "OK":
                            self.history.record([t], cur, sent, now())
                self.actions[name] = self.actions.get(name, 0) + 1
                self.log(f"control: {name}")
        except (OSError, Closed) as e:
            self.failures.append(("disconnect", f"control connection: {type(e).__name__} {e}", time.time() - self.t0))
        finally:
            c.close()


class Sampler(threading.Thread):
    """Once a second: INFO (used_memory, maxmemory, evictions, tenants) and the server's RSS."""

    def __init__(self, srv, ports, t0, deadline, failures, log):
        super().__init__(daemon=True)
        self.srv, self.ports, self.t0, self.deadline = srv, ports, t0, deadline
        self.failures, self.log = failures, log
        self.rows: dict[int, dict] = {}
        self.rss_over: list = []
        self.decisions_seen: set = set()
        self.moves = 0
        self.evicted_by_moves = 0
        self.stop_ev = threading.Event()
        self.crashed = False

    def run(self):
        c = None
        next_t = self.t0 + 1.0
        while time.time() < self.deadline + 0.5 and not self.stop_ev.is_set():
            self.stop_ev.wait(max(0.0, next_t - time.time()))
            sec = int(next_t - self.t0) - 1
            next_t += 1.0
            if not self.srv.alive():
                self.crashed = True
                self.failures.append(("crash", f"locus exited with {self.srv.proc.returncode}", time.time() - self.t0))
                return
            st = proc_status(self.srv.proc.pid)
            try:
                c = c or admin_conn(self.ports["a"])
                t_send = time.time()
                info = info_fields(c.call("INFO", "everything"))
                info_ms = (time.time() - t_send) * 1000
            except (OSError, Closed) as e:
                c = None
                self.failures.append(("timeout" if isinstance(e, socket.timeout) else "disconnect",
                                      f"sampler INFO: {type(e).__name__} {e}", time.time() - self.t0))
                continue
            self.controller_records(c)
            used, maxmem = int(info.get("used_memory", 0)), int(info.get("maxmemory", 0))
            rss = st.get("VmRSS", 0)
            limit = RSS_FACTOR * maxmem + RSS_SLACK
            row = {"t": sec + 1, "rss": rss, "hwm": st.get("VmHWM", 0), "used_memory": used,
                   "maxmemory": maxmem, "rss_limit": int(limit), "info_ms": round(info_ms, 2),
                   "evicted_keys": int(info.get("evicted_keys", 0)),
                   "expired_keys": int(info.get("expired_keys", 0)),
                   "clients": int(info.get("connected_clients", 0)),
                   "decisions": int(info.get("controller_decisions", 0) or 0),
                   "moves": self.moves, "evicted_by_moves": self.evicted_by_moves}
            for t, f in tenant_fields(info).items():
                row[f"used_{t}"] = int(f.get("used_bytes", 0))
                row[f"evictions_{t}"] = int(f.get("evictions", 0))
            self.rows[sec + 1] = row
            if used > maxmem:
                self.failures.append(("budget", f"used_memory {used} > maxmemory {maxmem}", sec + 1))
            if rss > limit:
                self.rss_over.append((sec + 1, rss))
                self.log(f"!!! RSS {rss / MiB:.1f} MiB > {limit / MiB:.1f} MiB (1.15 x maxmemory + 64 MiB) at t={sec + 1}s")
        if c:
            c.close()

    def controller_records(self, c: Raw):
        """Adds up pages moved and items evicted by the controller's moves (the last decisions,
        each counted once)."""
        recs = c.call("LOCUS.CONTROLLER", "RECORDS", 5)
        if isinstance(recs, RespError) or not isinstance(recs, list):
            return
        for r in recs:
            d = r if isinstance(r, dict) else dict(zip(r[0::2], r[1::2]))
            at = d.get(b"at_us")
            if at is None or at in self.decisions_seen:
                continue
            self.decisions_seen.add(at)
            self.moves += int(d.get(b"moves", 0))
            self.evicted_by_moves += int(d.get(b"evicted_by_moves", 0))


# ============================================================================== report


def p99(xs: list[float]) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(0.99 * len(xs)))]


def write_outputs(out: Path, rows: list[dict], summary: dict, failures: list):
    out.mkdir(parents=True, exist_ok=True)
    cols = ["t", "rss", "hwm", "used_memory", "maxmemory", "rss_limit", "ops", "get_p99_ms",
            "set_p99_ms", "get_samples", "set_samples", "hits", "misses", "evicted_keys",
            "expired_keys", "clients", "decisions", "moves", "evicted_by_moves", "info_ms"]
    extra = sorted({k for r in rows for k in r if k.startswith(("used_", "evictions_"))} - set(cols))
    cols += extra
    with open(out / "soak.csv", "w") as f:
        f.write(",".join(cols) + "\n")
        for r in rows:
            f.write(",".join("" if r.get(c) is None else str(r.get(c)) for c in cols) + "\n")
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    with open(out / "failures.txt", "w") as f:
        for kind, detail, t in failures:
            f.write(f"[{t:8.2f}s] {kind}: {detail}\n")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install -r tests/requirements.txt): no soak.png")
        return
    ts = [r["t"] for r in rows]
    fig, (ax1, ax2, ax3) = plt.subplots(3, 1, figsize=(11, 10), sharex=True)
    ax1.plot(ts, [r.get("rss", 0) / MiB for r in rows], label="RSS")
    ax1.plot(ts, [r.get("used_memory", 0) / MiB for r in rows], label="used_memory")
    ax1.plot(ts, [r.get("maxmemory", 0) / MiB for r in rows], "--", label="maxmemory")
    ax1.plot(ts, [r.get("rss_limit", 0) / MiB for r in rows], ":", label="RSS limit (1.15 x max + 64 MiB)")
    for t in TENANTS:
        if f"used_{t}" in cols:
            ax1.plot(ts, [r.get(f"used_{t}", 0) / MiB for r in rows], linewidth=0.8, label=f"tenant {t}")
    ax1.set_ylabel("MiB")
    ax1.legend(fontsize=7, ncol=3)
    ax1.set_title(summary.get("title", "locus soak"))
    ax2.plot(ts, [r.get("ops") or 0 for r in rows], label="ops/s (client side)")
    ax2.set_ylabel("ops/s")
    ax2.legend(fontsize=8)
    ax3.plot(ts, [r.get("get_p99_ms") for r in rows], label="GET p99")
    ax3.plot(ts, [r.get("set_p99_ms") for r in rows], label="SET p99")
    ax3.set_yscale("log")
    ax3.set_ylabel("ms (single round trips)")
    ax3.set_xlabel("seconds")
    ax3.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "soak.png", dpi=90)
    plt.close(fig)


# ============================================================================== main


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=None,
                    help="seconds of load (default 180; 15 with --self-test)")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[2] / "target" / "soak",
                    help="output directory (default target/soak)")
    ap.add_argument("--workers", type=int, default=3, help="load processes (default 3)")
    ap.add_argument("--slow-readers", type=int, default=1)
    ap.add_argument("--hostile", type=int, default=1, help="hostile tenant processes (default 1)")
    ap.add_argument("--chaos", type=int, default=1, help="connect/disconnect processes (default 1)")
    ap.add_argument("--keys", type=int, default=6000, help="keys per load process per tenant")
    ap.add_argument("--keep-keys", type=int, default=400, help="keys per load process in tenant keep")
    ap.add_argument("--counters", type=int, default=50)
    ap.add_argument("--chaos-keys", type=int, default=300)
    ap.add_argument("--slow-keys", type=int, default=40)
    ap.add_argument("--maxmemory-mb", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2, help="server worker threads")
    ap.add_argument("--controller", default="kredis")
    ap.add_argument("--interval", default="2s", help="controller decision interval")
    ap.add_argument("--control-period", type=float, default=2.0,
                    help="seconds between control actions (0: none)")
    ap.add_argument("--expiry-slack-ms", type=float, default=50.0,
                    help="a key read this long after its TTL ran out must be a miss")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--self-test", action="store_true",
                    help="inject corruption behind the checker's back: passes only if all of it is reported")
    ap.add_argument("--inject-after", type=float, default=4.0, help="self-test: seconds before injecting")
    args = ap.parse_args(argv)
    if args.duration is None:
        args.duration = 15.0 if args.self_test else 180.0
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    start_wall = time.time()

    def log(msg):
        print(f"[{time.time() - start_wall:7.1f}s] {msg}", flush=True)

    binary = harness.locus_bin()
    if not Path(binary).exists():
        print(f"no Locus binary at {binary}: cargo build --release --bin locus, or set LOCUS_BIN")
        return 2
    main_port, *tports = harness.free_ports(1 + len(TENANTS))
    ports = dict(zip(TENANTS, tports))
    srv = harness.start_locus(config_toml(args, main_port, ports), ports["a"])
    log(f"locus pid {srv.proc.pid} ({binary}), tenants {ports}, maxmemory {args.maxmemory_mb} MiB, "
        f"controller {args.controller} every {args.interval}, {args.duration:.0f} s")

    ctx = mp.get_context("fork")
    q = ctx.Queue()
    stop = ctx.Event()
    t0 = time.time() + 0.5
    deadline = t0 + args.duration
    procs = []
    wid = 0
    for cls, n in ((LoadWorker, args.workers), (ChaosWorker, args.chaos), (SlowReader, args.slow_readers),
                   (HostileWorker, args.hostile)):
        for _ in range(n):
            p = ctx.Process(target=run_worker, args=(cls, wid, args, ports, q, t0, deadline, stop),
                            name=f"{cls.__name__}-{wid}", daemon=True)
            procs.append((wid, cls.__name__, p))
            wid += 1
    for _, _, p in procs:
        p.start()

    failures: list = []  # (kind, detail, t)
    history = PolicyHistory()
    sampler = Sampler(srv, ports, t0, deadline, failures, log)
    control = Control(args, ports, t0, deadline, history, failures, log)
    sampler.start()
    if args.control_period > 0:
        control.start()

    stats: dict[int, dict] = {}
    ooms: list = []
    keep_misses: list = []
    injected: set = set()
    done: dict[int, dict] = {}
    last_report = 0.0
    while len(done) < len(procs):
        try:
            msg = q.get(timeout=0.5)
        except queue.Empty:
            msg = None
        now = time.time()
        if sampler.crashed:
            stop.set()
        if now > deadline + 60:
            failures.append(("timeout", f"workers {sorted(set(w for w, _, _ in procs) - set(done))} did not finish", now - t0))
            break
        if msg is None:
            continue
        kind = msg[0]
        if kind == "stats":
            _, w, sec, b, o = msg
            s = stats.setdefault(sec, {"ops": 0, "get": [], "set": [], "hits": 0, "misses": 0})
            s["ops"] += b["ops"]
            s["get"] += b["get"]
            s["set"] += b["set"]
            s["hits"] += b["hits"]
            s["misses"] += b["misses"]
            ooms += o
        elif kind == "fail":
            _, w, k, detail, t = msg
            failures.append((k, f"worker {w}: {detail}", t))
            log(f"FAIL {k}: worker {w}: {detail[:300]}")
        elif kind == "keep-miss":
            keep_misses.append(msg[1:])
        elif kind == "injected":
            injected.add(msg[2])
        elif kind == "done":
            done[msg[1]] = msg[2]
        if now - last_report >= 10:
            last_report = now
            sec = int(now - t0) - 2  # a second whose stats have all arrived
            s = stats.get(sec)
            row = sampler.rows.get(sec + 1, {})
            if s:
                log(f"t={sec}s ops/s={s['ops']} GET p99={p99(s['get']) or 0:.2f}ms "
                    f"SET p99={p99(s['set']) or 0:.2f}ms RSS={row.get('rss', 0) / MiB:.1f}MiB "
                    f"used={row.get('used_memory', 0) / MiB:.1f}MiB evicted={row.get('evicted_keys', 0)} "
                    f"failures={len(failures)}")
    stop.set()
    for _, _, p in procs:
        p.join(timeout=10)
        if p.is_alive():
            p.terminate()
    control.stop_ev.set()
    sampler.stop_ev.set()
    if control.is_alive():
        control.join(timeout=15)
    sampler.join(timeout=15)

    # OOM replies: expected only while the tenant's policy may have refused writes.
    bad_oom = [(t, a, b) for t, a, b in ooms if not (history.possible(t, a, b) & set(REFUSING))]
    for t, a, b in bad_oom[:1000]:
        failures.append(("error", f"OOM in tenant {t} at {a:.2f}-{b:.2f}s while its policy was "
                                  f"{sorted(history.possible(t, a, b))}", a))
    # A miss in `keep` (noeviction, under its floor) of a key whose write was acknowledged.
    lost = [(w, k, a, b) for w, k, a, b in keep_misses if history.possible("keep", a, b) == {"noeviction"}]
    for w, k, a, b in lost[:1000]:
        failures.append(("lost", f"tenant keep: worker {w}'s {k} (written at {a:.2f}s) missing at {b:.2f}s", b))

    # Final state, then a clean shutdown.
    final = {}
    try:
        with admin_conn(ports["a"]) as c:
            info = info_fields(c.call("INFO", "everything"))
            final = {"tenants": tenant_fields(info), "used_memory": int(info.get("used_memory", 0)),
                     "evicted_keys": int(info.get("evicted_keys", 0)),
                     "expired_keys": int(info.get("expired_keys", 0)),
                     "total_commands_processed": int(info.get("total_commands_processed", 0)),
                     "controller_decisions": info.get("controller_decisions")}
    except (OSError, Closed) as e:
        failures.append(("crash", f"final INFO: {type(e).__name__} {e}", time.time() - t0))
    keep_ev = int(final.get("tenants", {}).get("keep", {}).get("evictions", 0))
    if keep_ev and history.possible("keep", -1e18, 1e18) == {"noeviction"}:
        failures.append(("lost", f"tenant keep (noeviction) counted {keep_ev} evictions", time.time() - t0))
    alive = srv.alive()
    final_rss = proc_status(srv.proc.pid) if alive else {}
    srv.stop()
    code = srv.proc.returncode
    if not alive and not any(k == "crash" for k, _, _ in failures):
        failures.append(("crash", f"locus exited with {code} during the run", time.time() - t0))
    elif alive and code != 0:
        failures.append(("crash", f"locus exited with {code} on SIGTERM (expected 0)", time.time() - t0))
    shutil.copy(srv.log_path, out / "locus.log")
    shutil.rmtree(srv.workdir, ignore_errors=True)

    # Per-second rows.
    rows = []
    for sec in range(1, int(args.duration) + 1):
        r = dict(sampler.rows.get(sec, {"t": sec}))
        s = stats.get(sec - 1)
        if s:
            g, st = p99(s["get"]), p99(s["set"])
            r.update(ops=s["ops"], get_p99_ms=None if g is None else round(g, 3),
                     set_p99_ms=None if st is None else round(st, 3),
                     get_samples=len(s["get"]), set_samples=len(s["set"]), hits=s["hits"], misses=s["misses"])
        rows.append(r)
    ops = [r["ops"] for r in rows if r.get("ops")]
    rss_peak = max([r.get("rss", 0) for r in rows] + [final_rss.get("VmRSS", 0)])
    maxmem = args.maxmemory_mb * MiB
    limit = RSS_FACTOR * maxmem + RSS_SLACK
    if sampler.rss_over:
        failures.append(("rss", f"RSS above 1.15 x maxmemory + 64 MiB = {limit / MiB:.1f} MiB in "
                         f"{len(sampler.rss_over)} of {len(rows)} seconds (peak {rss_peak / MiB:.1f} MiB)",
                         time.time() - t0))
    kinds: dict[str, int] = {}
    for k, _, _ in failures:
        kinds[k] = kinds.get(k, 0) + 1
    totals = {k: sum(d.get(k, 0) for d in done.values()) for k in ("ops", "hits", "misses", "ooms")}
    summary = {
        "title": f"locus soak: {args.duration:.0f} s, maxmemory {args.maxmemory_mb} MiB, {args.controller}",
        "duration_s": args.duration, "self_test": args.self_test, "seed": args.seed,
        "maxmemory": maxmem, "rss_limit": int(limit), "rss_peak": rss_peak,
        "rss_hwm": final_rss.get("VmHWM", max([r.get("hwm", 0) for r in rows] + [0])),
        "rss_peak_over_limit_s": len(sampler.rss_over),
        "used_memory_peak": max([r.get("used_memory", 0) for r in rows] + [0]),
        "ops_per_s_mean": round(sum(ops) / len(ops)) if ops else 0,
        "ops_per_s_min": min(ops) if ops else 0,
        "get_p99_ms_median": sorted([r["get_p99_ms"] for r in rows if r.get("get_p99_ms")] or [0])[
            len([r for r in rows if r.get("get_p99_ms")]) // 2],
        "set_p99_ms_median": sorted([r["set_p99_ms"] for r in rows if r.get("set_p99_ms")] or [0])[
            len([r for r in rows if r.get("set_p99_ms")]) // 2],
        "get_p99_ms_max": max([r.get("get_p99_ms") or 0 for r in rows]),
        "set_p99_ms_max": max([r.get("set_p99_ms") or 0 for r in rows]),
        "client_totals": totals, "workers": {str(w): d for w, d in done.items()},
        "oom_replies": len(ooms), "keep_misses": len(keep_misses), "control_actions": control.actions,
        "controller_moves": sampler.moves, "controller_evicted_by_moves": sampler.evicted_by_moves,
        "final": final, "exit_code_on_sigterm": code, "failures_by_kind": kinds,
        "injected": sorted(injected),
    }
    write_outputs(out, rows, summary, failures)

    print()
    print(f"=== {summary['title']} ===")
    print(f"ops: {totals['ops']} ({summary['ops_per_s_mean']}/s mean, {summary['ops_per_s_min']}/s min), "
          f"hits {totals['hits']}, misses {totals['misses']}, OOM replies {len(ooms)} (all expected: {not bad_oom})")
    print(f"p99 single GET/SET: median {summary['get_p99_ms_median']}/{summary['set_p99_ms_median']} ms, "
          f"worst second {summary['get_p99_ms_max']}/{summary['set_p99_ms_max']} ms")
    print(f"used_memory peak {summary['used_memory_peak'] / MiB:.1f} MiB of {args.maxmemory_mb} MiB; "
          f"evicted {final.get('evicted_keys')}, expired {final.get('expired_keys')}")
    print(f"RSS peak {rss_peak / MiB:.1f} MiB (HWM {summary['rss_hwm'] / MiB:.1f} MiB), limit {limit / MiB:.1f} MiB")
    print(f"controller: {final.get('controller_decisions')} decisions, {sampler.moves} page moves, "
          f"{sampler.evicted_by_moves} items evicted by moves; control actions: {control.actions}")
    print(f"output: {out}")
    if args.self_test:
        # Each injected fault must be reported as such, on the key it was injected into.
        caught = {k for k, d, _ in failures if ":selftest" in d}
        want = {"corrupt", "cross-tenant", "stale", "lost"}
        missing = want - caught
        print(f"self-test: injected {sorted(injected)}; reported on the injected keys {sorted(caught)}; "
              f"other failures {kinds}")
        if missing or not want <= injected:
            print(f"SELF-TEST FAILED: not reported: {sorted(missing)}")
            return 1
        print("SELF-TEST PASSED: every injected fault was reported")
        return 0
    if failures:
        print(f"FAILED: {len(failures)} failures {kinds} (first ones below; all in {out / 'failures.txt'})")
        for k, d, t in failures[:20]:
            print(f"  [{t:7.2f}s] {k}: {d[:400]}")
        return 1
    print("PASSED: every value read was one written for its key and tenant; no unexpected error; "
          "used_memory <= maxmemory and RSS <= 1.15 x maxmemory + 64 MiB every second")
    return 0


if __name__ == "__main__":
    sys.exit(main())
