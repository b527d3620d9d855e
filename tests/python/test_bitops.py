"""Bitmap commands on strings (SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD BITFIELD_RO), RESP2 and
RESP3: replies, error words, offsets near the limits, WATCH and OBJECT ENCODING after a bit write,
and OOM under a full noeviction server. Every assertion holds against redis-server 7 as well."""

import re

import pytest
from redis.exceptions import ResponseError, WatchError

from harness import Raw, RespError, encode

OFFSET_ERR = "bit offset is not an integer or out of range"
BIT_ERR = "bit is not an integer or out of range"
TYPE_ERR = "Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."
NOT_INT = "value is not an integer or out of range"
OOM = "OOM command not allowed when used memory > 'maxmemory'."
# 512 MiB (the default proto-max-bulk-len) in bits: the first offset refused.
MAX_BITS = 512 * 1024 * 1024 * 8


def raises(msg):
    """pytest.raises for a ResponseError whose text (code stripped by redis-py) is exactly `msg`."""
    return pytest.raises(ResponseError, match="^" + re.escape(msg) + "$")


def bits_of(data: bytes) -> str:
    return "".join(f"{b:08b}" for b in data)


def bf(r, key, *args):
    return r.execute_command("BITFIELD", key, *args)


# SETBIT / GETBIT


def test_setbit_creates_pads_and_returns_the_old_bit(rb):
    assert rb.setbit("k", 7, 1) == 0
    assert rb.get("k") == b"\x01"
    assert rb.setbit("k", 7, 1) == 1
    assert rb.setbit("k", 7, 0) == 1
    assert rb.get("k") == b"\x00"
    assert rb.setbit("k", 9, 1) == 0
    assert rb.get("k") == b"\x00\x40"
    # Clearing a bit past the end still grows the string with zero bytes.
    assert rb.setbit("k", 31, 0) == 0
    assert rb.get("k") == b"\x00\x40\x00\x00"
    assert rb.setbit("new", 0, 0) == 0
    assert rb.get("new") == b"\x00"


def test_getbit(rb):
    assert rb.getbit("missing", 0) == 0
    assert rb.getbit("missing", MAX_BITS - 1) == 0
    rb.set("k", "1")  # 0x31 = 00110001, stored as an integer by Redis
    assert [rb.getbit("k", i) for i in range(8)] == [0, 0, 1, 1, 0, 0, 0, 1]
    assert rb.getbit("k", 8) == 0
    assert rb.getbit("k", 100_000) == 0
    rb.set("e", "")
    assert rb.getbit("e", 0) == 0


@pytest.mark.parametrize("off", ["-1", "abc", "1.5", "+1", " 1", "", "#1", str(MAX_BITS), "9223372036854775808"])
def test_bit_offset_errors(r, off):
    with raises(OFFSET_ERR):
        r.execute_command("SETBIT", "k", off, "1")
    with raises(OFFSET_ERR):
        r.execute_command("GETBIT", "k", off)
    assert r.exists("k") == 0


@pytest.mark.parametrize("val", ["2", "-1", "a", "", "1.0", "01", "9223372036854775808"])
def test_setbit_value_errors(r, val):
    with raises(BIT_ERR):
        r.execute_command("SETBIT", "k", "0", val)
    assert r.exists("k") == 0
    # The offset is checked first.
    with raises(OFFSET_ERR):
        r.execute_command("SETBIT", "k", "-1", val)


def test_setbit_arity(r):
    with raises("wrong number of arguments for 'setbit' command"):
        r.execute_command("SETBIT", "k", "0")
    with raises("wrong number of arguments for 'getbit' command"):
        r.execute_command("GETBIT", "k")


def test_setbit_keeps_the_ttl(r):
    r.set("k", "a", ex=1000)
    assert r.setbit("k", 100, 1) == 0
    assert 990 <= r.ttl("k") <= 1000
    assert r.setbit("k", 100, 1) == 1
    assert 990 <= r.ttl("k") <= 1000


@pytest.fixture
def small_bulk_len(r):
    """proto-max-bulk-len at its minimum (1 MiB) for one test, restored after."""
    old = r.config_get("proto-max-bulk-len")["proto-max-bulk-len"]
    r.config_set("proto-max-bulk-len", 1024 * 1024)
    yield 1024 * 1024
    r.config_set("proto-max-bulk-len", old)


