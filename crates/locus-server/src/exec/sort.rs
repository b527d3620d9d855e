//! SORT and SORT_RO: the elements of a list, set or sorted set, ordered by their own value or by
//! the value of other keys (`BY`), optionally replaced by other keys' values (`GET`), in a range
//! (`LIMIT`), returned or stored as a list (`STORE`, SORT only).
//!
//! Redis 7.0's rules, step for step: options are parsed first (a syntax error or a LIMIT that is
//! not an integer answers before the key is looked up); a `BY` pattern without `*` means "do not
//! sort" (a list or sorted set keeps its own order, reversed by DESC, and only the LIMIT range is
//! read; a set stored with STORE, or sorted from a script, is sorted ALPHA all the same, so the result does not depend
//! on the set's layout); numeric sorting reads each weight as C's `strtod` does (a weight that is
//! not a whole number, NaN or out of range fails the command with "One or more scores can't be
//! converted into double", a missing weight is 0) and breaks ties by the element's bytes; ALPHA
//! compares bytes (Redis's `strcoll` in the C locale, which stops at a NUL; with STORE, the whole
//! bytes); a missing ALPHA weight sorts first.
//!
//! Patterns: `#` is the element itself; otherwise the first `*` is replaced by the element, and a
//! `->field` after it reads a hash field instead of a string. **Tenancy:** every key a pattern
//! names is looked up in the caller's tenant only; in prefix tenancy a key that falls under
//! another tenant's prefix is missing (nil), never read. The STORE key is routed like the sorted
//! key (`exec::counted_keys`): another tenant's STORE key is refused before anything runs.
//!
//! Memory: the elements are copied into one arena (the keys they name must be looked up with the
//! engine borrowed mutably), and the reply (or the list to store) is built whole; a SORT whose
//! output passes `min(maxmemory, proto-max-bulk-len)` is refused with an error instead of
//! building an unbounded reply (GET patterns can repeat one large value per element).

use std::cmp::Ordering;

use locus_engine::{Engine, TenantId, ValueRef};

use super::effects::Effects;
use super::notify::{GENERIC, LIST, NEW, notify};
use super::types::hash::Hash;
use super::types::quicklist::{Elem, List};
use super::types::set::{Member, Set};
use super::types::zset::Zset;
use super::{Args, CmdError, CmdResult, Ctx, int_arg, is};

/// `SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA] [STORE dst]`
pub fn sort(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    sort_generic(ctx, a, false)
}

/// `SORT_RO key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC] [ALPHA]`
pub fn sort_ro(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    sort_generic(ctx, a, true)
}

/// The position of SORT's STORE key (the last `STORE x`), found as Redis's `sortGetKeys` finds
/// it: LIMIT skips two arguments, GET and BY one, anything else none.
pub fn store_key_pos(a: Args<'_, '_>) -> Option<usize> {
    let mut found = None;
    let mut i = 2;
    while i < a.len() {
        if is(&a[i], "limit") {
            i += 2;
        } else if is(&a[i], "get") || is(&a[i], "by") {
            i += 1;
        } else if is(&a[i], "store") && i + 1 < a.len() {
            found = Some(i + 1);
        }
        i += 1;
    }
    found
}

/// A BY or GET pattern, split once.
#[derive(Debug, Clone, Copy)]
enum Pattern<'p> {
    /// `#`: the element itself.
    Element,
    /// No `*`: names no key (always missing).
    Constant,
    /// `pre*post` or `pre*post->field`.
    Key {
        pre: &'p [u8],
        post: &'p [u8],
        field: Option<&'p [u8]>,
    },
}

impl<'p> Pattern<'p> {
    fn parse(p: &'p [u8]) -> Self {
        if p == b"#" {
            return Pattern::Element;
        }
        let Some(star) = p.iter().position(|&c| c == b'*') else {
            return Pattern::Constant;
        };
        let rest = &p[star + 1..];
        // The first `->` after the `*`, when something follows it, starts a hash field.
        let arrow = rest
            .windows(2)
            .position(|w| w == b"->")
            .filter(|&i| i + 2 < rest.len());
        match arrow {
            Some(i) => Pattern::Key {
                pre: &p[..star],
                post: &rest[..i],
                field: Some(&rest[i + 2..]),
            },
            None => Pattern::Key {
                pre: &p[..star],
                post: rest,
                field: None,
            },
        }
    }
}

