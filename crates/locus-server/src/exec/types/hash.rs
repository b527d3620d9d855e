//! Hashes: HSET HGET HMSET HMGET HGETALL HDEL HEXISTS HINCRBY HINCRBYFLOAT HKEYS HVALS HLEN
//! HSETNX HSTRLEN HRANDFIELD HSCAN.
//!
//! A small hash (at most `hash-max-listpack-entries` fields, none longer than
//! `hash-max-listpack-value` bytes) is one packed buffer of field, value, field, value (Redis's `listpack`); a larger one
//! is a hash table (`hashtable`, [`Entries`]: each field and its value in one allocation) keyed
//! with a per-process random hash (a tenant cannot make another's lookups slow by choosing
//! colliding fields). Conversion is one way, as in Redis.

use locus_engine::Object;

use super::super::longdouble::LongDouble;
use super::super::notify::{GENERIC, HASH, notify};
use super::super::{Args, CmdError, CmdResult, Ctx, int_arg, is, parse_f64, parse_i64};
use super::entries::{self, Entries, HashEntry};
use super::packed::Packed;
use super::{alloc, read, write};
use crate::glob::glob_match;

/// `hash-max-listpack-entries`.
fn max_entries() -> usize {
    super::limits::HASH_ENTRIES.usize()
}

/// `hash-max-listpack-value`.
fn max_value() -> usize {
    super::limits::HASH_VALUE.usize()
}

type Table = Entries<HashEntry>;

/// A Redis hash.
#[derive(Debug, Clone)]
pub enum Hash {
    /// Fields and values alternating in one buffer.
    Packed(Packed),
    /// A hash table, with the bytes its fields and values hold.
    Table(Table, u64),
}

impl Default for Hash {
    fn default() -> Self {
        Hash::Packed(Packed::new())
    }
}

fn pair_bytes(f: &[u8], v: &[u8]) -> u64 {
    alloc::bytes(HashEntry::len(f, v))
}

impl Hash {
    /// Fields held.
    pub fn len(&self) -> usize {
        match self {
            Hash::Packed(p) => p.len() / 2,
            Hash::Table(t, _) => t.len(),
        }
    }

