//! Bitmap commands on string values: SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD BITFIELD_RO.
//!
//! Bits are numbered as Redis numbers them: bit 0 is the most significant bit of the first byte,
//! so a bitmap reads left to right and a BITFIELD integer at a byte-aligned offset is big-endian.
//!
//! ```text
//!   byte 0          byte 1
//!  +----------------+----------------+
//!  |0 1 2 3 4 5 6 7 |8 9 ...         |   SETBIT k 9 1  ->  "\x00\x40"
//!  +----------------+----------------+
//! ```
//!
//! Reads treat a string as followed by zero bits without end; writes grow it with zero bytes up
//! to the highest bit they reach. A bit offset is refused past `proto-max-bulk-len` bytes, and a
//! value the engine cannot hold is refused before it is built (item too large, or OOM from the
//! engine), leaving the key as it was.
//!
//! Writers copy the value out, change the copy and store it back keeping its TTL; a SETBIT or
//! BITFIELD that changes nothing stores nothing. As in Redis, a WATCHed key counts as modified
//! only when a bit changed or the string was created or grew (BITOP: whenever it stores or
//! deletes its destination). The reply does not tell which, so these handlers report their
//! writes to WATCH and OBJECT ENCODING themselves (`wrote_nothing` in the dispatcher leaves them
//! out).

use locus_engine::{Expire, SetCond, SetOptions, TenantId};

use super::notify::{GENERIC, STRING, notify};
use super::strings::{check_fits, max_len};
use super::{Args, CmdError, CmdResult, Ctx, int_arg, is, parse_i64};

/// Redis's error for a bad or too large bit offset.
const BIT_OFFSET_ERR: &str = "ERR bit offset is not an integer or out of range";

/// Stores a rewritten value, keeping (`Expire::Keep`) or dropping (`Expire::Persist`) the TTL.
fn store(ctx: &mut Ctx<'_>, t: TenantId, key: &[u8], value: &[u8], expire: Expire) -> CmdResult {
    ctx.eng.set(
        t,
        key,
        value,
        SetOptions {
            expire,
            cond: SetCond::Always,
        },
    )?;
    Ok(())
}

/// Redis leaves a string that a bit command wrote, or looked up to write, raw-encoded: OBJECT
/// ENCODING says `raw` even for a short or numeric value. Above 44 bytes the value's shape says
/// `raw` already, and only a stale forced encoding has to go.
fn note_raw(ctx: &Ctx<'_>, t: TenantId, key: &[u8], len: usize) {
    let tag = if len <= 44 { "raw" } else { "setbit" };
    ctx.fx.note_encoding(tag, t, &[key]);
}

/// A bit offset, checked as Redis checks it: an integer, not negative, its byte below
/// `proto-max-bulk-len`. With `hash_bits` (BITFIELD), `#n` means `n * hash_bits`.
fn bit_offset(ctx: &Ctx<'_>, raw: &[u8], hash_bits: Option<u32>) -> Result<u64, CmdError> {
    let err = || CmdError::msg(BIT_OFFSET_ERR);
    let (digits, times) = match (raw.first(), hash_bits) {
        (Some(b'#'), Some(bits)) => (&raw[1..], i64::from(bits)),
        _ => (raw, 1),
    };
    // Redis multiplies without an overflow check; a product that wraps negative is refused.
    let off = parse_i64(digits).ok_or_else(err)?.wrapping_mul(times);
    if off < 0 || (off as u64 >> 3) >= max_len(ctx) {
        return Err(err());
    }
    Ok(off as u64)
}

/// Whether a range is in bytes or in bits (the BYTE|BIT option of BITCOUNT and BITPOS).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Unit {
    Byte,
    Bit,
}

fn unit_arg(raw: &[u8]) -> Result<Unit, CmdError> {
    if is(raw, "bit") {
        Ok(Unit::Bit)
    } else if is(raw, "byte") {
        Ok(Unit::Byte)
    } else {
        Err(CmdError::Syntax)
    }
}