def test_offsets_at_proto_max_bulk_len(r, small_bulk_len):
    last = small_bulk_len * 8 - 1  # the last bit of a string of proto-max-bulk-len bytes
    assert r.setbit("k", last, 1) == 0
    assert r.strlen("k") == small_bulk_len
    assert r.getbit("k", last) == 1
    assert r.bitpos("k", 1) == last
    assert r.bitcount("k") == 1
    for cmd in (["SETBIT", "k", last + 1, 1], ["GETBIT", "k", last + 1],
                ["BITFIELD", "k", "GET", "u8", last + 1],
                ["BITFIELD", "k", "GET", "u8", f"#{small_bulk_len}"],
                ["BITFIELD_RO", "k", "GET", "u1", last + 1]):
        with raises(OFFSET_ERR):
            r.execute_command(*cmd)
    assert r.strlen("k") == small_bulk_len
    # Only the offset is limited: a field that starts inside the limit may end past it.
    assert bf(r, "k", "GET", "u8", last) == [128]
    assert bf(r, "k", "SET", "u8", last, 255) == [128]
    assert r.strlen("k") == small_bulk_len + 1
    assert bf(r, "k", "GET", "u16", last - 7) == [0x01FE]


# BITCOUNT


@pytest.mark.parametrize("vec", [b"", b"\xaa", b"\x00\x00\xff", b"foobar", b"123", bytes(range(256)) * 5])
def test_bitcount_vectors(rb, vec):
    rb.set("s", vec)
    n = bits_of(vec).count("1")
    assert rb.bitcount("s") == n
    assert rb.execute_command("BITCOUNT", "s", 0, -1, "BIT") == n
    assert rb.execute_command("BITCOUNT", "s", 0, -1, "byte") == n


def test_bitcount_ranges(rb):
    s = b"foobar"
    rb.set("s", s)
    b = bits_of(s)

    def cnt(x: str) -> int:
        return x.count("1")

    assert rb.bitcount("s", 1, -2) == cnt(bits_of(b"ooba"))
    assert rb.bitcount("s", -2, 1) == 0
    assert rb.bitcount("s", 0, 1000) == cnt(b)
    assert rb.bitcount("s", 4, 10) == cnt(bits_of(b"ar"))
    assert rb.bitcount("s", 6, 10) == 0
    for start, end, lo, hi in [(10, 14, 10, 14), (3, 14, 3, 14), (3, 29, 3, 29), (10, -34, 10, 14),
                               (3, -34, 3, 14), (3, -19, 3, 29), (0, 1000, 0, 47), (-1, -1, 47, 47)]:
        assert rb.bitcount("s", start, end, "BIT") == cnt(b[lo:hi + 1]), (start, end)
    assert rb.bitcount("s", -2, 1, "BIT") == 0
    assert rb.bitcount("s", 48, 100, "BIT") == 0
    # Both negative and crossed: 0, before the unit is even looked at.
    assert rb.execute_command("BITCOUNT", "s", -1, -5, "nonsense") == 0
    assert rb.execute_command("BITCOUNT", "s", "-9223372036854775808", "9223372036854775807") == cnt(b)


def test_bitcount_missing_key_answers_before_parsing(r):
    assert r.execute_command("BITCOUNT", "missing") == 0
    assert r.execute_command("BITCOUNT", "missing", "0") == 0
    assert r.execute_command("BITCOUNT", "missing", "a", "b", "c") == 0


def test_bitcount_errors(r):
    r.set("s", "foobar")
    for args in (["0"], ["0", "1", "hello"], ["0", "1", "bit", "x"]):
        with raises("syntax error"):
            r.execute_command("BITCOUNT", "s", *args)
    for args in (["a", "1"], ["0", "1.5"], ["0", "99999999999999999999"]):
        with raises(NOT_INT):
            r.execute_command("BITCOUNT", "s", *args)
    with raises("wrong number of arguments for 'bitcount' command"):
        r.execute_command("BITCOUNT")
    assert r.execute_command("BITCOUNT", "s", 0, 4294967296) == r.bitcount("s")


def test_bitcount_of_an_integer_value(r):
    r.set("n", 1234567)
    assert r.bitcount("n") == bits_of(b"1234567").count("1")


# BITPOS


def test_bitpos_missing_and_empty(r):
    assert r.bitpos("missing", 0) == 0
    assert r.bitpos("missing", 1) == -1
    # A missing key answers before the range is parsed.
    assert r.execute_command("BITPOS", "missing", 0, "x") == 0
    r.set("e", "")
    assert r.bitpos("e", 0) == -1
    assert r.bitpos("e", 1) == -1
    assert r.execute_command("BITPOS", "e", 0, 0) == -1