/// Looks up what `pat` names for `ele` in tenant `t` (as Redis's `lookupKeyByPattern`, reading
/// the key as GET does): `None` when the key is missing, of the wrong type, lacks the field, or
/// (prefix tenancy) belongs to another tenant. `buf` is scratch space for the key.
fn lookup<'e>(
    eng: &'e mut Engine,
    fx: &dyn Effects,
    t: TenantId,
    pat: Pattern<'_>,
    ele: &[u8],
    buf: &mut Vec<u8>,
) -> Option<&'e [u8]> {
    let Pattern::Key { pre, post, field } = pat else {
        return None;
    };
    buf.clear();
    buf.extend_from_slice(pre);
    buf.extend_from_slice(ele);
    buf.extend_from_slice(post);
    if !fx.owns_key(t, buf) {
        return None;
    }
    match (eng.get_value(t, buf)?, field) {
        (ValueRef::Str(v), None) => Some(v),
        (ValueRef::Obj(o), Some(f)) => o.as_any().downcast_ref::<Hash>()?.get(f),
        _ => None,
    }
}

/// Parses a weight as Redis does with C's `strtod` on the string (up to a NUL): leading white
/// space allowed, the whole rest consumed, no NaN, no overflow or underflow (`ERANGE`). An empty
/// string is 0, as `strtod` leaves it.
fn weight(b: &[u8]) -> Option<f64> {
    let b = cstr(b);
    if b.is_empty() {
        return Some(0.0);
    }
    let s = std::str::from_utf8(b).ok()?;
    let s = s.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    let v = if lower == "inf" || lower == "infinity" {
        f64::INFINITY
    } else if let Some(hex) = lower.strip_prefix("0x") {
        hex_float(hex)?
    } else {
        // Digits, at most one '.', an optional exponent: Rust's parser takes the same strings
        // (it also takes "inf" and "nan", handled above and refused below).
        if !body.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
            return None;
        }
        let v: f64 = body.parse().ok()?;
        let digits_nonzero = body
            .split(['e', 'E'])
            .next()
            .is_some_and(|m| m.bytes().any(|c| (b'1'..=b'9').contains(&c)));
        if v.is_infinite() || (digits_nonzero && (v == 0.0 || !v.is_normal())) {
            return None; // ERANGE
        }
        v
    };
    if v.is_nan() {
        return None;
    }
    Some(if neg { -v } else { v })
}