/// The inclusive bit range `start..=end` covers in a string of `len` bytes, after Redis's
/// rules: negative indexes count from the end, both ends are clamped into the string. `None` for
/// an empty range.
fn bit_range(start: i64, end: i64, len: usize, unit: Unit) -> Option<(u64, u64)> {
    let total = match unit {
        Unit::Byte => len as i64,
        Unit::Bit => len as i64 * 8,
    };
    let from_end = |i: i64| if i < 0 { i + total } else { i };
    let start = from_end(start).max(0);
    let end = from_end(end).max(0).min(total - 1);
    if start > end {
        return None;
    }
    let (s, e) = (start as u64, end as u64);
    Some(match unit {
        Unit::Byte => (s * 8, e * 8 + 7),
        Unit::Bit => (s, e),
    })
}

/// The bits of byte `b` (of the range's first byte `sb` and last byte `eb`) that lie in the
/// inclusive bit range `s..=e`.
fn range_mask(b: usize, s: u64, e: u64) -> u8 {
    let lo = if b as u64 == s >> 3 { s & 7 } else { 0 };
    let hi = if b as u64 == e >> 3 { e & 7 } else { 7 };
    (0xffu8 >> lo) & (0xffu8 << (7 - hi))
}

/// Set bits in `v`, a word at a time.
fn popcount(v: &[u8]) -> u64 {
    let mut words = v.chunks_exact(8);
    let mut n: u64 = words
        .by_ref()
        .map(|w| u64::from(u64::from_ne_bytes(w.try_into().unwrap_or([0; 8])).count_ones()))
        .sum();
    n += words
        .remainder()
        .iter()
        .map(|b| u64::from(b.count_ones()))
        .sum::<u64>();
    n
}

/// Set bits of `v` in the inclusive bit range `s..=e` (`e` inside `v`).
fn count_range(v: &[u8], s: u64, e: u64) -> u64 {
    let (sb, eb) = ((s >> 3) as usize, (e >> 3) as usize);
    if sb == eb {
        return u64::from((v[sb] & range_mask(sb, s, e)).count_ones());
    }
    u64::from((v[sb] & range_mask(sb, s, e)).count_ones())
        + popcount(&v[sb + 1..eb])
        + u64::from((v[eb] & range_mask(eb, s, e)).count_ones())
}

/// The first bit equal to `one` in the inclusive bit range `s..=e` of `v` (`e` inside `v`).
fn find_bit(v: &[u8], s: u64, e: u64, one: bool) -> Option<u64> {
    let (sb, eb) = ((s >> 3) as usize, (e >> 3) as usize);
    // The byte's bits that are in range and hold the value sought, as ones.
    let hits = |b: usize| {
        let byte = if one { v[b] } else { !v[b] };
        byte & range_mask(b, s, e)
    };
    let at = |b: usize, x: u8| Some(b as u64 * 8 + u64::from(x.leading_zeros()));
    let first = hits(sb);
    if first != 0 {
        return at(sb, first);
    }
    if sb == eb {
        return None;
    }
    // Whole bytes between the edges: skip words of the other value, then find the byte.
    let skip = if one { 0u8 } else { 0xff };
    let middle = &v[sb + 1..eb];
    let mut b = 0;
    for w in middle.chunks_exact(8) {
        if w.iter().any(|&x| x != skip) {
            break;
        }
        b += 8;
    }
    if let Some(i) = middle[b..].iter().position(|&x| x != skip) {
        let b = sb + 1 + b + i;
        return at(b, hits(b));
    }
    let last = hits(eb);
    if last != 0 { at(eb, last) } else { None }
}

