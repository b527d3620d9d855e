"""The `struct` library of scripts (struct.pack, struct.unpack, struct.size): the format
language (endianness, alignment, every integer size, floats, strings), unpack's start position
and the next position it returns, and the errors of malformed formats, short data and
out-of-range sizes, each with Redis's wording. Every assertion runs against redis-server 7.0 too
(`--peer redis`)."""

import pytest
import redis


def err(c, script, *args):
    with pytest.raises(redis.ResponseError) as e:
        c.eval(script, 0, *args)
    return str(e.value)


def pack(rb, fmt, *values):
    """struct.pack(fmt, ARGV...) with every value a number, as a Lua script passes them."""
    return rb.eval("local a = {} for i = 2, #ARGV do a[#a + 1] = tonumber(ARGV[i]) end "
                   "return struct.pack(ARGV[1], unpack(a))", 0, fmt, *values)


def unpack(rb, fmt, data, *pos):
    """The values of struct.unpack as strings (numbers with %.17g), then the next position."""
    return rb.eval("local r = {struct.unpack(ARGV[1], ARGV[2], tonumber(ARGV[3]))} "
                   "for i = 1, #r do if type(r[i]) == 'number' then "
                   "r[i] = string.format('%.17g', r[i]) end end return r",
                   0, fmt, data, *pos)


def test_integers_both_endiannesses(rb):
    assert pack(rb, "<i", 1) == b"\x01\x00\x00\x00"
    assert pack(rb, ">i", 1) == b"\x00\x00\x00\x01"
    assert pack(rb, "<h>h", 0x1234, 0x1234) == b"\x34\x12\x12\x34"
    assert pack(rb, "bB", -1, 255) == b"\xff\xff"
    assert pack(rb, "<l", -2) == b"\xfe" + b"\xff" * 7
    assert pack(rb, ">L", 1) == b"\x00" * 7 + b"\x01"
    assert pack(rb, "<T", 258) == b"\x02\x01" + b"\x00" * 6
    # i/I with an explicit size, up to 32 bytes (past 8 the high bytes are zero).
    assert pack(rb, ">i3", -2) == b"\xff\xff\xfe"
    assert pack(rb, "<I2", 65535) == b"\xff\xff"
    assert pack(rb, "<i16", 1) == b"\x01" + b"\x00" * 15
    assert pack(rb, "i0", 5) == b""
    # Values wrap to the size, as C's truncation does.
    assert pack(rb, "b", 300) == b"\x2c"
    assert pack(rb, "<i", 2.9) == b"\x02\x00\x00\x00"
    assert pack(rb, "<i", -2.9) == b"\xfe\xff\xff\xff"


def test_unpack_integers(rb):
    assert unpack(rb, "<i", b"\xfe\xff\xff\xff") == [b"-2", b"5"]
    assert unpack(rb, "<I", b"\xfe\xff\xff\xff") == [b"4294967294", b"5"]
    assert unpack(rb, ">h", b"\x80\x00") == [b"-32768", b"3"]
    assert unpack(rb, "bB", b"\xff\xff") == [b"-1", b"255", b"3"]
    assert unpack(rb, "<i3", b"\xff\xff\x7f") == [b"8388607", b"4"]
    assert unpack(rb, ">l", b"\xff" * 8) == [b"-1", b"9"]
    assert unpack(rb, ">L", b"\x00\x00\x00\x01\x00\x00\x00\x00") == [b"4294967296", b"9"]
    assert unpack(rb, "i0", b"") == [b"0", b"1"]
    # Sizes past 8 bytes keep the low 8 bytes read.
    assert unpack(rb, "<I12", b"\x01" + b"\x00" * 11) == [b"1", b"13"]
    assert unpack(rb, ">I12", b"\x00" * 11 + b"\x02") == [b"2", b"13"]


def test_out_of_range_numbers_reply_as_redis(r):
    # An unpacked 64-bit value past 2^63 is a double Lua cannot reply exactly: Redis's C cast
    # gives the minimum integer (as for NaN and the infinities).
    assert r.eval("return struct.unpack('>L', ARGV[1])", 0, b"\xff" * 8) == -9223372036854775808
    assert r.eval("return {2^63, -2^70, 0/0, 1/0, 2^62, -3.5}", 0) == [
        -9223372036854775808, -9223372036854775808, -9223372036854775808,
        -9223372036854775808, 4611686018427387904, -3]


def test_floats(rb):
    assert pack(rb, "<d", 1.5) == b"\x00\x00\x00\x00\x00\x00\xf8\x3f"
    assert pack(rb, ">d", 1.5) == b"\x3f\xf8\x00\x00\x00\x00\x00\x00"
    assert pack(rb, "<f", 0.5) == b"\x00\x00\x00\x3f"
    assert pack(rb, ">f", -2) == b"\xc0\x00\x00\x00"
    assert unpack(rb, ">d", b"\x3f\xf8\x00\x00\x00\x00\x00\x00") == [b"1.5", b"9"]
    assert unpack(rb, "<f", pack(rb, "<f", 0.1)) == [b"0.10000000149011612", b"5"]
    assert unpack(rb, ">f", b"\xc0\x00\x00\x00") == [b"-2", b"5"]


