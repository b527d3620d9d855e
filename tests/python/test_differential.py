"""Differential test (Locus only; needs redis-server installed): the same seeded random sequence of
string/keyspace/TTL commands goes to Locus and to a real redis-server side by side, and every reply
must be the same, byte for byte after normalising what legitimately varies (the order of KEYS, the
exact remaining TTL)."""

import random

import pytest

from harness import Raw, start_redis

pytestmark = pytest.mark.locus_only

KEYS = [f"k{i}" for i in range(8)] + ["\x00bin", "sp ace"]
VALUES = ["", "0", "1", "-1", "10", "42", "9223372036854775807", "-9223372036854775808", "1.5", "-0.25",
          "abc", "x" * 60, "\x00\xff\r\n", " 1", "3.0e3", "007", "+5", "1e5", "ohmytext", "mynewtext",
          "GATTACAGATTACA", "TAGACATTAG"]
INCRS = ["1", "-1", "5", "100", "9223372036854775807", "-9223372036854775808", "abc", "1.5", ""]
FLOATS = ["0.5", "-1.5", "10", "3.0e2", "abc", "", "-0", "2.25", "0.1", "1e20", "-1e-20", "inf", "-inf",
          "1.7976931348623157e308", "5e-324", "0.333333333333333333", " 1", "1e"]


def random_command(rng: random.Random, keys=KEYS):
    k = rng.choice(keys)
    k2 = rng.choice(keys)
    v = rng.choice(VALUES)
    op = rng.randrange(56)
    if op < 5:
        args = ["SET", k, v]
        if rng.random() < 0.3:
            args.append(rng.choice(["NX", "XX"]))
        if rng.random() < 0.2:
            args.append("GET")
        if rng.random() < 0.3:
            args += rng.choice([["EX", "1000"], ["PX", "500000"], ["KEEPTTL"], ["EX", "0"], ["EX", "x"]])
        return args
    return [
        ["GET", k], ["GET", k], ["MGET", k, k2, rng.choice(keys)], ["MSET", k, v, k2, rng.choice(VALUES)],
        ["MSETNX", k, v, k2, v], ["SETNX", k, v], ["GETSET", k, v], ["GETDEL", k],
        ["GETEX", k] + rng.choice([[], ["PERSIST"], ["EX", "2000"], ["PX", "0"]]),
        ["APPEND", k, v], ["STRLEN", k], ["GETRANGE", k, str(rng.randint(-12, 12)), str(rng.randint(-12, 12))],
        ["SETRANGE", k, str(rng.randint(0, 12)), v], ["INCR", k], ["DECR", k],
        ["INCRBY", k, rng.choice(INCRS)], ["DECRBY", k, rng.choice(INCRS)], ["INCRBYFLOAT", k, rng.choice(FLOATS)],
        ["DEL", k, k2], ["EXISTS", k, k2, k], ["TYPE", k], ["RENAME", k, k2], ["RENAMENX", k, k2],
        ["EXPIRE", k, rng.choice(["100", "1000", "5000", "-1", "x"])] + rng.choice([[], ["NX"], ["XX"], ["GT"], ["LT"]]),
        ["PERSIST", k], ["TTL", k], ["PTTL", k], ["EXPIRETIME", k], ["DBSIZE"], ["KEYS", "*"],
        ["UNLINK", k], ["SETEX", k, rng.choice(["100", "0"]), v], ["GET"],
        ["OBJECT", "ENCODING", k], ["SETRANGE", k, rng.choice(["100", "-1", "x"]), v],
        ["GETRANGE", k, rng.choice(["0", "-1", "9223372036854775807", "-9223372036854775808"]),
         rng.choice(["-1", "3", "9223372036854775807"])],
        ["EXPIREAT", k, rng.choice(["1", "4102444800", "0"])] + rng.choice([[], ["GT"], ["LT"]]),
        ["PEXPIRE", k, rng.choice(["100000", "0", "9223372036854775807"])],
        # (no past EXAT/PXAT: Redis 7.0 stores such a key and DBSIZE counts it until it is reclaimed)
        ["SET", k, v, rng.choice(["EXAT", "PXAT"]), rng.choice(["4102444800", "4102444800000", "0", "-5"])],
        ["MSET", k], ["RENAME", k, k], ["GETEX", k, "EX"], ["SET", k, v, "EX", "10", "PX", "10"],
        ["INCRBYFLOAT", k], ["DECRBY", k, "-9223372036854775808"], ["PSETEX", k, "100000", v],
        ["STRLEN", k, k2], ["ECHO", v], ["EXISTS"],
        ["LCS", k, k2] + rng.choice([[], ["LEN"], ["IDX"], ["IDX", "WITHMATCHLEN"], ["LEN", "IDX"],
                                     ["IDX", "MINMATCHLEN", rng.choice(["2", "-1", "x"]), "WITHMATCHLEN"],
                                     ["IDX", "MINMATCHLEN"], ["FOO"]]),
        # (no DB n > 0: one database here unless the tenancy mode is db)
        ["COPY", k, k2] + rng.choice([[], ["REPLACE"], ["DB", "0"], ["DB", "0", "REPLACE"], ["DB", "x"],
                                      ["DB", "-1"], ["REPLACE", "FOO"]]),
    ][op - 5]


def normalise(args, reply):
    name = args[0].upper()
    if name == "KEYS" and isinstance(reply, list):
        return sorted(reply)
    if name in ("TTL", "PTTL", "EXPIRETIME") and isinstance(reply, int) and reply > 0:
        return "positive"
    return reply