    /// Whether it holds no field.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value of `field`.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match self {
            Hash::Packed(p) => {
                let mut it = p.iter();
                while let Some(f) = it.next() {
                    let v = it.next()?;
                    if f == field {
                        return Some(v);
                    }
                }
                None
            }
            Hash::Table(t, _) => t.get(field).map(|e| HashEntry::split(e).1),
        }
    }

    /// Every (field, value), in the hash's order.
    pub fn pairs(&self) -> Vec<(&[u8], &[u8])> {
        match self {
            Hash::Packed(p) => {
                let mut out = Vec::with_capacity(p.len() / 2);
                let mut it = p.iter();
                while let (Some(f), Some(v)) = (it.next(), it.next()) {
                    out.push((f, v));
                }
                out
            }
            Hash::Table(t, _) => t.iter().map(HashEntry::split).collect(),
        }
    }

    /// The pair at position `i` (`i < len`).
    fn pair_at(&self, i: usize) -> (&[u8], &[u8]) {
        match self {
            Hash::Packed(p) => {
                let mut it = p.iter().skip(2 * i);
                (it.next().unwrap_or_default(), it.next().unwrap_or_default())
            }
            Hash::Table(t, _) => t.get_index(i).map(HashEntry::split).unwrap_or_default(),
        }
    }

    /// The most [`Object::charge`] can grow when `pairs` are written.
    pub fn grow_bound<'a>(&self, pairs: impl Iterator<Item = (&'a [u8], &'a [u8])>) -> u64 {
        let (mut n, mut raw, mut boxed, mut long) = (0usize, 0usize, 0u64, false);
        for (f, v) in pairs {
            n += 1;
            raw += f.len() + v.len();
            boxed += pair_bytes(f, v);
            long |= f.len() > max_value() || v.len() > max_value();
        }
        match self {
            Hash::Packed(p) if !long && self.len() + n <= max_entries() => p.grow_bound(2 * n, raw),
            Hash::Packed(_) => {
                // Converts: the whole table, its existing pairs boxed, and the new ones.
                // Growing from room for the packed pairs to `need` doubles at most twice over
                // what it ends at, the old vector and index held beside the new.
                let existing: u64 = self.pairs().iter().map(|(f, v)| pair_bytes(f, v)).sum();
                let need = self.len() + n;
                entries::tables_charge::<HashEntry>(3 * need, 3 * need) + existing + boxed
            }
            Hash::Table(t, _) => t.grow_bound(n) + boxed,
        }
    }

    fn convert_to_table(&mut self) {
        if let Hash::Packed(p) = self {
            let mut t = Table::with_capacity(p.len() / 2 + 1);
            let mut elems = 0;
            let mut it = p.iter();
            while let (Some(f), Some(v)) = (it.next(), it.next()) {
                elems += pair_bytes(f, v);
                t.insert_new(HashEntry::encode(f, v));
            }
            *self = Hash::Table(t, elems);
        }
    }

    /// Sets `field` to `value`; true when the field is new.
    pub fn set(&mut self, field: &[u8], value: &[u8]) -> bool {
        if let Hash::Packed(p) = self {
            if field.len() > max_value() || value.len() > max_value() {
                self.convert_to_table();
            } else {
                let mut at = 0;
                let offs: Vec<usize> = p.iter_offsets().map(|(o, _)| o).collect();
                while at + 1 < offs.len() {
                    if p.entry_at(offs[at]).0 == field {
                        p.replace_at(offs[at + 1], value);
                        return false;
                    }
                    at += 2;
                }
                if p.len() / 2 < max_entries() {
                    p.push(field);
                    p.push(value);
                    return true;
                }
                self.convert_to_table();
            }
        }
        let Hash::Table(t, elems) = self else {
            return false;
        };
        let entry = HashEntry::encode(field, value);
        *elems += alloc::bytes(entry.len());
        match t.find(field) {
            Some(i) => {
                let old = t.replace(i, entry);
                *elems -= alloc::bytes(old.len());
                false
            }
            None => {
                t.insert_new(entry);
                true
            }
        }
    }

    /// Removes `field`; true when it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self {
            Hash::Packed(p) => {
                let offs: Vec<(usize, bool)> = p
                    .iter_offsets()
                    .enumerate()
                    .map(|(i, (o, e))| (o, i % 2 == 0 && e == field))
                    .collect();
                match offs.iter().find(|(_, hit)| *hit) {
                    Some(&(o, _)) => {
                        p.remove_run(o, 2);
                        true
                    }
                    None => false,
                }
            }
            Hash::Table(t, elems) => match t.swap_remove(field) {
                Some(e) => {
                    *elems -= alloc::bytes(e.len());
                    true
                }
                None => false,
            },
        }
    }
}

impl Object for Hash {
    fn type_name(&self) -> &'static str {
        "hash"
    }
    fn encoding(&self) -> &'static str {
        match self {
            Hash::Packed(_) => "listpack",
            Hash::Table(..) => "hashtable",
        }
    }
    fn charge(&self) -> u64 {
        match self {
            Hash::Packed(p) => p.charge(),
            Hash::Table(t, elems) => t.tables_charge() + *elems,
        }
    }
    fn len(&self) -> usize {
        Hash::len(self)
    }
    fn clone_object(&self) -> Box<dyn Object> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

/// Publishes a hash event, and `del` when the write emptied the key.
fn events(ctx: &mut Ctx<'_>, key: &[u8], event: &str, deleted: bool) {
    let t = ctx.tenant.expect("routed");
    notify(ctx.fx, t, ctx.conn.db, HASH, event, key);
    if deleted {
        notify(ctx.fx, t, ctx.conn.db, GENERIC, "del", key);
    }
}

fn set_pairs(ctx: &mut Ctx<'_>, a: Args<'_, '_>, name: &str) -> Result<usize, CmdError> {
    if !a.len().is_multiple_of(2) {
        return Err(CmdError::WrongArity(name.to_string()));
    }
    let t = ctx.t()?;
    let pairs = || a[2..].chunks(2).map(|c| (&c[0][..], &c[1][..]));
    let bound = super::peek::<Hash, u64>(ctx, t, &a[1], |h| h.grow_bound(pairs()))?
        .unwrap_or_else(|| Hash::default().grow_bound(pairs()));
    let (added, _) = write::<Hash, usize>(ctx, t, &a[1], bound, true, |h| {
        pairs().filter(|(f, v)| h.set(f, v)).count()
    })?
    .expect("created");
    events(ctx, &a[1], "hset", false);
    Ok(added)
}