/// SETBIT key offset value: the bit's previous value.
pub fn setbit(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let off = bit_offset(ctx, &a[2], None)?;
    let bit_err = || CmdError::msg("ERR bit is not an integer or out of range");
    let on = parse_i64(&a[3]).ok_or_else(bit_err)?;
    if on & !1 != 0 {
        return Err(bit_err());
    }
    let key = &a[1][..];
    let byte = (off >> 3) as usize;
    let mask = 0x80u8 >> (off & 7);
    // The value to rewrite, or `None` when the bit already holds `on` inside the string.
    let (old, cur, len) = match ctx.eng.peek_str(t, key)? {
        Some(v) => {
            let old = v.get(byte).is_some_and(|b| b & mask != 0);
            let unchanged = byte < v.len() && old == (on == 1);
            (old, (!unchanged).then(|| v.to_vec()), v.len())
        }
        None => (false, Some(Vec::new()), 0),
    };
    let len = match cur {
        Some(mut v) => {
            if byte >= v.len() {
                check_fits(ctx, key, byte as u64 + 1)?;
                v.resize(byte + 1, 0);
            }
            if on == 1 {
                v[byte] |= mask;
            } else {
                v[byte] &= !mask;
            }
            store(ctx, t, key, &v, Expire::Keep)?;
            ctx.fx.key_changed(t, key);
            notify(ctx.fx, t, ctx.conn.db, STRING, "setbit", key);
            v.len()
        }
        None => len,
    };
    note_raw(ctx, t, key, len);
    ctx.w.integer(i64::from(old));
    Ok(())
}

/// GETBIT key offset
pub fn getbit(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let off = bit_offset(ctx, &a[2], None)?;
    let byte = (off >> 3) as usize;
    let mask = 0x80u8 >> (off & 7);
    let set = ctx
        .eng
        .get_str(t, &a[1])?
        .and_then(|v| v.get(byte))
        .is_some_and(|b| b & mask != 0);
    ctx.w.integer(i64::from(set));
    Ok(())
}

/// `BITCOUNT key [start end [BYTE|BIT]]`
pub fn bitcount(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    // As Redis: a missing key answers 0 before the arguments are looked at.
    let Some(v) = ctx.eng.get_str(t, &a[1])? else {
        ctx.w.integer(0);
        return Ok(());
    };
    let range = match a.len() {
        2 => bit_range(0, -1, v.len(), Unit::Byte),
        4 | 5 => {
            let start = int_arg(&a[2])?;
            let end = int_arg(&a[3])?;
            // Both negative and crossed: empty, even before the unit is checked.
            if start < 0 && end < 0 && start > end {
                None
            } else {
                let unit = match a.get(4) {
                    Some(u) => unit_arg(u)?,
                    None => Unit::Byte,
                };
                bit_range(start, end, v.len(), unit)
            }
        }
        _ => return Err(CmdError::Syntax),
    };
    let n = range.map_or(0, |(s, e)| count_range(v, s, e));
    ctx.w.integer(n as i64);
    Ok(())
}

/// `BITPOS key bit [start [end [BYTE|BIT]]]`
pub fn bitpos(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let bit = int_arg(&a[2])?;
    if bit != 0 && bit != 1 {
        return Err(CmdError::msg("ERR The bit argument must be 1 or 0."));
    }
    let one = bit == 1;
    // A missing key is zeros without end: no 1, and a 0 at once.
    let Some(v) = ctx.eng.get_str(t, &a[1])? else {
        ctx.w.integer(if one { -1 } else { 0 });
        return Ok(());
    };
    let (range, end_given) = match a.len() {
        3 => (bit_range(0, -1, v.len(), Unit::Byte), false),
        4..=6 => {
            let start = int_arg(&a[3])?;
            let unit = match a.get(5) {
                Some(u) => unit_arg(u)?,
                None => Unit::Byte,
            };
            let end = match a.get(4) {
                Some(e) => int_arg(e)?,
                None => -1,
            };
            (bit_range(start, end, v.len(), unit), a.len() >= 5)
        }
        _ => return Err(CmdError::Syntax),
    };
    let pos = match range {
        None => -1,
        Some((s, e)) => match find_bit(v, s, e, one) {
            Some(p) => p as i64,
            // Looking for a 0 without an end: the string continues with zeros past its end.
            None if !one && !end_given => e as i64 + 1,
            None => -1,
        },
    };
    ctx.w.integer(pos);
    Ok(())
}