@pytest.mark.parametrize("seed,protocol", [(1, 2), (2, 2), (3, 2), (4, 3), (5, 3), (6, 3)])
def test_same_replies_as_redis(server, seed, protocol):
    redis_srv = start_redis()
    try:
        with Raw(server.port) as loc, Raw(redis_srv.port) as ref:
            for c in (loc, ref):
                c.call("HELLO", str(protocol))
                c.call("FLUSHALL")
            rng = random.Random(seed)
            history, mismatches = [], []
            for step in range(1500):
                args = random_command(rng)
                history.append(args)
                want = normalise(args, ref.call(*args))
                if args == ["DBSIZE"]:
                    # Redis 7.0's DBSIZE also counts expired keys not reclaimed yet; compare live keys
                    want = len(ref.call("KEYS", "*"))
                got = normalise(args, loc.call(*args))
                if got != want:
                    recent = "\n".join("    " + " ".join(map(repr, a)) for a in history[-6:])
                    mismatches.append(f"step {step}: {args!r}\n  Locus: {got!r}\n  Redis: {want!r}\n"
                                      f"  last commands:\n{recent}")
                    # the states may now differ: start both from empty again and go on
                    for c in (loc, ref):
                        c.call("FLUSHALL")
                    history.clear()
            assert not mismatches, f"seed {seed}: {len(mismatches)} mismatches\n" + "\n".join(mismatches[:8])
    finally:
        redis_srv.stop()


@pytest.mark.parametrize("protocol", [2, 3])
def test_same_replies_pipelined(server, protocol):
    """The same check with 2000 commands sent in one write: pipelining must not change any reply."""
    import threading

    from harness import encode

    rng = random.Random(100 + protocol)
    cmds = []
    while len(cmds) < 2000:
        args = random_command(rng)
        if args[0] not in ("TTL", "PTTL", "EXPIRETIME", "KEYS", "DBSIZE"):  # see normalise / DBSIZE above
            cmds.append(args)
    payload = b"".join(encode(*a) for a in cmds)
    redis_srv = start_redis()
    try:
        replies = {}
        for name, port in (("locus", server.port), ("redis", redis_srv.port)):
            with Raw(port) as c:
                c.call("HELLO", str(protocol))
                c.call("FLUSHALL")
                sender = threading.Thread(target=c.send, args=(payload,))
                sender.start()
                replies[name] = [c.read() for _ in cmds]
                sender.join(timeout=30)
        diffs = [f"#{i} {cmds[i]!r}: Locus {a!r}, Redis {b!r}"
                 for i, (a, b) in enumerate(zip(replies["locus"], replies["redis"])) if a != b]
        assert not diffs, f"{len(diffs)} replies differ, first ones:\n" + "\n".join(diffs[:5])
    finally:
        redis_srv.stop()


TENANCY_TOML = {
    "port": """[tenancy]\nmode = "port"\n[[tenant]]\nname = "other"\nport = {p2}\n[[tenant]]\nname = "t"\nport = {p1}\n""",
    "user": """[tenancy]\nmode = "user"\n[[tenant]]\nname = "other"\nuser = "o"\npassword = "o"\n"""
            """[[tenant]]\nname = "t"\nuser = "tu"\npassword = "tp"\n""",
    "db": """[tenancy]\nmode = "db"\n[[tenant]]\nname = "other"\ndb = 0\n[[tenant]]\nname = "t"\ndb = 5\n""",
    "prefix": """[tenancy]\nmode = "prefix"\ndefault_tenant = "t"\n[[tenant]]\nname = "other"\nprefix = "o:"\n"""
              """[[tenant]]\nname = "t"\nprefix = "t:"\n""",
}


@pytest.mark.parametrize("mode", ["port", "user", "db", "prefix"])
def test_same_replies_as_redis_in_every_tenancy_mode(start_locus_toml, mode):
    """A tenant behaves like a whole Redis, whatever identifies it; a neighbour's keys never show."""
    from harness import free_ports

    main, p1, p2 = free_ports(3)
    toml = f"[server]\nbind = \"127.0.0.1\"\nport = {main}\n" + TENANCY_TOML[mode].format(p1=p1, p2=p2)
    srv = start_locus_toml(toml, p1 if mode == "port" else main)
    keys = [f"t:{k}" for k in KEYS] if mode == "prefix" else KEYS
    redis_srv = start_redis()
    try:
        with Raw(p1 if mode == "port" else main) as loc, Raw(redis_srv.port) as ref, \
                Raw(p2 if mode == "port" else main) as neighbour:
            if mode == "user":
                assert loc.call("AUTH", "tu", "tp") == "OK"
                assert neighbour.call("AUTH", "o", "o") == "OK"
            if mode == "db":
                assert loc.call("SELECT", "5") == "OK"
            okeys = [f"o:{k}" for k in KEYS] if mode == "prefix" else KEYS
            assert neighbour.call("MSET", *[x for k in okeys for x in (k, "neighbour")]) == "OK"
            rng = random.Random(7)
            mismatches = []
            for step in range(800):
                args = random_command(rng, keys)
                want = normalise(args, ref.call(*args))
                if args == ["DBSIZE"]:
                    want = len(ref.call("KEYS", "*"))
                got = normalise(args, loc.call(*args))
                if got != want:
                    mismatches.append(f"step {step}: {args!r}: Locus {got!r}, Redis {want!r}")
                    for c in (loc, ref):
                        c.call("FLUSHALL")
            assert not mismatches, f"{mode}: {len(mismatches)} mismatches\n" + "\n".join(mismatches[:8])
            # the neighbour tenant was never touched
            assert neighbour.call("MGET", *okeys) == [b"neighbour"] * len(okeys)
    finally:
        redis_srv.stop()