def test_bitpos_basics(rb):
    rb.set("s", b"\xff\xf0\x00")
    assert rb.bitpos("s", 0) == 12
    assert rb.bitpos("s", 0, 0, -1, "bit") == 12
    assert rb.bitpos("s", 0, 1) == 12
    assert rb.bitpos("s", 1) == 0
    assert rb.bitpos("s", 1, 2) == -1
    rb.set("s", b"\x00\x0f\xff")
    assert rb.bitpos("s", 1) == 12
    assert rb.bitpos("s", 1, 1, -1, "bit") == 12
    assert rb.bitpos("s", 1, 13, 13, "bit") == 13


def test_bitpos_intervals(rb):
    rb.set("s", b"\x00\xff\x00")
    assert rb.bitpos("s", 0, 0, -1) == 0
    assert rb.bitpos("s", 0, 1, -1) == 16
    assert rb.bitpos("s", 0, 2, 200) == 16
    assert rb.bitpos("s", 0, 1, 1) == -1
    assert rb.bitpos("s", 0, 8, 8, "bit") == -1
    assert rb.bitpos("s", 0, 16, 200, "bit") == 16
    assert rb.bitpos("s", 1, 0, -1) == 8
    assert rb.bitpos("s", 1, 2, -1) == -1
    assert rb.bitpos("s", 1, 1, 1) == 8
    assert rb.bitpos("s", 1, 8, 8, "bit") == 8
    assert rb.bitpos("s", 1, 16, 200, "bit") == -1
    assert rb.bitpos("s", 1, 9, 12, "bit") == 9
    assert rb.bitpos("s", 1, -8, -1, "bit") == -1
    assert rb.bitpos("s", 1, 5, 3) == -1


def test_bitpos_zero_past_the_end_only_without_an_end(rb):
    rb.set("s", b"\xff\xff\xff")
    assert rb.bitpos("s", 0) == 24
    assert rb.bitpos("s", 0, 0) == 24
    assert rb.bitpos("s", 0, 2) == 24
    assert rb.bitpos("s", 0, 0, -1) == -1
    assert rb.bitpos("s", 0, 0, -1, "bit") == -1
    assert rb.bitpos("s", 0, 3) == -1  # start past the end: empty range


def test_bitpos_long_strings(rb):
    prefix = b"\xff" * 3 + b"\xff" * 24
    rb.set("s", prefix + b"\x0f")
    for start in range(9):
        assert rb.bitpos("s", 0, start) == 216
        assert rb.bitpos("s", 0, start * 8 + 1, -1, "bit") == 216
    rb.set("z", b"\x00" * 27 + b"\xf0")
    for start in range(9):
        assert rb.bitpos("z", 1, start) == 216
        assert rb.bitpos("z", 1, start * 8 + 1, -1, "bit") == 216
    big = bytearray(70_000)
    big[65_432] = 0x08
    rb.set("big", bytes(big))
    assert rb.bitpos("big", 1) == 65_432 * 8 + 4
    assert rb.bitpos("big", 1, 1000, 65_431) == -1
    assert rb.bitpos("big", 1, 65_432 * 8 + 5, -1, "bit") == -1
    assert rb.bitcount("big") == 1
    assert rb.bitcount("big", 65_432 * 8 + 4, 65_432 * 8 + 4, "bit") == 1


def test_bitpos_errors(r):
    r.set("s", "foobar")
    with raises("The bit argument must be 1 or 0."):
        r.execute_command("BITPOS", "s", 2)
    with raises("The bit argument must be 1 or 0."):
        r.execute_command("BITPOS", "missing", -1)
    with raises(NOT_INT):
        r.execute_command("BITPOS", "s", "x")
    with raises(NOT_INT):
        r.execute_command("BITPOS", "s", 1, "a")
    with raises(NOT_INT):
        r.execute_command("BITPOS", "s", 1, 0, "b")
    with raises("syntax error"):
        r.execute_command("BITPOS", "s", 1, 0, 1, "bits")
    # The unit is checked before the end.
    with raises("syntax error"):
        r.execute_command("BITPOS", "s", 1, 0, "b", "bits")
    with raises("syntax error"):
        r.execute_command("BITPOS", "s", 1, 0, 1, "bit", "x")
    with raises("wrong number of arguments for 'bitpos' command"):
        r.execute_command("BITPOS", "s")


# BITOP