/// `HSET key field value [field value ...]`
pub fn hset(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let n = set_pairs(ctx, a, "hset")?;
    ctx.w.integer(n as i64);
    Ok(())
}

/// `HMSET key field value [field value ...]`
pub fn hmset(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    set_pairs(ctx, a, "hmset")?;
    ctx.w.ok();
    Ok(())
}

/// `HSETNX key field value`
pub fn hsetnx(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let (f, v) = (&a[2][..], &a[3][..]);
    if read::<Hash, bool>(ctx, t, &a[1], |h| h.get(f).is_some())? == Some(true) {
        ctx.w.integer(0);
        return Ok(());
    }
    let bound = super::peek::<Hash, u64>(ctx, t, &a[1], |h| h.grow_bound([(f, v)].into_iter()))?
        .unwrap_or_else(|| Hash::default().grow_bound([(f, v)].into_iter()));
    write::<Hash, bool>(ctx, t, &a[1], bound, true, |h| h.set(f, v))?;
    events(ctx, &a[1], "hset", false);
    ctx.w.integer(1);
    Ok(())
}

/// `HGET key field`
pub fn hget(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let ctx2 = &mut *ctx;
    let v = match ctx2.eng.get_value(t, &a[1]) {
        None => None,
        Some(locus_engine::ValueRef::Obj(o)) => match o.as_any().downcast_ref::<Hash>() {
            Some(h) => h.get(&a[2]),
            None => return Err(CmdError::WrongType),
        },
        Some(_) => return Err(CmdError::WrongType),
    };
    match v {
        Some(v) => ctx2.w.bulk(v),
        None => ctx2.w.null(),
    }
    Ok(())
}

/// `HMGET key field [field ...]`
pub fn hmget(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let vals: Vec<Option<Vec<u8>>> = read::<Hash, _>(ctx, t, &a[1], |h| {
        a[2..]
            .iter()
            .map(|f| h.get(f).map(<[u8]>::to_vec))
            .collect()
    })?
    .unwrap_or_else(|| vec![None; a.len() - 2]);
    ctx.w.array(vals.len());
    for v in &vals {
        match v {
            Some(v) => ctx.w.bulk(v),
            None => ctx.w.null(),
        }
    }
    Ok(())
}

/// Writes every pair: as a map in RESP3, a flat array in RESP2.
fn reply_pairs(ctx: &mut Ctx<'_>, pairs: &[(Vec<u8>, Vec<u8>)]) {
    ctx.w.map(pairs.len());
    for (f, v) in pairs {
        ctx.w.bulk(f);
        ctx.w.bulk(v);
    }
}

fn owned_pairs(h: &Hash) -> Vec<(Vec<u8>, Vec<u8>)> {
    h.pairs()
        .into_iter()
        .map(|(f, v)| (f.to_vec(), v.to_vec()))
        .collect()
}

/// `HGETALL key`
pub fn hgetall(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let pairs = read::<Hash, _>(ctx, t, &a[1], owned_pairs)?.unwrap_or_default();
    reply_pairs(ctx, &pairs);
    Ok(())
}

fn reply_list(ctx: &mut Ctx<'_>, items: &[Vec<u8>]) {
    ctx.w.array(items.len());
    for i in items {
        ctx.w.bulk(i);
    }
}

/// `HKEYS key`
pub fn hkeys(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let ks = read::<Hash, _>(ctx, t, &a[1], |h| {
        h.pairs()
            .iter()
            .map(|(f, _)| f.to_vec())
            .collect::<Vec<_>>()
    })?
    .unwrap_or_default();
    reply_list(ctx, &ks);
    Ok(())
}

/// `HVALS key`
pub fn hvals(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let vs = read::<Hash, _>(ctx, t, &a[1], |h| {
        h.pairs()
            .iter()
            .map(|(_, v)| v.to_vec())
            .collect::<Vec<_>>()
    })?
    .unwrap_or_default();
    reply_list(ctx, &vs);
    Ok(())
}