def test_strings(rb):
    s = "return struct.pack(ARGV[1], ARGV[2])"
    assert rb.eval(s, 0, "c3", "abcdef") == b"abc"
    assert rb.eval(s, 0, "c0", "abcdef") == b"abcdef"
    assert rb.eval(s, 0, "c", "xyz") == b"x"
    assert rb.eval(s, 0, "s", "ab") == b"ab\x00"
    assert rb.eval(s, 0, "s", "a\x00b") == b"a\x00b\x00"
    # A number where a string goes is Lua's text of it (%.14g).
    assert rb.eval("return struct.pack('c0', 12.5)", 0) == b"12.5"
    assert rb.eval("return struct.pack('s', 1/3)", 0) == b"0.33333333333333\x00"
    assert unpack(rb, "c3", b"abcdef") == [b"abc", b"4"]
    assert unpack(rb, "s s", b"ab\x00cd\x00e") == [b"ab", b"cd", b"7"]
    assert unpack(rb, "s", b"\x00") == [b"", b"2"]
    # c0 takes its length from the value unpacked just before (which it replaces).
    assert unpack(rb, "B c0 B", b"\x03abc\x09") == [b"abc", b"9", b"6"]
    assert unpack(rb, "c1 c0", b"2xyz") == [b"xy", b"4"]
    assert unpack(rb, "Bc0", b"\x00") == [b"", b"2"]


def test_padding_alignment_and_spaces(rb):
    assert pack(rb, "bxb", 1, 2) == b"\x01\x00\x02"
    assert pack(rb, "!4 b i", 1, 2) == b"\x01\x00\x00\x00\x02\x00\x00\x00"
    assert pack(rb, "! b d", 1, 0) == b"\x01" + b"\x00" * 15
    assert pack(rb, "!2 b i", 1, 2) == b"\x01\x00\x02\x00\x00\x00"
    # Without `!` the alignment is 1: packed.
    assert pack(rb, "b i", 1, 2) == b"\x01\x02\x00\x00\x00"
    # c is never aligned; s neither.
    assert rb.eval("return struct.pack('!4 b c2 i', 1, 'ab', 2)", 0) == \
        b"\x01ab\x00\x02\x00\x00\x00"
    assert unpack(rb, "!4 b i", b"\x01\x00\x00\x00\x02\x00\x00\x00") == [b"1", b"2", b"9"]
    assert unpack(rb, " < > <i ", b"\x05\x00\x00\x00") == [b"5", b"5"]


def test_size(r):
    assert r.eval("return struct.size('')", 0) == 0
    assert r.eval("return struct.size('bhilTfd')", 0) == 1 + 2 + 4 + 8 + 8 + 4 + 8
    assert r.eval("return struct.size('!8 b d')", 0) == 16
    assert r.eval("return struct.size('!4 b d')", 0) == 12
    assert r.eval("return struct.size('c10 x i7')", 0) == 18
    assert r.eval("return struct.size('i32')", 0) == 32
    # Letters that are no option count for nothing in size (pack and unpack refuse them).
    assert r.eval("return struct.size('bzb')", 0) == 2


def test_unpack_start_position_and_next(rb):
    data = b"\x01\x02\x03\x04"
    assert unpack(rb, "B", data, 3) == [b"3", b"4"]
    assert unpack(rb, "BB", data, 1) == [b"1", b"2", b"3"]
    # The next position feeds the next call: walk a record list.
    got = rb.eval("local pos, out = 1, {} while pos <= #ARGV[1] do local v v, pos = "
                  "struct.unpack('>h', ARGV[1], pos) out[#out + 1] = v end return out",
                  0, b"\x00\x01\xff\xff\x00\x03")
    assert got == [1, -1, 3]
    assert unpack(rb, "", b"abc", 4) == [b"4"]
    # A position as a numeric string is accepted; a fraction is truncated.
    assert rb.eval("return {struct.unpack('B', 'abc', '2')}", 0) == [98, 3]
    assert rb.eval("return {struct.unpack('B', 'abc', 2.7)}", 0) == [98, 3]


def test_round_trip_through_a_key(r):
    r.set("rec", "x")
    got = r.eval("redis.call('set', KEYS[1], struct.pack('>I2 s d', 513, 'name', -0.25)) "
                 "local a, b, c, nxt = struct.unpack('>I2 s d', redis.call('get', KEYS[1])) "
                 "return {a, b, tostring(c), nxt}", 1, "rec")
    assert got == [513, "name", "-0.25", 16]