/// A BITOP operation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

/// `BITOP AND|OR|XOR|NOT destkey key [key ...]`: the destination's length. Shorter and missing
/// sources count as zero bytes; an empty result deletes the destination.
pub fn bitop(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let op = if is(&a[1], "and") {
        BitOp::And
    } else if is(&a[1], "or") {
        BitOp::Or
    } else if is(&a[1], "xor") {
        BitOp::Xor
    } else if is(&a[1], "not") {
        BitOp::Not
    } else {
        return Err(CmdError::Syntax);
    };
    if op == BitOp::Not && a.len() != 4 {
        return Err(CmdError::msg(
            "ERR BITOP NOT must be called with a single source key.",
        ));
    }
    let mut res: Vec<u8> = Vec::new();
    for (i, k) in a[3..].iter().enumerate() {
        let src = ctx.eng.get_str(t, k)?.unwrap_or_default();
        if i == 0 {
            res.extend_from_slice(src);
            if op == BitOp::Not {
                res.iter_mut().for_each(|b| *b = !*b);
            }
            continue;
        }
        let common = res.len().min(src.len());
        let (head, tail) = (&mut res[..common], &src[..common]);
        match op {
            BitOp::And => {
                head.iter_mut().zip(tail).for_each(|(r, s)| *r &= s);
                // Past the shorter of the two, one side is zero.
                res[common..].fill(0);
                res.resize(src.len().max(res.len()), 0);
            }
            BitOp::Or | BitOp::Xor => {
                if op == BitOp::Or {
                    head.iter_mut().zip(tail).for_each(|(r, s)| *r |= s);
                } else {
                    head.iter_mut().zip(tail).for_each(|(r, s)| *r ^= s);
                }
                res.extend_from_slice(&src[common..]);
            }
            BitOp::Not => {}
        }
    }
    let dest = &a[2][..];
    if res.is_empty() {
        if ctx.eng.delete(t, dest) {
            ctx.fx.key_changed(t, dest);
            ctx.fx.note_encoding("bitop", t, &[dest]);
            notify(ctx.fx, t, ctx.conn.db, GENERIC, "del", dest);
        }
    } else {
        check_fits(ctx, dest, res.len() as u64)?;
        store(ctx, t, dest, &res, Expire::Persist)?;
        ctx.fx.key_changed(t, dest);
        notify(ctx.fx, t, ctx.conn.db, STRING, "set", dest);
        note_raw(ctx, t, dest, res.len());
    }
    ctx.w.integer(res.len() as i64);
    Ok(())
}

/// A BITFIELD integer type: `i1` to `i64`, `u1` to `u63`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct FieldType {
    signed: bool,
    bits: u32,
}

fn field_type(raw: &[u8]) -> Result<FieldType, CmdError> {
    let err = || {
        CmdError::msg(
            "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.",
        )
    };
    let signed = match raw.first() {
        Some(b'i') => true,
        Some(b'u') => false,
        _ => return Err(err()),
    };
    // Redis reads the width as a C string: it ends at a NUL byte.
    let width = &raw[1..];
    let width = &width[..width.iter().position(|&c| c == 0).unwrap_or(width.len())];
    let bits = parse_i64(width).ok_or_else(err)?;
    let max = if signed { 64 } else { 63 };
    if !(1..=max).contains(&bits) {
        return Err(err());
    }
    Ok(FieldType {
        signed,
        bits: bits as u32,
    })
}

/// What BITFIELD does on overflow (`OVERFLOW WRAP|SAT|FAIL`, WRAP by default).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

/// One BITFIELD operation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum FieldOp {
    Get,
    Set(i64),
    IncrBy(i64),
}