/// `HLEN key`
pub fn hlen(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let n = read::<Hash, usize>(ctx, t, &a[1], Hash::len)?.unwrap_or(0);
    ctx.w.integer(n as i64);
    Ok(())
}

/// `HEXISTS key field`
pub fn hexists(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let e = read::<Hash, bool>(ctx, t, &a[1], |h| h.get(&a[2]).is_some())?.unwrap_or(false);
    ctx.w.integer(i64::from(e));
    Ok(())
}

/// `HSTRLEN key field`
pub fn hstrlen(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let n =
        read::<Hash, usize>(ctx, t, &a[1], |h| h.get(&a[2]).map_or(0, <[u8]>::len))?.unwrap_or(0);
    ctx.w.integer(n as i64);
    Ok(())
}

/// `HDEL key field [field ...]`
pub fn hdel(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let r = write::<Hash, usize>(ctx, t, &a[1], 0, false, |h| {
        a[2..].iter().filter(|f| h.remove(f)).count()
    })?;
    let (n, deleted) = r.map_or((0, false), |(n, w)| (n, w.deleted));
    if n > 0 {
        events(ctx, &a[1], "hdel", deleted);
    }
    ctx.w.integer(n as i64);
    Ok(())
}

/// `HINCRBY key field increment`
pub fn hincrby(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let by = int_arg(&a[3])?;
    let cur =
        super::peek::<Hash, Option<Vec<u8>>>(ctx, t, &a[1], |h| h.get(&a[2]).map(<[u8]>::to_vec))?
            .flatten();
    let cur = match cur {
        Some(v) => {
            parse_i64(&v).ok_or_else(|| CmdError::msg("ERR hash value is not an integer"))?
        }
        None => 0,
    };
    let n = cur.checked_add(by).ok_or(CmdError::Overflow)?;
    let mut b = itoa::Buffer::new();
    let s = b.format(n).as_bytes().to_vec();
    let f = &a[2][..];
    let bound =
        super::peek::<Hash, u64>(ctx, t, &a[1], |h| h.grow_bound([(f, &s[..])].into_iter()))?
            .unwrap_or_else(|| Hash::default().grow_bound([(f, &s[..])].into_iter()));
    write::<Hash, bool>(ctx, t, &a[1], bound, true, |h| h.set(f, &s))?;
    events(ctx, &a[1], "hincrby", false);
    ctx.w.integer(n);
    Ok(())
}

/// `HINCRBYFLOAT key field increment`
pub fn hincrbyfloat(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let nan_inf = || CmdError::msg("ERR increment would produce NaN or Infinity");
    let by = match LongDouble::parse(&a[3]) {
        Some(v) => v,
        // An infinite increment is refused before the field is read (Redis 7).
        None => match parse_f64(&a[3]) {
            Some(f) if f.is_infinite() => {
                return Err(CmdError::msg("ERR value is NaN or Infinity"));
            }
            _ => return Err(CmdError::NotFloat),
        },
    };
    let cur =
        super::peek::<Hash, Option<Vec<u8>>>(ctx, t, &a[1], |h| h.get(&a[2]).map(<[u8]>::to_vec))?
            .flatten();
    let cur = match cur {
        Some(v) => {
            LongDouble::parse(&v).ok_or_else(|| CmdError::msg("ERR hash value is not a float"))?
        }
        None => LongDouble::ZERO,
    };
    let s = cur.checked_add(by).ok_or_else(nan_inf)?.to_redis_string();
    let f = &a[2][..];
    let sb = s.as_bytes();
    let bound = super::peek::<Hash, u64>(ctx, t, &a[1], |h| h.grow_bound([(f, sb)].into_iter()))?
        .unwrap_or_else(|| Hash::default().grow_bound([(f, sb)].into_iter()));
    write::<Hash, bool>(ctx, t, &a[1], bound, true, |h| h.set(f, sb))?;
    events(ctx, &a[1], "hincrbyfloat", false);
    ctx.w.bulk(sb);
    Ok(())
}

thread_local! {
    static RNG: std::cell::RefCell<locus_common::Rng> = std::cell::RefCell::new(
        locus_common::Rng::new(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64),
        ),
    );
}