@pytest.mark.parametrize("script, message", [
    ("return struct.pack('i33', 1)", "integral size 33 is larger than limit of 32"),
    ("return struct.size('I100')", "integral size 100 is larger than limit of 32"),
    ("return struct.unpack('i40', 'x')", "integral size 40 is larger than limit of 32"),
    ("return struct.pack('i99999999999', 1)", "integral size overflow"),
    ("return struct.size('c99999999999')", "integral size overflow"),
    ("return struct.pack('!99999999999')", "integral size overflow"),
    ("return struct.pack('!3 b', 1)", "alignment 3 is not a power of 2"),
    ("return struct.size('!0')", "alignment 0 is not a power of 2"),
    ("return struct.pack('y', 1)", "bad argument #1 to 'pack' (invalid format option 'y')"),
    ("return struct.pack('=i', 1)", "bad argument #1 to 'pack' (invalid format option '=')"),
    ("return struct.unpack('q', 'abc')", "bad argument #1 to 'unpack' (invalid format option 'q')"),
    ("return struct.size('b?')", "bad argument #1 to 'size' (invalid format option '?')"),
    ("return struct.size('bs')", "bad argument #1 to 'size' (option 's' has no fixed size)"),
    ("return struct.size('c0')", "bad argument #1 to 'size' (option 'c0' has no fixed size)"),
    ("return struct.pack('i')", "bad argument #2 to 'pack' (number expected, got nil)"),
    ("return struct.pack('bb', 1, 'x')", "bad argument #3 to 'pack' (number expected, got string)"),
    ("return struct.pack('d', {})", "bad argument #2 to 'pack' (number expected, got table)"),
    ("return struct.pack('s', nil)", "bad argument #2 to 'pack' (string expected, got nil)"),
    ("return struct.pack('c5', 'abc')", "bad argument #3 to 'pack' (string too short)"),
    ("return struct.pack()", "bad argument #1 to 'pack' (string expected, got no value)"),
    ("return struct.unpack('i')", "bad argument #2 to 'unpack' (string expected, got no value)"),
    ("return struct.unpack('i', 'abc')", "bad argument #2 to 'unpack' (data string too short)"),
    ("return struct.unpack('b', 'abc', 4)", "bad argument #2 to 'unpack' (data string too short)"),
    ("return struct.unpack('<', 'abc', 5)", "bad argument #2 to 'unpack' (data string too short)"),
    ("return struct.unpack('b', 'abc', -1)", "bad argument #2 to 'unpack' (data string too short)"),
    ("return struct.unpack('c99999', 'abc')", "bad argument #2 to 'unpack' (data string too short)"),
    ("return struct.unpack('b', 'abc', 0)", "bad argument #3 to 'unpack' (offset must be 1 or greater)"),
    ("return struct.unpack('b', 'abc', 'x')", "bad argument #3 to 'unpack' (number expected, got string)"),
    ("return struct.unpack('c0', 'abc')", "format 'c0' needs a previous size"),
    ("return struct.unpack('c1c0', 'abc')", "format 'c0' needs a previous size"),
    ("return struct.unpack('B c0', '\\9abc')", "bad argument #2 to 'unpack' (data string too short)"),
    ("return struct.unpack('s', 'abc')", "unfinished string in data"),
    ("return struct.unpack(string.rep('b', 9000), string.rep('x', 9000))",
     "stack overflow (too many results)"),
])
def test_errors(r, script, message):
    # (redis-py drops the reply's "ERR " code.) The error names the script's line, as Lua's
    # luaL_error does for a C function's caller.
    e = err(r, script)
    assert e.startswith("user_script:1: " + message + " script: "), e
    assert e.endswith(", on @user_script:1."), e


def test_argument_errors_name_the_function_as_called(r):
    e = err(r, "local p = struct.pack\nreturn p('y')")
    assert e.startswith("user_script:2: bad argument #1 to 'p' (invalid format option 'y')"), e


def test_errors_reach_pcall_as_strings(r):
    # Called by pcall (a C function), the message has no position.
    assert r.eval("local ok, e = pcall(struct.pack, 'i33', 1) return {tostring(ok), e}", 0) == [
        "false", "integral size 33 is larger than limit of 32"]
    assert r.eval("local ok, e = pcall(struct.unpack, 's', 'abc') return e", 0) == \
        "unfinished string in data"


def test_struct_is_read_only(r):
    e = err(r, "struct.pack = nil")
    assert "Attempt to modify a readonly table" in e
    e = err(r, "struct.extra = 1")
    assert "Attempt to modify a readonly table" in e
    assert r.eval("return type(struct.size)", 0) == "function"


def test_many_results_below_the_limit(r):
    got = r.eval("return select('#', struct.unpack(string.rep('b', 7000), string.rep('x', 7000)))", 0)
    assert got == 7001