fn low_mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// The 9 bytes from `byte` (zero past the end of `v`) as one big-endian number: any field of up
/// to 64 bits starting inside `byte` lies in them.
fn window(v: &[u8], byte: usize) -> u128 {
    (0..9).fold(0u128, |w, i| {
        w << 8 | u128::from(v.get(byte + i).copied().unwrap_or(0))
    })
}

/// The `bits`-wide unsigned integer at bit `off` of `v`; bits past the end read as zero.
fn read_field(v: &[u8], off: u64, bits: u32) -> u64 {
    let shift = 72 - (off & 7) as u32 - bits;
    (window(v, (off >> 3) as usize) >> shift) as u64 & low_mask(bits)
}

/// Writes the low `bits` bits of `value` at bit `off` of `v`, which MUST hold bit
/// `off + bits - 1`.
fn write_field(v: &mut [u8], off: u64, bits: u32, value: u64) {
    let byte = (off >> 3) as usize;
    let shift = 72 - (off & 7) as u32 - bits;
    let mask = u128::from(low_mask(bits)) << shift;
    let w = (window(v, byte) & !mask) | (u128::from(value & low_mask(bits)) << shift);
    for (i, b) in v[byte..].iter_mut().take(9).enumerate() {
        *b = (w >> (8 * (8 - i))) as u8;
    }
}

/// The field read as a signed `bits`-wide integer.
fn sign_extend(raw: u64, bits: u32) -> i64 {
    let s = 64 - bits;
    ((raw << s) as i64) >> s
}

/// Redis's overflow check for `value + incr` in an unsigned `bits`-wide field (`value` may be a
/// SET argument taken as unsigned, so a negative one overflows upwards): `None` when it fits,
/// else the value WRAP or SAT stores.
fn unsigned_overflow(value: u64, incr: i64, bits: u32, ow: Overflow) -> Option<u64> {
    let max = low_mask(bits);
    let max_incr = max.wrapping_sub(value) as i64;
    let min_incr = 0u64.wrapping_sub(value) as i64;
    let wrapped = || value.wrapping_add(incr as u64) & max;
    if value > max || (incr > 0 && incr > max_incr) {
        Some(if ow == Overflow::Sat { max } else { wrapped() })
    } else if incr < 0 && incr < min_incr {
        Some(if ow == Overflow::Sat { 0 } else { wrapped() })
    } else {
        None
    }
}

/// [`unsigned_overflow`] for a signed field, with Redis's exact comparisons (done in wrapping
/// arithmetic, as its C code does).
fn signed_overflow(value: i64, incr: i64, bits: u32, ow: Overflow) -> Option<i64> {
    let max = if bits == 64 {
        i64::MAX
    } else {
        (1i64 << (bits - 1)) - 1
    };
    let min = -max - 1;
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    let wrapped = || {
        let c = (value as u64).wrapping_add(incr as u64);
        if bits == 64 {
            c as i64
        } else {
            sign_extend(c & low_mask(bits), bits)
        }
    };
    if value > max || (bits != 64 && incr > max_incr) || (value >= 0 && incr > 0 && incr > max_incr)
    {
        Some(if ow == Overflow::Sat { max } else { wrapped() })
    } else if value < min
        || (bits != 64 && incr < min_incr)
        || (value < 0 && incr < 0 && incr < min_incr)
    {
        Some(if ow == Overflow::Sat { min } else { wrapped() })
    } else {
        None
    }
}