/// A random number below `n` (`n` > 0).
pub fn random_below(n: u64) -> u64 {
    RNG.with(|r| r.borrow_mut().below(n))
}

/// The most picks a negative HRANDFIELD / ZRANDMEMBER / SRANDMEMBER count may ask for (16 Mi).
pub const MAX_REPEATED_PICKS: i64 = 1 << 24;

/// Parses `key [count [WORD]]` of HRANDFIELD / ZRANDMEMBER: (count, whether `word` was given).
///
/// # Errors
/// Syntax, not an integer, or a count Redis refuses as out of range.
pub fn rand_args(a: Args<'_, '_>, word: &str) -> Result<(Option<i64>, bool), CmdError> {
    let count = if a.len() >= 3 {
        Some(int_arg(&a[2])?)
    } else {
        None
    };
    if a.len() > 4 || (a.len() == 4 && !is(&a[3], word)) {
        return Err(CmdError::Syntax);
    }
    // As Redis 7.0: any count but i64::MIN (`value is out of range, value must between ...`),
    // and within half of that when the reply pairs each pick with its value or score.
    if count == Some(i64::MIN) {
        return Err(CmdError::msg(format!(
            "ERR value is out of range, value must between {} and {}",
            -i64::MAX,
            i64::MAX
        )));
    }
    if let Some(c) = count
        && a.len() == 4
        && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&c)
    {
        return Err(CmdError::msg("ERR value is out of range"));
    }
    check_repeated_picks(count)?;
    Ok((count, a.len() == 4))
}

/// A negative count (HRANDFIELD, ZRANDMEMBER, SRANDMEMBER) repeats picks: its reply is built
/// whole in memory under the engine lock, outside every tenant's budget, so an absurd one is
/// refused rather than let exhaust the process and stall the other tenants.
///
/// # Errors
/// A count below -[`MAX_REPEATED_PICKS`].
pub fn check_repeated_picks(count: Option<i64>) -> Result<(), CmdError> {
    if count.is_some_and(|c| c < -MAX_REPEATED_PICKS) {
        return Err(CmdError::msg(format!(
            "ERR count below -{MAX_REPEATED_PICKS} is refused (the reply would not fit in memory)"
        )));
    }
    Ok(())
}

/// Positions to answer HRANDFIELD / ZRANDMEMBER with among `n` elements (`n` > 0): one for no
/// count, `-count` with repeats for a negative one, else `count` distinct ones (all when
/// `count` >= `n`).
pub fn random_picks(n: usize, count: Option<i64>) -> Vec<usize> {
    match count {
        None => vec![random_below(n as u64) as usize],
        Some(c) if c < 0 => (0..c.unsigned_abs())
            .map(|_| random_below(n as u64) as usize)
            .collect(),
        Some(c) if c as usize >= n => (0..n).collect(),
        Some(c) => {
            // Distinct positions: a partial Fisher-Yates shuffle.
            let mut idx: Vec<usize> = (0..n).collect();
            for i in 0..c as usize {
                let j = i + random_below((n - i) as u64) as usize;
                idx.swap(i, j);
            }
            idx.truncate(c as usize);
            idx
        }
    }
}

/// `HRANDFIELD key [count [WITHVALUES]]`
pub fn hrandfield(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let (count, with_values) = rand_args(a, "withvalues")?;
    let picked: Option<Vec<(Vec<u8>, Vec<u8>)>> = read::<Hash, _>(ctx, t, &a[1], |h| {
        random_picks(h.len(), count)
            .into_iter()
            .map(|i| {
                let (f, v) = h.pair_at(i);
                (f.to_vec(), v.to_vec())
            })
            .collect()
    })?;
    match (count, picked) {
        (None, None) => ctx.w.null(),
        (None, Some(p)) => ctx.w.bulk(&p[0].0),
        (Some(_), None) => ctx.w.array(0),
        (Some(_), Some(p)) => {
            if with_values && ctx.w.proto() == locus_protocol::ProtocolVersion::Resp3 {
                ctx.w.array(p.len());
                for (f, v) in &p {
                    ctx.w.array(2);
                    ctx.w.bulk(f);
                    ctx.w.bulk(v);
                }
            } else {
                ctx.w.array(if with_values { p.len() * 2 } else { p.len() });
                for (f, v) in &p {
                    ctx.w.bulk(f);
                    if with_values {
                        ctx.w.bulk(v);
                    }
                }
            }
        }
    }
    Ok(())
}