def test_bitop_operations(rb):
    rb.set("a", b"\x01\x02\xff\xff")
    rb.set("b", b"\x01\x02\xff")
    assert rb.bitop("AND", "r1", "a", "b") == 4
    assert rb.bitop("or", "r2", "a", "b") == 4
    assert rb.bitop("Xor", "r3", "a", "b") == 4
    assert rb.mget("r1", "r2", "r3") == [b"\x01\x02\xff\x00", b"\x01\x02\xff\xff", b"\x00\x00\x00\xff"]
    rb.set("n", b"\xaa\x00\xff\x55")
    assert rb.bitop("NOT", "r4", "n") == 4
    assert rb.get("r4") == b"\x55\xff\x00\xaa"
    # A key may be both source and destination.
    assert rb.bitop("NOT", "n", "n") == 4
    assert rb.get("n") == b"\x55\xff\x00\xaa"
    # One source: unchanged.
    for op in ("AND", "OR", "XOR"):
        assert rb.bitop(op, "one", "b") == 3
        assert rb.get("one") == b"\x01\x02\xff"


def test_bitop_missing_sources_are_zeros(rb):
    rb.set("a", b"\x01\x02\xff")
    assert rb.bitop("AND", "r", "missing", "a") == 3
    assert rb.get("r") == b"\x00\x00\x00"
    assert rb.bitop("OR", "r", "missing", "a", "missing2") == 3
    assert rb.get("r") == b"\x01\x02\xff"
    assert rb.bitop("XOR", "r", "missing", "a") == 3
    assert rb.get("r") == b"\x01\x02\xff"
    rb.set("z", b"\x00" * 32)
    assert rb.bitop("OR", "r", "z", "missing") == 32


def test_bitop_matches_a_model(rb):
    import random

    rng = random.Random(7)
    for op in ("and", "or", "xor"):
        for _ in range(5):
            vecs = [bytes(rng.randrange(256) for _ in range(rng.randrange(0, 200))) for _ in range(rng.randrange(1, 6))]
            keys = [f"v{i}" for i in range(len(vecs))]
            for k, v in zip(keys, vecs):
                rb.set(k, v)
            n = max(len(v) for v in vecs)
            padded = [v + b"\x00" * (n - len(v)) for v in vecs]
            out = bytearray(padded[0])
            for v in padded[1:]:
                for i in range(n):
                    out[i] = out[i] & v[i] if op == "and" else out[i] | v[i] if op == "or" else out[i] ^ v[i]
            assert rb.bitop(op, "dest", *keys) == n
            assert rb.get("dest") == (bytes(out) if n else None)


def test_bitop_empty_result_deletes_the_destination(rb):
    rb.set("dest", "old")
    rb.set("empty", "")
    assert rb.bitop("OR", "dest", "missing") == 0
    assert rb.exists("dest") == 0
    rb.set("dest", "old")
    assert rb.bitop("NOT", "dest", "empty") == 0
    assert rb.exists("dest") == 0
    assert rb.bitop("AND", "dest", "missing", "empty") == 0
    assert rb.exists("dest") == 0


def test_bitop_integer_sources_and_ttl(rb):
    rb.set("a", 1)
    rb.set("b", 2)
    assert rb.bitop("XOR", "dest", "a", "b", "a") == 1
    assert rb.get("dest") == b"2"
    rb.set("dest", "x", ex=1000)
    rb.bitop("OR", "dest", "a")
    assert rb.ttl("dest") == -1  # a new value: the old TTL goes


def test_bitop_errors(r):
    r.set("a", "x")
    with raises("BITOP NOT must be called with a single source key."):
        r.execute_command("BITOP", "NOT", "dest", "a", "a")
    with raises("syntax error"):
        r.execute_command("BITOP", "NAND", "dest", "a")
    with raises("syntax error"):
        r.execute_command("BITOP", "andx", "dest", "a", "a")
    with raises("wrong number of arguments for 'bitop' command"):
        r.execute_command("BITOP", "AND", "dest")
    assert r.exists("dest") == 0


# BITFIELD


def test_bitfield_set_get_basics(r):
    assert bf(r, "bits", "SET", "i8", 0, -100) == [0]
    assert bf(r, "bits", "SET", "i8", 0, 101) == [-100]
    assert bf(r, "bits", "GET", "i8", 0) == [101]
    r.delete("bits")
    assert bf(r, "bits", "SET", "u8", 0, 255) == [0]
    assert bf(r, "bits", "SET", "u8", 0, 100) == [255]
    assert bf(r, "bits", "get", "u8", 0) == [100]
    r.delete("bits")
    assert bf(r, "bits", "SET", "i8", 0, 255, "SET", "i8", 0, 100, "GET", "i8", 0) == [0, -1, 100]
    r.delete("bits")
    assert bf(r, "bits", "SET", "u8", 0, 255, "INCRBY", "u8", 0, 100, "GET", "u8", 0) == [0, 99, 99]
    assert bf(r, "nothing") == []
    assert r.exists("nothing") == 0