/// A C99 hexadecimal float after its `0x`: hex digits with an optional `.`, an optional `p`
/// binary exponent.
fn hex_float(s: &str) -> Option<f64> {
    let (mant, exp) = match s.split_once('p') {
        Some((m, e)) => (m, e.parse::<i32>().ok()?),
        None => (s, 0),
    };
    let (int, frac) = mant.split_once('.').unwrap_or((mant, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut v = 0f64;
    for c in int.chars() {
        v = v * 16.0 + f64::from(c.to_digit(16)?);
    }
    let mut scale = 1.0 / 16.0;
    for c in frac.chars() {
        v += f64::from(c.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    let v = v * 2f64.powi(exp);
    (v.is_finite() && (v == 0.0 || v.is_normal())).then_some(v)
}

/// The bytes C's string functions see: up to the first NUL.
fn cstr(b: &[u8]) -> &[u8] {
    match b.iter().position(|&c| c == 0) {
        Some(i) => &b[..i],
        None => b,
    }
}

/// One element to sort: its bytes in the arena, and what it sorts by.
#[derive(Debug, Clone, Copy)]
struct Item {
    ele: (usize, usize),
    score: f64,
    /// ALPHA with BY: the weight's bytes in the weight arena, `None` when missing.
    by: Option<(usize, usize)>,
}

/// The options, as parsed.
struct Opts<'p> {
    desc: bool,
    alpha: bool,
    limit: (i64, i64),
    by: Option<Pattern<'p>>,
    dontsort: bool,
    gets: Vec<Pattern<'p>>,
    store: Option<&'p [u8]>,
}

fn parse<'p>(a: Args<'p, '_>, readonly: bool) -> Result<Opts<'p>, CmdError> {
    let mut o = Opts {
        desc: false,
        alpha: false,
        limit: (0, -1),
        by: None,
        dontsort: false,
        gets: Vec::new(),
        store: None,
    };
    let mut j = 2;
    while j < a.len() {
        let left = a.len() - j - 1;
        let w = &a[j];
        if is(w, "asc") {
            o.desc = false;
        } else if is(w, "desc") {
            o.desc = true;
        } else if is(w, "alpha") {
            o.alpha = true;
        } else if is(w, "limit") && left >= 2 {
            o.limit = (int_arg(&a[j + 1])?, int_arg(&a[j + 2])?);
            j += 2;
        } else if !readonly && is(w, "store") && left >= 1 {
            o.store = Some(&a[j + 1]);
            j += 1;
        } else if is(w, "by") && left >= 1 {
            // A BY without `*` names no weight: nothing to sort (and it stays so, as in Redis,
            // whatever a later BY says).
            if !a[j + 1].contains(&b'*') {
                o.dontsort = true;
            }
            o.by = Some(Pattern::parse(&a[j + 1]));
            j += 1;
        } else if is(w, "get") && left >= 1 {
            o.gets.push(Pattern::parse(&a[j + 1]));
            j += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    Ok(o)
}

/// What the sorted key is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    List,
    Set,
    Zset,
}

fn kind_of(v: Option<ValueRef<'_>>) -> Result<Option<Kind>, CmdError> {
    let Some(v) = v else {
        return Ok(None);
    };
    let ValueRef::Obj(o) = v else {
        return Err(CmdError::WrongType);
    };
    let any = o.as_any();
    if any.is::<List>() {
        Ok(Some(Kind::List))
    } else if any.is::<Set>() {
        Ok(Some(Kind::Set))
    } else if any.is::<Zset>() {
        Ok(Some(Kind::Zset))
    } else {
        Err(CmdError::WrongType)
    }
}

/// The elements, copied into one arena.
#[derive(Default)]
struct Loaded {
    arena: Vec<u8>,
    items: Vec<Item>,
}

impl Loaded {
    fn push(&mut self, e: &[u8]) {
        let at = self.arena.len();
        self.arena.extend_from_slice(e);
        self.items.push(Item {
            ele: (at, e.len()),
            score: 0.0,
            by: None,
        });
    }

    fn push_int(&mut self, i: i64) {
        self.push(itoa::Buffer::new().format(i).as_bytes());
    }

    fn push_elem(&mut self, e: Elem<'_>) {
        match e {
            Elem::Str(s) => self.push(s),
            Elem::Int(i) => self.push_int(i),
        }
    }

    fn ele(&self, it: &Item) -> &[u8] {
        &self.arena[it.ele.0..it.ele.0 + it.ele.1]
    }
}

/// The LIMIT window over `len` elements, with Redis's clamping: `(start, end)` inclusive, empty
/// when `end < start`.
fn window(limit: (i64, i64), len: i64) -> (i64, i64) {
    let start = limit.0.max(0).min(len);
    let count = limit.1.max(-1).min(len);
    let mut end = if count < 0 {
        len - 1
    } else {
        start + count - 1
    };
    let mut start = start;
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    if end >= len {
        end = len - 1;
    }
    (start, end)
}

fn sort_generic(ctx: &mut Ctx<'_>, a: Args<'_, '_>, readonly: bool) -> CmdResult {
    let mut o = parse(a, readonly)?;
    let t = ctx.t()?;
    let key = &a[1][..];

    // Read the key as GET does (a hit or a miss), then copy what is needed out of it.
    let value = ctx.eng.get_value(t, key);
    let kind = kind_of(value)?;
    if kind == Some(Kind::Set) && o.dontsort && (o.store.is_some() || ctx.conn.block.script) {
        // A stored result, or one a script sees, must not depend on the set's layout: sorted
        // ALPHA instead (as Redis does for STORE and for scripts).
        o.dontsort = false;
        o.alpha = true;
        o.by = None;
    }
    let len = value.map_or(0, |v| match v {
        ValueRef::Obj(obj) => obj.len(),
        ValueRef::Str(_) => 0,
    }) as i64;
    let (mut start, mut end) = window(o.limit, len);
    let mut ld = Loaded::default();
    if let Some(ValueRef::Obj(obj)) = value {
        let any = obj.as_any();
        if let Some(l) = any.downcast_ref::<List>() {
            if o.dontsort {
                // Only the window, in the list's own order (from the tail when DESC).
                if end >= start {
                    let n = (end - start + 1) as usize;
                    let from = if o.desc { len - start - 1 } else { start } as usize;
                    for e in l.iter_from(from, !o.desc).take(n) {
                        ld.push_elem(e);
                    }
                    end -= start;
                    start = 0;
                }
            } else {
                for e in l.iter() {
                    ld.push_elem(e);
                }
            }
        } else if let Some(s) = any.downcast_ref::<Set>() {
            ld.items.reserve(s.len());
            for m in s.iter() {
                match m {
                    Member::Str(b) => ld.push(b),
                    Member::Int(i) => ld.push_int(i),
                }
            }
        } else if let Some(z) = any.downcast_ref::<Zset>() {
            if o.dontsort {
                // The window by rank, in score order (from the highest when DESC).
                let n = (end - start + 1).max(0) as usize;
                let (lo, hi) = if o.desc {
                    let hi = (len - start) as usize;
                    (hi.saturating_sub(n), hi)
                } else {
                    (start.max(0) as usize, start.max(0) as usize + n)
                };
                z.visit(lo, hi, o.desc, |m, _| ld.push(m));
                end -= start;
                start = 0;
            } else {
                ld.items.reserve(z.len());
                z.visit(0, z.len(), false, |m, _| ld.push(m));
            }
        }
    }

    let fx = ctx.fx;
    let mut keybuf = Vec::new();
    let mut weights: Vec<u8> = Vec::new();
    let mut bad_weight = false;
    if !o.dontsort {
        for i in 0..ld.items.len() {
            let it = ld.items[i];
            let ele = &ld.arena[it.ele.0..it.ele.0 + it.ele.1];
            let byval: &[u8] = match o.by {
                None | Some(Pattern::Element) => ele,
                Some(p) => match lookup(ctx.eng, fx, t, p, ele, &mut keybuf) {
                    Some(v) => v,
                    None => continue,
                },
            };
            if o.alpha {
                if o.by.is_some() {
                    let at = weights.len();
                    weights.extend_from_slice(byval);
                    ld.items[i].by = Some((at, byval.len()));
                }
            } else {
                match weight(byval) {
                    Some(w) => ld.items[i].score = w,
                    None => bad_weight = true,
                }
            }
        }
        let store = o.store.is_some();
        let by = o.by.is_some();
        let (alpha, desc) = (o.alpha, o.desc);
        let arena = &ld.arena;
        let ele = |it: &Item| &arena[it.ele.0..it.ele.0 + it.ele.1];
        let w = |r: (usize, usize)| &weights[r.0..r.0 + r.1];
        // Redis's sortCompare.
        let cmp = |x: &Item, y: &Item| -> Ordering {
            let c = if !alpha {
                x.score
                    .partial_cmp(&y.score)
                    .unwrap_or(Ordering::Equal)
                    .then_with(|| ele(x).cmp(ele(y)))
            } else if by {
                match (x.by, y.by) {
                    (None, None) => Ordering::Equal,
                    (None, Some(_)) => Ordering::Less,
                    (Some(_), None) => Ordering::Greater,
                    (Some(p), Some(q)) if store => w(p).cmp(w(q)),
                    (Some(p), Some(q)) => cstr(w(p)).cmp(cstr(w(q))),
                }
            } else if store {
                ele(x).cmp(ele(y))
            } else {
                cstr(ele(x)).cmp(cstr(ele(y)))
            };
            if desc { c.reverse() } else { c }
        };
        ld.items.sort_by(cmp);
    }
    drop(weights);
    if bad_weight {
        return Err(CmdError::msg(
            "ERR One or more scores can't be converted into double",
        ));
    }

    let cap = ctx.eng.config().maxmemory.min(ctx.fx.proto_max_bulk_len());
    let too_big = || {
        CmdError::msg(format!(
            "ERR SORT output would exceed {cap} bytes (the smaller of maxmemory and proto-max-bulk-len)"
        ))
    };
    let count = if end >= start {
        (end - start + 1) as usize
    } else {
        0
    };
    let window: &[Item] = if count == 0 {
        &[]
    } else {
        &ld.items[start as usize..start as usize + count]
    };
    let outputlen = if o.gets.is_empty() {
        count
    } else {
        o.gets.len() * count
    };
    match o.store {
        None => {
            let from = ctx.w.len();
            ctx.w.array(outputlen);
            for it in window {
                let ele = ld.ele(it);
                if o.gets.is_empty() {
                    ctx.w.bulk(ele);
                }
                for &g in &o.gets {
                    if let Pattern::Element = g {
                        ctx.w.bulk(ele);
                        continue;
                    }
                    match lookup(ctx.eng, fx, t, g, ele, &mut keybuf) {
                        Some(v) => ctx.w.bulk(v),
                        None => ctx.w.null(),
                    }
                }
                if (ctx.w.len() - from) as u64 > cap {
                    return Err(too_big());
                }
            }
        }
        Some(dst) => {
            let mut list = List::new();
            let mut bytes = 0u64;
            for it in window {
                let ele = ld.ele(it);
                if o.gets.is_empty() {
                    list.push_back(ele);
                    bytes += ele.len() as u64;
                }
                for &g in &o.gets {
                    let v: &[u8] = match g {
                        Pattern::Element => ele,
                        _ => lookup(ctx.eng, fx, t, g, ele, &mut keybuf).unwrap_or(b""),
                    };
                    bytes += v.len() as u64;
                    list.push_back(v);
                }
                if bytes + list.charge() > cap {
                    return Err(too_big());
                }
            }
            drop(ld);
            store_list(ctx, t, dst, list)?;
            ctx.w.integer(outputlen as i64);
        }
    }
    Ok(())
}

/// Stores SORT's result at `dst` (replacing any value and its TTL), or deletes `dst` when the
/// result is empty; WATCH, keyspace events, blocked clients and dump bookkeeping as Redis's
/// `setKey` / `dbDelete` do for it.
fn store_list(ctx: &mut Ctx<'_>, t: TenantId, dst: &[u8], list: List) -> CmdResult {
    ctx.fx.note_dumped_write(t, &[dst], false);
    if list.is_empty() {
        if ctx.eng.delete(t, dst) {
            ctx.fx.key_changed(t, dst);
            notify(ctx.fx, t, ctx.conn.db, GENERIC, "del", dst);
        }
        return Ok(());
    }
    let existed = super::types::store(ctx, t, dst, Box::new(list))?;
    ctx.fx.key_changed(t, dst);
    ctx.fx.note_encoding("sort", t, &[dst]);
    if !existed {
        notify(ctx.fx, t, ctx.conn.db, NEW, "new", dst);
    }
    notify(ctx.fx, t, ctx.conn.db, LIST, "sortstore", dst);
    ctx.fx.key_ready(t, dst);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    fn args(s: &[&str]) -> Vec<Cow<'static, [u8]>> {
        s.iter()
            .map(|x| Cow::Owned(x.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn store_key_is_the_last_store() {
        let a = args(&["sort", "abc", "store", "def"]);
        assert_eq!(store_key_pos(&a), Some(3));
        let a = args(&[
            "sort", "abc", "store", "invalid", "store", "stillbad", "store", "def",
        ]);
        assert_eq!(store_key_pos(&a), Some(7));
        let a = args(&["sort", "abc", "get", "store", "limit", "store", "x"]);
        assert_eq!(store_key_pos(&a), None);
        let a = args(&["sort", "abc", "store"]);
        assert_eq!(store_key_pos(&a), None);
    }

    #[test]
    fn patterns_split_as_redis() {
        assert!(matches!(Pattern::parse(b"#"), Pattern::Element));
        assert!(matches!(Pattern::parse(b"nosort"), Pattern::Constant));
        let Pattern::Key { pre, post, field } = Pattern::parse(b"w_*->f->g") else {
            panic!()
        };
        assert_eq!(
            (pre, post, field),
            (&b"w_"[..], &b""[..], Some(&b"f->g"[..]))
        );
        // A trailing `->` is part of the key name.
        let Pattern::Key { pre, post, field } = Pattern::parse(b"x:*->") else {
            panic!()
        };
        assert_eq!((pre, post, field), (&b"x:"[..], &b"->"[..], None));
        // `->` before the `*` is not a field.
        let Pattern::Key { pre, post, field } = Pattern::parse(b"a->*b") else {
            panic!()
        };
        assert_eq!((pre, post, field), (&b"a->"[..], &b"b"[..], None));
    }

    #[test]
    fn weights_as_strtod() {
        assert_eq!(weight(b"1.5"), Some(1.5));
        assert_eq!(weight(b"  -2"), Some(-2.0));
        assert_eq!(weight(b""), Some(0.0));
        assert_eq!(weight(b"1\0junk"), Some(1.0));
        assert_eq!(weight(b"inf"), Some(f64::INFINITY));
        assert_eq!(weight(b"-Infinity"), Some(f64::NEG_INFINITY));
        assert_eq!(weight(b"0x10"), Some(16.0));
        assert_eq!(weight(b"0x1p-2"), Some(0.25));
        assert_eq!(weight(b".5"), Some(0.5));
        assert_eq!(weight(b"5."), Some(5.0));
        assert_eq!(weight(b"0e5"), Some(0.0));
        for bad in [
            &b"nan"[..],
            b"1 ",
            b"  ",
            b"abc",
            b"1e400",
            b"1e-400",
            b"1x",
            b".",
            b"0x",
        ] {
            assert_eq!(weight(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn limit_window_clamps_as_redis() {
        assert_eq!(window((0, -1), 5), (0, 4));
        assert_eq!(window((5, 10), 5), (4, 3)); // empty
        assert_eq!(window((-10, 100), 5), (0, 4));
        assert_eq!(window((2, i64::MAX), 3), (2, 2));
        assert_eq!(window((0, 0), 5), (0, -1)); // empty
        assert_eq!(window((0, -1), 0), (-1, -2)); // empty
    }
}