/// A collection SCAN's `cursor [MATCH pattern] [COUNT count]`.
#[derive(Debug, Clone, Copy)]
pub struct ScanArgs<'x> {
    /// Where to resume (0 = from the start).
    pub cursor: u64,
    /// `MATCH`'s glob, if given.
    pub pattern: Option<&'x [u8]>,
    /// `COUNT`: how many entries one call looks at (Redis's default 10).
    pub count: usize,
}

impl ScanArgs<'_> {
    /// Whether `elem` passes `MATCH`.
    pub fn matches(&self, elem: &[u8]) -> bool {
        self.pattern
            .is_none_or(|p| p == b"*" || glob_match(p, elem, false))
    }
}

/// Parses a SCAN cursor as Redis 7.0's `parseScanCursorOrReply` does with C's `strtoul`: an
/// optional sign then decimal digits, a negative one wrapping around (`-1` is 2^64 - 1), the
/// empty string 0; leading space, other bytes or a magnitude past 2^64 - 1 are refused.
///
/// # Errors
/// `invalid cursor`.
pub fn parse_cursor(b: &[u8]) -> Result<u64, CmdError> {
    let bad = || CmdError::msg("ERR invalid cursor");
    if b.is_empty() {
        return Ok(0);
    }
    let (neg, digits) = match b[0] {
        b'-' => (true, &b[1..]),
        b'+' => (false, &b[1..]),
        _ => (false, b),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(bad());
    }
    let mut v: u64 = 0;
    for &d in digits {
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(d - b'0')))
            .ok_or_else(bad)?;
    }
    Ok(if neg { v.wrapping_neg() } else { v })
}

/// Parses a collection SCAN's `cursor [MATCH pattern] [COUNT count]`.
///
/// # Errors
/// Redis's `invalid cursor` and syntax errors.
pub fn scan_args<'x>(a: Args<'x, '_>, from: usize) -> Result<ScanArgs<'x>, CmdError> {
    let cursor = parse_cursor(&a[from])?;
    let mut out = ScanArgs {
        cursor,
        pattern: None,
        count: 10,
    };
    let mut i = from + 1;
    while i < a.len() {
        let Some(v) = a.get(i + 1) else {
            return Err(CmdError::Syntax);
        };
        if is(&a[i], "match") {
            out.pattern = Some(&v[..]);
        } else if is(&a[i], "count") {
            let n = int_arg(v)?;
            if n < 1 {
                return Err(CmdError::Syntax);
            }
            out.count = usize::try_from(n).unwrap_or(usize::MAX);
        } else {
            return Err(CmdError::Syntax);
        }
        i += 2;
    }
    Ok(out)
}

/// One step of a collection SCAN over a table whose entries keep their index until removed, a
/// removal moving the last entry into the hole (`swap_remove`): the indices to visit and the
/// cursor to return.
///
/// The walk goes downward, from the end to index 0, and the cursor is the exclusive upper bound
/// of what is left. An entry not yet visited sits below the cursor and can only move when it is
/// the last one, into a lower hole: so every entry present from the first call to the last is
/// returned (visited entries may come again when moved down, as Redis allows), and a removal
/// never makes the walk skip one. The walk ends (cursor 0) when index 0 was visited.
pub fn table_scan_step(len: usize, cursor: u64, count: usize) -> (std::ops::Range<usize>, u64) {
    // Every cursor this returns is below 2^63; a larger one was typed negative (`-1` is
    // 2^64 - 1, as Redis's strtoul reads it) and, as in Redis, it is past the end: done.
    if cursor > i64::MAX as u64 {
        return (0..0, 0);
    }
    let hi = match usize::try_from(cursor) {
        Ok(0) => len,
        Ok(c) => c.min(len),
        Err(_) => len,
    };
    let lo = hi.saturating_sub(count);
    (lo..hi, lo as u64)
}