def test_bitfield_layout_and_hash_offsets(rb):
    assert bf(rb, "bits", "SET", "u8", "#0", 65, "SET", "u8", "#1", 66, "SET", "u8", "#2", 67) == [0, 0, 0]
    assert rb.get("bits") == b"ABC"
    rb.delete("bits")
    bf(rb, "bits", "SET", "u5", 7, 23)
    assert rb.get("bits") == b"\x01\x70"
    assert bf(rb, "bits", "GET", "u5", 7, "GET", "i5", 7, "GET", "u4", "#2") == [23, -9, 7]
    rb.set("s", 1)  # "1" = 0x31
    assert bf(rb, "s", "GET", "u1", 0, "GET", "u8", 0, "GET", "u16", 0) == [0, 0x31, 0x3100]


def test_bitfield_incrby_and_overflow(r):
    r.execute_command("BITFIELD", "bits", "SET", "u8", "#0", 10)
    assert bf(r, "bits", "INCRBY", "u8", "#0", 100, "INCRBY", "u8", "#0", 100) == [110, 210]
    r.delete("bits")
    bf(r, "bits", "SET", "u8", "#0", 100)
    assert bf(r, "bits", "OVERFLOW", "WRAP", "INCRBY", "u8", "#0", 257) == [101]
    assert bf(r, "bits", "overflow", "wrap", "INCRBY", "u8", "#0", 255, "GET", "u8", "#0") == [100, 100]
    assert bf(r, "bits", "OVERFLOW", "SAT", "INCRBY", "u8", "#0", 257) == [255]
    assert bf(r, "bits", "OVERFLOW", "SAT", "INCRBY", "u8", "#0", -256) == [0]
    r.delete("bits")
    bf(r, "bits", "SET", "i8", "#0", 100)
    assert bf(r, "bits", "OVERFLOW", "WRAP", "INCRBY", "i8", "#0", 257) == [101]
    assert bf(r, "bits", "OVERFLOW", "SAT", "INCRBY", "i8", "#0", 257) == [127]
    assert bf(r, "bits", "OVERFLOW", "SAT", "INCRBY", "i8", "#0", -1000) == [-128]
    # FAIL answers nil and writes nothing; the mode applies to the operations after it.
    assert bf(r, "bits", "OVERFLOW", "FAIL", "INCRBY", "i8", 0, -1, "GET", "i8", 0,
              "OVERFLOW", "WRAP", "INCRBY", "i8", 0, -1) == [None, -128, 127]
    assert bf(r, "bits", "OVERFLOW", "FAIL", "SET", "u2", 0, 4, "SET", "u2", 0, 3) == [None, 1]


def test_bitfield_set_out_of_range_values(r):
    # As Redis: a negative SET value of an unsigned type overflows upwards (SAT stores the maximum).
    assert bf(r, "b", "OVERFLOW", "FAIL", "SET", "u8", 0, -1) == [None]
    assert bf(r, "b", "OVERFLOW", "SAT", "SET", "u8", 0, -1, "GET", "u8", 0) == [0, 255]
    assert bf(r, "b", "OVERFLOW", "WRAP", "SET", "u8", 0, 256 + 7, "GET", "u8", 0) == [255, 7]
    assert bf(r, "b", "OVERFLOW", "SAT", "SET", "i8", 0, -129, "GET", "i8", 0) == [7, -128]
    assert bf(r, "b", "OVERFLOW", "WRAP", "SET", "i8", 0, 200, "GET", "i8", 0) == [-128, -56]
    # Redis's comparison in two's complement: i64's minimum set in an i8 saturates at the maximum.
    assert bf(r, "b", "OVERFLOW", "SAT", "SET", "i8", 0, -2**63, "GET", "i8", 0) == [-56, 127]