/// Runs one SET or INCRBY on `v`: the reply (`None`: overflow under FAIL, nothing written) and
/// whether the field's value changed.
fn apply(v: &mut [u8], op: FieldOp, ty: FieldType, off: u64, ow: Overflow) -> (Option<i64>, bool) {
    let bits = ty.bits;
    let raw = read_field(v, off, bits);
    // (new field value, reply, overflowed), all as the field's two's complement bits.
    let (new, reply, over) = if ty.signed {
        let old = sign_extend(raw, bits);
        match op {
            FieldOp::IncrBy(incr) => match signed_overflow(old, incr, bits, ow) {
                Some(lim) => (lim, lim, true),
                None => (old.wrapping_add(incr), old.wrapping_add(incr), false),
            },
            FieldOp::Set(val) => match signed_overflow(val, 0, bits, ow) {
                Some(lim) => (lim, old, true),
                None => (val, old, false),
            },
            FieldOp::Get => (old, old, false),
        }
    } else {
        let (new, reply, over) = match op {
            FieldOp::IncrBy(incr) => match unsigned_overflow(raw, incr, bits, ow) {
                Some(lim) => (lim, lim, true),
                None => {
                    let sum = raw.wrapping_add(incr as u64);
                    (sum, sum, false)
                }
            },
            FieldOp::Set(val) => match unsigned_overflow(val as u64, 0, bits, ow) {
                Some(lim) => (lim, raw, true),
                None => (val as u64, raw, false),
            },
            FieldOp::Get => (raw, raw, false),
        };
        (new as i64, reply as i64, over)
    };
    if over && ow == Overflow::Fail {
        return (None, false);
    }
    let new = new as u64 & low_mask(bits);
    write_field(v, off, bits, new);
    (Some(reply), new != raw)
}

/// The value of a GET at `off` in `v`.
fn get_field(v: &[u8], ty: FieldType, off: u64) -> i64 {
    let raw = read_field(v, off, ty.bits);
    if ty.signed {
        sign_extend(raw, ty.bits)
    } else {
        raw as i64
    }
}

/// BITFIELD and BITFIELD_RO: parses every operation first (the first bad argument is the
/// error), then runs them in order on one copy of the value.
fn bitfield_generic(ctx: &mut Ctx<'_>, a: Args<'_, '_>, read_only: bool) -> CmdResult {
    let t = ctx.t()?;
    let mut ops: Vec<(FieldOp, FieldType, u64, Overflow)> = Vec::new();
    let mut ow = Overflow::Wrap;
    // The highest bit a SET or INCRBY reaches.
    let mut highest: Option<u64> = None;
    let mut j = 2;
    while j < a.len() {
        let left = a.len() - j - 1;
        let sub = &a[j][..];
        let takes_value = if is(sub, "get") && left >= 2 {
            false
        } else if (is(sub, "set") || is(sub, "incrby")) && left >= 3 {
            true
        } else if is(sub, "overflow") && left >= 1 {
            let kind = &a[j + 1][..];
            ow = if is(kind, "wrap") {
                Overflow::Wrap
            } else if is(kind, "sat") {
                Overflow::Sat
            } else if is(kind, "fail") {
                Overflow::Fail
            } else {
                return Err(CmdError::msg("ERR Invalid OVERFLOW type specified"));
            };
            j += 2;
            continue;
        } else {
            return Err(CmdError::Syntax);
        };
        let ty = field_type(&a[j + 1])?;
        let off = bit_offset(ctx, &a[j + 2], Some(ty.bits))?;
        let op = if takes_value {
            let top = off + u64::from(ty.bits) - 1;
            highest = Some(highest.map_or(top, |h| h.max(top)));
            let val = int_arg(&a[j + 3])?;
            if is(sub, "set") {
                FieldOp::Set(val)
            } else {
                FieldOp::IncrBy(val)
            }
        } else {
            FieldOp::Get
        };
        ops.push((op, ty, off, ow));
        j += if takes_value { 4 } else { 3 };
    }
    let key = &a[1][..];
    let Some(highest) = highest else {
        // Only GETs: a read, which creates nothing.
        let v = ctx.eng.get_str(t, key)?.unwrap_or_default();
        ctx.w.array(ops.len());
        for &(_, ty, off, _) in &ops {
            ctx.w.integer(get_field(v, ty, off));
        }
        return Ok(());
    };
    if read_only {
        return Err(CmdError::msg(
            "ERR BITFIELD_RO only supports the GET subcommand",
        ));
    }
    // As Redis, the string is created or grown to the highest bit written before anything runs,
    // and stays so even if every write then fails on overflow.
    let cur = ctx.eng.peek_str(t, key)?.map(<[u8]>::to_vec);
    let created = cur.is_none();
    let mut v = cur.unwrap_or_default();
    let need = highest / 8 + 1;
    let grew = need > v.len() as u64;
    if grew {
        check_fits(ctx, key, need)?;
        v.resize(need as usize, 0);
    }
    let dirty = created || grew;
    let mut replies = Vec::with_capacity(ops.len());
    let (mut changed, mut changes) = (false, 0u64);
    for &(op, ty, off, ow) in &ops {
        if op == FieldOp::Get {
            replies.push(Some(get_field(&v, ty, off)));
            continue;
        }
        let (reply, differs) = apply(&mut v, op, ty, off, ow);
        if reply.is_some() && (dirty || differs) {
            changes += 1;
        }
        changed |= differs;
        replies.push(reply);
    }
    if dirty || changed {
        store(ctx, t, key, &v, Expire::Keep)?;
    }
    if changes > 0 {
        ctx.fx.key_changed(t, key);
        notify(ctx.fx, t, ctx.conn.db, STRING, "setbit", key);
    }
    note_raw(ctx, t, key, v.len());
    ctx.w.array(replies.len());
    for r in replies {
        match r {
            Some(n) => ctx.w.integer(n),
            None => ctx.w.null(),
        }
    }
    Ok(())
}