/// `HSCAN key cursor [MATCH pattern] [COUNT count]`: a packed hash whole in one call (cursor 0),
/// as Redis answers for a listpack; a hash table `COUNT` entries a call (see
/// [`table_scan_step`]), so a large hash is never copied whole under the engine lock.
pub fn hscan(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let sa = scan_args(a, 2)?;
    type Step = (u64, Vec<(Vec<u8>, Vec<u8>)>);
    let step = |h: &Hash| -> Step {
        let keep = |(f, v): (&[u8], &[u8])| sa.matches(f).then(|| (f.to_vec(), v.to_vec()));
        match h {
            Hash::Packed(_) => (0, h.pairs().into_iter().filter_map(keep).collect()),
            Hash::Table(tb, _) => {
                let (range, next) = table_scan_step(tb.len(), sa.cursor, sa.count);
                let pairs = range
                    .rev()
                    .filter_map(|i| tb.get_index(i))
                    .filter_map(|e| keep(HashEntry::split(e)))
                    .collect();
                (next, pairs)
            }
        }
    };
    let (next, pairs) = read::<Hash, _>(ctx, t, &a[1], step)?.unwrap_or_default();
    ctx.w.array(2);
    ctx.w.bulk(next.to_string().as_bytes());
    ctx.w.array(pairs.len() * 2);
    for (f, v) in &pairs {
        ctx.w.bulk(f);
        ctx.w.bulk(v);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_walk_returns_every_entry_present_throughout_swap_removals() {
        let mut rng = locus_common::Rng::new(5);
        for round in 0..50u64 {
            let mut t: Entries<entries::Whole> = Entries::with_capacity(0);
            for i in 0..400u64 {
                t.insert_new(entries::Slot::new(&i.to_be_bytes()));
            }
            let num = |e: &[u8]| u64::from_be_bytes(e.try_into().expect("8 bytes"));
            let mut stayed: std::collections::HashSet<u64> = (0..400).collect();
            let (mut cursor, mut seen, mut next_new) =
                (0u64, std::collections::HashSet::new(), 1000);
            let mut calls = 0;
            loop {
                let (range, next) = table_scan_step(t.len(), cursor, 1 + rng.below(30) as usize);
                seen.extend(range.filter_map(|i| t.get_index(i)).map(num));
                cursor = next;
                calls += 1;
                if cursor == 0 {
                    break;
                }
                for _ in 0..rng.below(6) {
                    if !t.is_empty() {
                        let i = rng.below(t.len() as u64) as usize;
                        let gone = t.swap_remove_index(i).expect("in range");
                        stayed.remove(&num(gone.bytes()));
                    }
                }
                for _ in 0..rng.below(4) {
                    t.insert_new(entries::Slot::new(&u64::to_be_bytes(next_new)));
                    next_new += 1;
                }
            }
            assert!(stayed.is_subset(&seen), "round {round}");
            assert!(calls > 10);
        }
        // The cursor past the end of a shrunken table resumes at its end; a huge one too.
        assert_eq!(table_scan_step(5, 100, 2), (3..5, 3));
        assert_eq!(table_scan_step(5, 1 << 40, 10), (0..5, 0));
        // One typed negative (`-1` is 2^64 - 1, as strtoul reads it) is past the end: done.
        assert_eq!(table_scan_step(5, u64::MAX, 10), (0..0, 0));
        assert_eq!(table_scan_step(0, 0, 10), (0..0, 0));
    }

    #[test]
    fn a_hash_converts_past_the_packed_limits_and_keeps_every_field() {
        let mut h = Hash::default();
        for i in 0..200 {
            let f = format!("f{i}");
            let before = h.charge();
            let bound = h.grow_bound([(f.as_bytes(), &b"v"[..])].into_iter());
            assert!(h.set(f.as_bytes(), b"v"));
            assert!(h.charge() <= before + bound, "field {i}");
        }
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.len(), 200);
        assert_eq!(h.get(b"f150"), Some(&b"v"[..]));
        assert!(!h.set(b"f150", b"w"));
        assert!(h.remove(b"f150"));
        assert!(!h.remove(b"f150"));
        assert_eq!(h.len(), 199);
        let mut small = Hash::default();
        small.set(b"a", b"1");
        assert_eq!(small.encoding(), "listpack");
        small.set(b"a", &[b'x'; 65]);
        assert_eq!(small.encoding(), "hashtable");
        assert_eq!(small.get(b"a").map(<[u8]>::len), Some(65));
    }
}