def test_bitfield_64_bit_edges(r):
    assert bf(r, "b", "SET", "i64", 0, 2**63 - 1, "GET", "i64", 0, "GET", "u63", 0) == [0, 2**63 - 1, 2**62 - 1]
    assert bf(r, "b", "INCRBY", "i64", 0, 1) == [-2**63]
    assert bf(r, "b", "OVERFLOW", "SAT", "INCRBY", "i64", 0, -1) == [-2**63]
    assert bf(r, "b", "OVERFLOW", "FAIL", "INCRBY", "i64", 0, -1, "INCRBY", "i64", 0, 2**63 - 1) == [None, -1]
    r.delete("b")
    assert bf(r, "b", "SET", "u63", 1, 2**63 - 1, "GET", "u63", 1, "GET", "i64", 0) == [0, 2**63 - 1, 2**63 - 1]
    assert bf(r, "b", "OVERFLOW", "SAT", "INCRBY", "u63", 1, 5, "INCRBY", "u63", 1, -2**63) == [2**63 - 1, 0]
    r.delete("c")
    assert bf(r, "c", "SET", "i64", 3, -2, "GET", "i64", 3, "GET", "u8", 0) == [0, -2, 31]
    assert r.strlen("c") == 9


def test_bitfield_regression_3564(r):
    for _ in range(3):
        r.delete("m")
        assert bf(r, "m", "SET", "i8", 0, 10, "SET", "i8", 64, 10, "INCRBY", "i8", 10, 99900) == [0, 0, 60]


def test_bitfield_growth_and_reads(r):
    # Reads never create or grow the key.
    assert bf(r, "k", "GET", "u8", 1000, "GET", "i64", MAX_BITS - 64) == [0, 0]
    assert r.exists("k") == 0
    assert r.execute_command("BITFIELD_RO", "k", "GET", "u8", 0) == [0]
    assert r.exists("k") == 0
    # A write grows the string to its highest bit first, even when it then fails on overflow.
    assert bf(r, "k", "OVERFLOW", "FAIL", "INCRBY", "u2", 100, 5) == [None]
    assert r.strlen("k") == 13
    assert r.get("k") == "\x00" * 13
    bf(r, "k", "SET", "u8", 200, 1, "GET", "u8", 0)
    assert r.strlen("k") == 26


def test_bitfield_keeps_the_ttl(r):
    r.set("k", "abc", px=1_000_000)
    bf(r, "k", "SET", "u8", 100, 1)
    assert 990_000 <= r.pttl("k") <= 1_000_000


@pytest.mark.parametrize("ty", ["u64", "i65", "i0", "u0", "I8", "U8", "x8", "i", "", "i-1", "i08", "i 8", "8"])
def test_bitfield_type_errors(r, ty):
    with raises(TYPE_ERR):
        bf(r, "k", "GET", ty, 0)
    with raises(TYPE_ERR):
        r.execute_command("BITFIELD_RO", "k", "GET", ty, 0)


def test_bitfield_errors(r):
    for off in ("-1", "x", "#", "#-1", "##1", str(MAX_BITS), "#9223372036854775807", "#67108864"):
        with raises(OFFSET_ERR):
            bf(r, "k", "GET", "i64", off)
    assert bf(r, "k", "GET", "i64", "#67108863") == [0]
    with raises("Invalid OVERFLOW type specified"):
        bf(r, "k", "OVERFLOW", "SATURATE", "GET", "u8", 0)
    for args in (["GET", "u8"], ["SET", "u8", 0], ["INCRBY", "u8", 0], ["OVERFLOW"], ["FOO", "u8", 0],
                 ["GET", "u8", 0, "SET"], ["GET", "u8", 0, "extra"]):
        with raises("syntax error"):
            bf(r, "k", *args)
    for args in (["SET", "u8", 0, "x"], ["INCRBY", "u8", 0, "1.5"], ["SET", "i8", 0, "9223372036854775808"]):
        with raises(NOT_INT):
            bf(r, "k", *args)
    # The first bad argument is the error, and nothing runs.
    with raises(TYPE_ERR):
        bf(r, "k", "SET", "u8", 0, 1, "GET", "u64", 0)
    with raises(OFFSET_ERR):
        bf(r, "k", "SET", "u8", -1, "x")
    assert r.exists("k") == 0
    with raises("wrong number of arguments for 'bitfield' command"):
        r.execute_command("BITFIELD")


def test_bitfield_ro(r):
    bf(r, "k", "SET", "u8", 0, 100)
    assert r.execute_command("BITFIELD_RO", "k", "GET", "u8", 0, "GET", "i4", 4) == [100, 4]
    assert r.execute_command("BITFIELD_RO", "k") == []
    assert r.execute_command("BITFIELD_RO", "k", "OVERFLOW", "FAIL", "GET", "u8", 0) == [100]
    for args in (["SET", "u8", 0, 1], ["GET", "u8", 0, "INCRBY", "u8", 0, 1]):
        with raises("BITFIELD_RO only supports the GET subcommand"):
            r.execute_command("BITFIELD_RO", "k", *args)
    # Parse errors come before the read-only check.
    with raises(NOT_INT):
        r.execute_command("BITFIELD_RO", "k", "SET", "u8", 0, "x")
    assert bf(r, "k", "GET", "u8", 0) == [100]