/// `BITFIELD key [GET type offset | SET type offset value | INCRBY type offset increment |
/// OVERFLOW WRAP|SAT|FAIL] ...`
pub fn bitfield(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    bitfield_generic(ctx, a, false)
}

/// `BITFIELD_RO key [GET type offset] ...`
pub fn bitfield_ro(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    bitfield_generic(ctx, a, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit `i` of `v` the slow way (Redis's numbering).
    fn bit(v: &[u8], i: u64) -> bool {
        v.get((i / 8) as usize)
            .is_some_and(|b| b & (0x80 >> (i % 8)) != 0)
    }

    #[test]
    fn ranges_follow_redis_index_rules() {
        assert_eq!(bit_range(0, -1, 6, Unit::Byte), Some((0, 47)));
        assert_eq!(bit_range(1, -2, 6, Unit::Byte), Some((8, 39)));
        assert_eq!(bit_range(-2, 1, 6, Unit::Byte), None);
        assert_eq!(bit_range(0, 1000, 6, Unit::Byte), Some((0, 47)));
        assert_eq!(bit_range(10, -34, 6, Unit::Bit), Some((10, 14)));
        assert_eq!(bit_range(0, -1, 0, Unit::Byte), None);
        assert_eq!(bit_range(i64::MIN, i64::MAX, 2, Unit::Bit), Some((0, 15)));
        assert_eq!(bit_range(4, 10, 4, Unit::Byte), None);
    }

    #[test]
    fn count_and_find_agree_with_a_bit_by_bit_scan() {
        let v: Vec<u8> = (0..67u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .chain([0xff; 20])
            .chain([0; 20])
            .collect();
        let nbits = v.len() as u64 * 8;
        for s in (0..nbits).step_by(7) {
            for e in (s..nbits).step_by(13).chain([nbits - 1]) {
                let slow = (s..=e).filter(|&i| bit(&v, i)).count() as u64;
                assert_eq!(count_range(&v, s, e), slow, "{s}..={e}");
                for one in [false, true] {
                    let slow = (s..=e).find(|&i| bit(&v, i) == one);
                    assert_eq!(find_bit(&v, s, e, one), slow, "{s}..={e} {one}");
                }
            }
        }
    }

    #[test]
    fn fields_read_and_write_big_endian_across_bytes() {
        let mut v = vec![0u8; 2];
        write_field(&mut v, 7, 5, 23);
        assert_eq!(v, [0b0000_0001, 0b0111_0000]);
        assert_eq!(read_field(&v, 7, 5), 23);
        let mut v = vec![0u8; 9];
        write_field(&mut v, 3, 64, 0x8123_4567_89ab_cdef);
        assert_eq!(read_field(&v, 3, 64), 0x8123_4567_89ab_cdef);
        assert_eq!(read_field(&v, 0, 3), 0);
        assert_eq!(read_field(&v, 67, 5), 0);
        // Past the end reads zero.
        assert_eq!(read_field(&[0xff], 4, 8), 0xf0);
        assert_eq!(sign_extend(0xff, 8), -1);
        assert_eq!(sign_extend(0x7f, 8), 127);
        assert_eq!(sign_extend(u64::MAX, 64), -1);
    }

    #[test]
    fn overflow_follows_redis() {
        use Overflow::*;
        // u8: 100 + 257 wraps to 101, saturates at 255; 100 - 255 saturates at 0.
        assert_eq!(unsigned_overflow(100, 257, 8, Wrap), Some(101));
        assert_eq!(unsigned_overflow(100, 257, 8, Sat), Some(255));
        assert_eq!(unsigned_overflow(100, -255, 8, Sat), Some(0));
        assert_eq!(unsigned_overflow(100, 155, 8, Wrap), None);
        // A negative SET value is a huge unsigned one: it overflows upwards.
        assert_eq!(unsigned_overflow(-1i64 as u64, 0, 8, Sat), Some(255));
        assert_eq!(unsigned_overflow(-1i64 as u64, 0, 8, Wrap), Some(255));
        // i8
        assert_eq!(signed_overflow(100, 257, 8, Wrap), Some(101));
        assert_eq!(signed_overflow(100, 257, 8, Sat), Some(127));
        assert_eq!(signed_overflow(100, -255, 8, Sat), Some(-128));
        assert_eq!(signed_overflow(255, 0, 8, Wrap), Some(-1));
        assert_eq!(signed_overflow(-128, 0, 8, Fail), None);
        // i64 edges
        assert_eq!(signed_overflow(i64::MAX, 1, 64, Wrap), Some(i64::MIN));
        assert_eq!(signed_overflow(i64::MIN, -1, 64, Sat), Some(i64::MIN));
        assert_eq!(signed_overflow(i64::MIN, i64::MAX, 64, Fail), None);
        assert!(signed_overflow(-1, i64::MIN, 64, Fail).is_some());
        assert_eq!(signed_overflow(-2, i64::MIN, 64, Sat), Some(i64::MIN));
    }

    #[test]
    fn apply_runs_set_and_incrby_like_redis() {
        let i8t = FieldType {
            signed: true,
            bits: 8,
        };
        let mut v = vec![0u8; 9];
        // BITFIELD mystring SET i8 0 10 SET i8 64 10 INCRBY i8 10 99900 -> 0 0 60
        assert_eq!(
            apply(&mut v, FieldOp::Set(10), i8t, 0, Overflow::Wrap),
            (Some(0), true)
        );
        assert_eq!(
            apply(&mut v, FieldOp::Set(10), i8t, 64, Overflow::Wrap),
            (Some(0), true)
        );
        assert_eq!(
            apply(&mut v, FieldOp::IncrBy(99900), i8t, 10, Overflow::Wrap).0,
            Some(60)
        );
        // FAIL writes nothing.
        let before = v.clone();
        assert_eq!(
            apply(&mut v, FieldOp::IncrBy(1000), i8t, 0, Overflow::Fail),
            (None, false)
        );
        assert_eq!(v, before);
    }

    #[test]
    fn field_types() {
        assert_eq!(
            field_type(b"i64"),
            Ok(FieldType {
                signed: true,
                bits: 64
            })
        );
        assert_eq!(
            field_type(b"u63"),
            Ok(FieldType {
                signed: false,
                bits: 63
            })
        );
        for bad in [
            &b"u64"[..],
            b"i65",
            b"i0",
            b"u",
            b"I8",
            b"x8",
            b"",
            b"i-1",
            b"i08",
        ] {
            assert!(
                field_type(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