def test_bitfield_nil_in_resp3_and_resp2(raw):
    """A FAILed operation is a null element: `_` in RESP3, `$-1` in RESP2."""
    failing = encode("BITFIELD", "k", "OVERFLOW", "FAIL", "SET", "u1", 0, 2)
    for proto, null in (("3", b"_"), ("2", b"$-1")):
        raw.call("HELLO", proto)
        raw.send(failing)
        assert raw.read_line() == b"*1"
        assert raw.read_line() == null


# Metadata


def test_command_info(raw):
    info = raw.call("COMMAND", "INFO", "setbit", "getbit", "bitcount", "bitpos", "bitop", "bitfield", "bitfield_ro")

    def text(x):
        return x.decode() if isinstance(x, bytes) else str(x)

    got = {text(row[0]): (row[1], sorted(map(text, row[2])), row[3:6], sorted(map(text, row[6]))) for row in info}
    w, ro, rof = ["denyoom", "write"], ["readonly"], ["fast", "readonly"]
    assert got == {
        "setbit": (4, w, [1, 1, 1], ["@bitmap", "@slow", "@write"]),
        "getbit": (3, rof, [1, 1, 1], ["@bitmap", "@fast", "@read"]),
        "bitcount": (-2, ro, [1, 1, 1], ["@bitmap", "@read", "@slow"]),
        "bitpos": (-3, ro, [1, 1, 1], ["@bitmap", "@read", "@slow"]),
        "bitop": (-4, w, [2, -1, 1], ["@bitmap", "@slow", "@write"]),
        "bitfield": (-2, w, [1, 1, 1], ["@bitmap", "@slow", "@write"]),
        "bitfield_ro": (-2, rof, [1, 1, 1], ["@bitmap", "@fast", "@read"]),
    }


# WATCH and OBJECT ENCODING


def exec_aborted(r, port, key, *cmd) -> bool:
    """WATCH `key`, run `cmd` from another connection, then try a transaction: True if it aborted."""
    with r.pipeline() as p:
        p.watch(key)
        with Raw(port) as other:
            reply = other.call(*cmd)
            assert not isinstance(reply, RespError), reply
        p.multi()
        p.ping()
        try:
            p.execute()
        except WatchError:
            return True
        return False


def test_watch_sees_only_real_changes(r, server):
    port = server.port
    r.setbit("k", 3, 1)
    assert not exec_aborted(r, port, "k", "SETBIT", "k", 3, 1)
    assert not exec_aborted(r, port, "k", "SETBIT", "k", 4, 0)
    assert exec_aborted(r, port, "k", "SETBIT", "k", 3, 0)
    assert exec_aborted(r, port, "k", "SETBIT", "k", 100, 0)  # grows
    assert exec_aborted(r, port, "new", "SETBIT", "new", 0, 0)  # creates
    assert not exec_aborted(r, port, "k", "GETBIT", "k", 3)
    assert not exec_aborted(r, port, "k", "BITFIELD", "k", "SET", "u8", 0, 0)
    assert not exec_aborted(r, port, "k", "BITFIELD", "k", "INCRBY", "u8", 0, 0)
    assert not exec_aborted(r, port, "k", "BITFIELD", "k", "GET", "u8", 0)
    assert not exec_aborted(r, port, "k", "BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "u8", 0, 256)
    assert exec_aborted(r, port, "k", "BITFIELD", "k", "SET", "u8", 0, 1)
    assert exec_aborted(r, port, "k", "BITFIELD", "k", "SET", "u8", 1000, 0)  # grows
    # Created by a write that failed on overflow: the key exists, yet WATCH saw no change.
    assert not exec_aborted(r, port, "f", "BITFIELD", "f", "OVERFLOW", "FAIL", "INCRBY", "u2", 100, 5)
    assert r.strlen("f") == 13
    # BITOP: storing always counts, an empty result only if it deleted something.
    assert not exec_aborted(r, port, "d", "BITOP", "OR", "d", "missing")
    assert exec_aborted(r, port, "d", "BITOP", "OR", "d", "k")
    assert exec_aborted(r, port, "d", "BITOP", "OR", "d", "k")
    assert exec_aborted(r, port, "d", "BITOP", "OR", "d", "missing")
    assert r.exists("d") == 0


def test_bit_writes_leave_strings_raw(r):
    r.set("n", 1)
    assert r.object("encoding", "n") == "int"
    r.setbit("n", 2, 1)  # no change, yet Redis made the value raw to write it
    assert r.get("n") == "1"
    assert r.object("encoding", "n") == "raw"
    r.set("m", 1)
    r.setbit("m", 6, 1)
    assert r.get("m") == "3"
    assert r.object("encoding", "m") == "raw"
    r.set("f", 7)
    bf(r, "f", "GET", "u8", 0)
    assert r.object("encoding", "f") == "int"
    bf(r, "f", "SET", "u8", 0, ord("8"))
    assert r.object("encoding", "f") == "raw"
    r.set("a", 1)
    r.set("b", 2)
    r.bitop("XOR", "x", "a", "b", "a")
    assert r.get("x") == "2"
    assert r.object("encoding", "x") == "raw"
    r.bitop("OR", "x", "missing")
    assert r.object("encoding", "x") is None
    r.setbit("x", 0, 0)
    assert r.object("encoding", "x") == "raw"


# Memory


def test_bit_writes_get_oom_on_a_full_noeviction_server(start_server):
    """Over maxmemory under noeviction, bit writes that need memory get Redis's OOM error and change
    nothing; reads still answer. The server is pushed over by lowering maxmemory below what it holds
    (Redis then refuses every denyoom command; Locus gives back pages and has no room left)."""
    srv = start_server(maxmemory=16 * 1024 * 1024, policy="noeviction")
    with Raw(srv.port) as c:
        # Values above an eighth of a page: Locus does not drop them when maxmemory shrinks.
        small = b"abc" + b"\x00" * 4093
        assert c.call("SET", "small", small) == "OK"
        assert c.call("SET", "src", b"\x0f" * 65536) == "OK"
        fill = [f"fill:{i}" for i in range(8000)]
        for i in range(0, len(fill), 500):
            c.send(b"".join(encode("SET", k, "x" * 1000) for k in fill[i:i + 500]))
            assert all(c.read() == "OK" for _ in fill[i:i + 500])
        assert c.call("CONFIG", "SET", "maxmemory", 8 * 1024 * 1024) == "OK"
        big_bit = 65536 * 8
        for cmd in (["SETBIT", "new", big_bit, 1], ["SETBIT", "small", big_bit, 1],
                    ["BITFIELD", "small", "SET", "u8", big_bit, 1], ["BITFIELD", "new", "SET", "i64", big_bit, 1],
                    ["BITOP", "NOT", "dest", "src"]):
            assert c.call(*cmd) == OOM, cmd
        assert c.call("EXISTS", "new", "dest") == 0
        assert c.call("GET", "small") == small
        # Reads still work.
        assert c.call("GETBIT", "small", 1) == 1
        assert c.call("BITCOUNT", "src") == 65536 * 4
        assert c.call("BITPOS", "src", 1) == 4
        assert c.call("BITFIELD_RO", "src", "GET", "u8", 0) == [15]
        # Once memory is given back, the same writes succeed.
        c.call("DEL", *fill)
        assert c.call("SETBIT", "small", big_bit, 1) == 0
        assert c.call("STRLEN", "small") == 65537
        assert c.call("BITOP", "NOT", "dest", "src") == 65536


@pytest.mark.locus_only
def test_bit_write_larger_than_any_item_is_refused(start_server):
    """A SETBIT, BITFIELD or BITOP result larger than maxmemory is refused before it is built, with
    Redis's OOM error; the key keeps its value. (Redis would build it and evict.)"""
    srv = start_server(maxmemory=4 * 1024 * 1024, policy="allkeys-lru")
    with Raw(srv.port) as c:
        assert c.call("SET", "k", "abc", "EX", 1000) == "OK"
        for cmd in (["SETBIT", "k", 5 * 1024 * 1024 * 8, 1], ["BITFIELD", "k", "SET", "u8", 5 * 1024 * 1024 * 8, 1],
                    ["SETBIT", "new", 5 * 1024 * 1024 * 8, 1]):
            reply = c.call(*cmd)
            assert isinstance(reply, str) and reply.startswith("OOM"), reply
        assert c.call("GET", "k") == b"abc"
        assert c.call("TTL", "k") > 0
        assert c.call("EXISTS", "new") == 0
