//! Sorted sets: ZADD ZINCRBY ZSCORE ZMSCORE ZRANK ZREVRANK ZCARD ZCOUNT ZLEXCOUNT ZRANGE (and
//! ZRANGEBYSCORE ZREVRANGEBYSCORE ZRANGEBYLEX ZREVRANGEBYLEX ZREVRANGE) ZRANGESTORE ZREM
//! ZREMRANGEBYSCORE ZREMRANGEBYRANK ZREMRANGEBYLEX ZPOPMIN ZPOPMAX ZMPOP, the blocking BZPOPMIN
//! BZPOPMAX BZMPOP, ZUNION ZINTER ZDIFF and their STORE forms, ZINTERCARD ZRANDMEMBER ZSCAN.
//!
//! A small sorted set (at most `zset-max-listpack-entries` members, none longer than
//! `zset-max-listpack-value` bytes) is one packed buffer of member, score, member, score in
//! (score, member) order (Redis's `listpack`; a score is stored as an integer of 0-7 bytes when
//! it is one, else as the 8 bytes of the double). A larger one is a [`ZTree`], an
//! order-statistic B+ tree with a member index (OBJECT ENCODING says `skiplist`, as Redis does).
//! Conversion is one way, as in Redis; the STORE forms build their result in the encoding its
//! size calls for.
//!
//! Every range command reduces to ranks: a score or lex bound is the count of members before
//! it (O(log n) on the tree), and a range is the ranks between two such counts. Scores are
//! printed as Redis 7.0 prints doubles (`%.17g`, `inf`, `-inf`); in RESP3 they are doubles and
//! (member, score) pairs are nested arrays where Redis 7.0 nests them. Each write reports its
//! own WATCH touch and keyspace event, and only when it changed something, as Redis does.

use std::borrow::Cow;
use std::collections::HashMap;
use std::collections::hash_map::RandomState;

use locus_engine::{Object, TenantId, ValueRef};
use locus_protocol::{ProtocolVersion, ReplyWriter};

use super::super::notify::{GENERIC, ZSET, notify};
use super::super::{Args, CmdError, CmdResult, Ctx, blocking, int_arg, is, parse_f64, parse_i64};
use super::hash::{rand_args, random_picks, scan_args};
use super::list::mpop_args;
use super::packed::Packed;
use super::set::{Member, Set};
use super::ztree::ZTree;
use super::{alloc, check_type, peek, read, touched, write};

/// `zset-max-listpack-entries`.
fn max_entries() -> usize {
    super::limits::ZSET_ENTRIES.usize()
}

/// `zset-max-listpack-value`.
fn max_value() -> usize {
    super::limits::ZSET_VALUE.usize()
}

/// The `type_name` of a sorted set (what a blocked client waits for).
pub const KIND: &str = "zset";

/// Bytes a packed score takes at most.
const SCORE_MAX: usize = 8;

/// A score as packed: an integral score below 2^53 as the fewest little-endian bytes of its
/// two's complement (0-7), anything else as the 8 bytes of the double.
fn enc_score(s: f64, out: &mut [u8; 8]) -> usize {
    if s == s.trunc() && s.abs() < 9_007_199_254_740_992.0 {
        let i = s as i64;
        let b = i.to_le_bytes();
        let mut n = 0;
        if i != 0 {
            n = 1;
            while n < 7 && (i << (64 - 8 * n)) >> (64 - 8 * n) != i {
                n += 1;
            }
        }
        out[..n].copy_from_slice(&b[..n]);
        n
    } else {
        *out = s.to_le_bytes();
        8
    }
}

fn dec_score(b: &[u8]) -> f64 {
    if b.len() == 8 {
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        return f64::from_le_bytes(a);
    }
    if b.is_empty() {
        return 0.0;
    }
    let mut a = [0u8; 8];
    a[..b.len()].copy_from_slice(b);
    let shift = 64 - 8 * b.len() as u32;
    ((i64::from_le_bytes(a) << shift) >> shift) as f64
}

/// Formats a double as Redis 7.0 prints scores (C's `%.17g`; `inf`, `-inf`).
pub fn fmt_score(v: f64) -> String {
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if v.is_nan() {
        return "nan".to_string();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    if v == v.trunc() && v.abs() < 1e17 {
        // An integer of at most 17 digits: %.17g prints all of them.
        return itoa::Buffer::new().format(v as i64).to_string();
    }
    // 17 significant digits in scientific form, then %g's choice of notation.
    let sci = format!("{:.16e}", v);
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..17).contains(&exp) {
        let mant = trim_zeros(mant);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (16 - exp).max(0) as usize;
        trim_zeros(&format!("{:.*}", decimals, v)).to_string()
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Writes a score: a double in RESP3, its `%.17g` text in RESP2.
fn reply_score(w: &mut ReplyWriter<'_>, v: f64) {
    let s = fmt_score(v);
    if w.proto() == ProtocolVersion::Resp3 {
        w.raw(b",");
        w.raw(s.as_bytes());
        w.raw(b"\r\n");
    } else {
        w.bulk(s.as_bytes());
    }
}

/// A Redis sorted set.
#[derive(Debug, Clone)]
pub enum Zset {
    /// Member, score, member, score ... in order, in one buffer.
    Packed(Packed),
    /// An order-statistic B+ tree with a member index (the `skiplist` encoding).
    Skip(Box<ZTree>),
}

impl Default for Zset {
    fn default() -> Self {
        Zset::Packed(Packed::new())
    }
}

/// Whether (`s1`, `m1`) sorts before (`s2`, `m2`).
#[inline]
fn lt(s1: f64, m1: &[u8], s2: f64, m2: &[u8]) -> bool {
    s1 < s2 || (s1 == s2 && m1 < m2)
}

/// A member with its score, owned.
pub type Pair = (Vec<u8>, f64);

impl Zset {
    /// Members held.
    pub fn len(&self) -> usize {
        match self {
            Zset::Packed(p) => p.len() / 2,
            Zset::Skip(s) => s.len(),
        }
    }

    /// Whether it holds no member.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// (offset, member, score) of each packed pair.
    fn packed_pairs(p: &Packed) -> impl Iterator<Item = (usize, &[u8], f64)> + '_ {
        let mut it = p.iter_offsets();
        std::iter::from_fn(move || {
            let (o, m) = it.next()?;
            let (_, s) = it.next()?;
            Some((o, m, dec_score(s)))
        })
    }

    /// The score of `member`.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            Zset::Packed(p) => Self::packed_pairs(p)
                .find(|(_, m, _)| *m == member)
                .map(|(_, _, s)| s),
            Zset::Skip(s) => s.score(member),
        }
    }

    /// The most [`Object::charge`] grows when `count` members of `bytes` bytes in all (the
    /// longest `longest`) are added.
    pub fn grow_bound(&self, count: usize, bytes: usize, longest: usize) -> u64 {
        match self {
            Zset::Packed(p) if longest <= max_value() && self.len() + count <= max_entries() => {
                p.grow_bound(2 * count, bytes + SCORE_MAX * count)
            }
            Zset::Packed(p) => {
                // Converts: a boxed tree of every member, old and new.
                alloc::heap(size_of::<ZTree>())
                    + ZTree::new().charge()
                    + ZTree::new().grow_bound(self.len() + count, p.bytes() + bytes)
            }
            Zset::Skip(s) => s.grow_bound(count, bytes),
        }
    }

    fn convert(&mut self) {
        if let Zset::Packed(p) = self {
            let mut s = ZTree::new();
            for (_, m, sc) in Self::packed_pairs(p) {
                s.insert(m, sc);
            }
            *self = Zset::Skip(Box::new(s));
        }
    }

    /// Adds `member`, absent, with `score`.
    fn insert(&mut self, member: &[u8], score: f64) {
        if let Zset::Packed(p) = self
            && (p.len() / 2 + 1 > max_entries() || member.len() > max_value())
        {
            self.convert();
        }
        match self {
            Zset::Packed(p) => {
                let at = Self::packed_pairs(p)
                    .find(|(_, m, s)| !lt(*s, m, score, member))
                    .map(|(o, _, _)| o);
                let mut b = [0u8; 8];
                let n = enc_score(score, &mut b);
                match at {
                    Some(o) => {
                        p.insert_at(o, member);
                        let next = p.next_of(o);
                        p.insert_at(next, &b[..n]);
                    }
                    None => {
                        p.push(member);
                        p.push(&b[..n]);
                    }
                }
            }
            Zset::Skip(s) => s.insert(member, score),
        }
    }

    /// Removes `member`; its score when it was there.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        match self {
            Zset::Packed(p) => {
                let (o, s) = Self::packed_pairs(p)
                    .find(|(_, m, _)| *m == member)
                    .map(|(o, _, s)| (o, s))?;
                p.remove_run(o, 2);
                Some(s)
            }
            Zset::Skip(s) => s.remove(member),
        }
    }

    /// Sets `member`'s score; its old score, if it had one.
    pub fn set(&mut self, member: &[u8], score: f64) -> Option<f64> {
        let old = self.score(member);
        match old {
            Some(o)
                if o == score && (o != 0.0 || o.is_sign_negative() == score.is_sign_negative()) => {
            }
            Some(_) => match self {
                Zset::Skip(s) => {
                    s.set_score(member, score);
                }
                Zset::Packed(_) => {
                    self.remove(member);
                    self.insert(member, score);
                }
            },
            None => self.insert(member, score),
        }
        old
    }

    /// How many leading members satisfy `pred` (true on a prefix of the order).
    pub fn count_while(&self, pred: impl Fn(f64, &[u8]) -> bool) -> usize {
        match self {
            Zset::Packed(p) => Self::packed_pairs(p)
                .take_while(|(_, m, s)| pred(*s, m))
                .count(),
            Zset::Skip(s) => s.count_while(pred),
        }
    }

    /// Calls `f` on the members of ranks `start..end`, descending when `rev`.
    pub fn visit(&self, start: usize, end: usize, rev: bool, mut f: impl FnMut(&[u8], f64)) {
        let end = end.min(self.len());
        if start >= end {
            return;
        }
        match self {
            Zset::Packed(p) => {
                let pairs: Vec<(&[u8], f64)> = Self::packed_pairs(p)
                    .skip(start)
                    .take(end - start)
                    .map(|(_, m, s)| (m, s))
                    .collect();
                if rev {
                    pairs.iter().rev().for_each(|(m, s)| f(m, *s));
                } else {
                    pairs.iter().for_each(|(m, s)| f(m, *s));
                }
            }
            Zset::Skip(s) => s.visit(start, end, rev, f),
        }
    }

    /// Calls `f` on every member in order, borrowed for as long as the set is.
    pub fn visit_all<'a>(&'a self, mut f: impl FnMut(&'a [u8], f64)) {
        match self {
            Zset::Packed(p) => Self::packed_pairs(p).for_each(|(_, m, s)| f(m, s)),
            Zset::Skip(s) => s.visit_all(f),
        }
    }

    /// The members of ranks `start..end` (descending when `rev`), owned.
    pub fn range(&self, start: usize, end: usize, rev: bool) -> Vec<Pair> {
        let mut out = Vec::with_capacity(end.saturating_sub(start).min(self.len()));
        self.visit(start, end, rev, |m, s| out.push((m.to_vec(), s)));
        out
    }

    /// Every (member, score) in order.
    pub fn pairs(&self) -> Vec<Pair> {
        self.range(0, self.len(), false)
    }

    /// The 0-based rank of `member` (ascending) with its score.
    pub fn rank(&self, member: &[u8]) -> Option<(usize, f64)> {
        match self {
            Zset::Packed(p) => Self::packed_pairs(p)
                .enumerate()
                .find(|(_, (_, m, _))| *m == member)
                .map(|(i, (_, _, s))| (i, s)),
            Zset::Skip(s) => s.rank(member),
        }
    }

    /// Removes and returns up to `count` members from the lowest end (the highest when `max`),
    /// in the order popped.
    pub fn pop(&mut self, max: bool, count: usize) -> Vec<Pair> {
        let n = self.len();
        let c = count.min(n);
        if let Zset::Skip(s) = self
            && !max
        {
            return (0..c)
                .filter_map(|_| s.pop_first())
                .map(|(m, sc)| (m.into_vec(), sc))
                .collect();
        }
        let items = if max {
            self.range(n - c, n, true)
        } else {
            self.range(0, c, false)
        };
        for (m, _) in &items {
            self.remove(m);
        }
        items
    }

    /// Removes the members of ranks `start..end`; how many.
    pub fn remove_ranks(&mut self, start: usize, end: usize) -> usize {
        let doomed = self.range(start, end, false);
        for (m, _) in &doomed {
            self.remove(m);
        }
        doomed.len()
    }

    /// A sorted set holding `pairs` (distinct members), in the encoding its size calls for.
    pub fn from_pairs(pairs: &[Pair]) -> Self {
        let small =
            pairs.len() <= max_entries() && pairs.iter().all(|(m, _)| m.len() <= max_value());
        let mut z = if small || pairs.is_empty() {
            Zset::default()
        } else {
            Zset::Skip(Box::default())
        };
        if let Zset::Packed(p) = &mut z {
            let mut sorted: Vec<&Pair> = pairs.iter().collect();
            sorted.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
            let mut b = [0u8; 8];
            for (m, s) in sorted {
                let n = enc_score(*s, &mut b);
                p.push(m);
                p.push(&b[..n]);
            }
        } else {
            for (m, s) in pairs {
                z.insert(m, *s);
            }
        }
        z
    }
}

impl Object for Zset {
    fn type_name(&self) -> &'static str {
        KIND
    }
    fn encoding(&self) -> &'static str {
        match self {
            Zset::Packed(_) => "listpack",
            Zset::Skip(_) => "skiplist",
        }
    }
    fn charge(&self) -> u64 {
        match self {
            Zset::Packed(p) => p.charge(),
            Zset::Skip(s) => alloc::heap(size_of::<ZTree>()) + s.charge(),
        }
    }
    fn len(&self) -> usize {
        Zset::len(self)
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

// ---------------------------------------------------------------------------------------------
// Argument parsing.

/// Parses a score as Redis's `getDoubleFromObject` does (strtod: decimal, hex, `inf`; no NaN,
/// no overflow or underflow, no surrounding space).
pub(crate) fn parse_score(b: &[u8]) -> Option<f64> {
    let v = parse_range_number(b)?;
    let s = std::str::from_utf8(b).ok()?;
    let l = s.to_ascii_lowercase();
    let word_inf = l.trim_start_matches(['+', '-']).starts_with("inf");
    if v.is_infinite() && !word_inf {
        return None;
    }
    if v == 0.0 {
        let mant = l.split('e').next().unwrap_or("");
        let hex = mant.contains('x');
        let digits = if hex {
            mant.split('x').nth(1).unwrap_or("")
        } else {
            mant
        };
        if digits
            .bytes()
            .any(|c| c.is_ascii_alphanumeric() && c != b'0')
            && !hex
        {
            return None;
        }
    }
    Some(v)
}

/// A number as C's strtod reads a whole argument (decimal, hex integers, `inf`; overflow is
/// infinite), NaN refused.
fn parse_range_number(b: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(b).ok()?;
    let (neg, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if let Some(h) = rest.strip_prefix("0x").or_else(|| rest.strip_prefix("0X")) {
        if h.is_empty() || !h.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        let v = h.bytes().fold(0f64, |acc, c| {
            acc * 16.0 + f64::from((c as char).to_digit(16).unwrap_or(0))
        });
        return Some(if neg { -v } else { v });
    }
    if rest.eq_ignore_ascii_case("inf") || rest.eq_ignore_ascii_case("infinity") {
        return Some(if neg {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    parse_f64(b)
}

/// A score interval (Redis's `zrangespec`).
#[derive(Debug, Clone, Copy)]
struct ScoreRange {
    min: f64,
    minex: bool,
    max: f64,
    maxex: bool,
}

/// A score bound as Redis's `zslParseRange` reads it: `(` for an open bound, then what C's
/// `strtod` takes whole, which (unlike a ZADD score) may start with white space, and is 0
/// when empty (`""` and `"("` are the bound 0; a bound of only spaces is refused).
fn parse_score_bound(b: &[u8]) -> Option<(f64, bool)> {
    let (num, open) = match b.first() {
        Some(b'(') => (&b[1..], true),
        _ => (b, false),
    };
    if num.is_empty() {
        return Some((0.0, open));
    }
    let start = num
        .iter()
        .position(|c| !matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))?;
    parse_range_number(&num[start..]).map(|v| (v, open))
}

impl ScoreRange {
    fn parse(min: &[u8], max: &[u8]) -> Result<Self, CmdError> {
        let err = || CmdError::msg("ERR min or max is not a float");
        let (min, minex) = parse_score_bound(min).ok_or_else(err)?;
        let (max, maxex) = parse_score_bound(max).ok_or_else(err)?;
        Ok(Self {
            min,
            minex,
            max,
            maxex,
        })
    }
    fn below_min(&self, s: f64) -> bool {
        if self.minex {
            s <= self.min
        } else {
            s < self.min
        }
    }
    fn within_max(&self, s: f64) -> bool {
        if self.maxex {
            s < self.max
        } else {
            s <= self.max
        }
    }
}

/// One end of a lex interval.
#[derive(Debug, Clone)]
enum Lex {
    NegInf,
    PosInf,
    Incl(Vec<u8>),
    Excl(Vec<u8>),
}

fn parse_lex(b: &[u8]) -> Option<Lex> {
    match b.first() {
        Some(b'+') if b.len() == 1 => Some(Lex::PosInf),
        Some(b'-') if b.len() == 1 => Some(Lex::NegInf),
        Some(b'[') => Some(Lex::Incl(b[1..].to_vec())),
        Some(b'(') => Some(Lex::Excl(b[1..].to_vec())),
        _ => None,
    }
}

/// A lex interval (Redis's `zlexrangespec`).
#[derive(Debug, Clone)]
struct LexRange {
    min: Lex,
    max: Lex,
}

impl LexRange {
    fn parse(min: &[u8], max: &[u8]) -> Result<Self, CmdError> {
        let err = || CmdError::msg("ERR min or max not valid string range item");
        Ok(Self {
            min: parse_lex(min).ok_or_else(err)?,
            max: parse_lex(max).ok_or_else(err)?,
        })
    }
    fn below_min(&self, m: &[u8]) -> bool {
        match &self.min {
            Lex::NegInf => false,
            Lex::PosInf => true,
            Lex::Incl(v) => m < &v[..],
            Lex::Excl(v) => m <= &v[..],
        }
    }
    fn within_max(&self, m: &[u8]) -> bool {
        match &self.max {
            Lex::NegInf => false,
            Lex::PosInf => true,
            Lex::Incl(v) => m <= &v[..],
            Lex::Excl(v) => m < &v[..],
        }
    }
}

/// What a range names.
#[derive(Debug, Clone)]
enum Range {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

/// The ascending ranks `lo..hi` a range covers in `z` (before LIMIT and REV; rank ranges are
/// given in the direction asked, so `rev` maps them from the top).
fn ranks(z: &Zset, r: &Range, rev: bool) -> (usize, usize) {
    let len = z.len();
    match r {
        Range::Rank(start, end) => {
            let n = len as i64;
            let (mut s, mut e) = (*start, *end);
            if s < 0 {
                s += n;
            }
            if e < 0 {
                e += n;
            }
            s = s.max(0);
            if s > e || s >= n {
                return (0, 0);
            }
            e = e.min(n - 1);
            let (s, e) = (s as usize, e as usize);
            if rev {
                (len - 1 - e, len - s)
            } else {
                (s, e + 1)
            }
        }
        Range::Score(sr) => {
            let lo = z.count_while(|s, _| sr.below_min(s));
            let hi = z.count_while(|s, _| sr.within_max(s));
            (lo, hi.max(lo))
        }
        Range::Lex(lr) => {
            let lo = z.count_while(|_, m| lr.below_min(m));
            let hi = z.count_while(|_, m| lr.within_max(m));
            (lo, hi.max(lo))
        }
    }
}

/// Applies LIMIT offset count to ascending ranks `lo..hi` read in direction `rev`.
fn limit(lo: usize, hi: usize, rev: bool, lim: Option<(i64, i64)>) -> (usize, usize) {
    let Some((off, cnt)) = lim else {
        return (lo, hi);
    };
    if off < 0 {
        return (0, 0);
    }
    let n = hi - lo;
    let off = (off as u64).min(n as u64) as usize;
    let take = if cnt < 0 {
        n - off
    } else {
        (cnt as u64).min((n - off) as u64) as usize
    };
    if rev {
        (hi - off - take, hi - off)
    } else {
        (lo + off, lo + off + take)
    }
}

// ---------------------------------------------------------------------------------------------
// Replies and bookkeeping.

/// Publishes a sorted-set event, and `del` when the write emptied the key.
fn events(ctx: &Ctx<'_>, t: TenantId, key: &[u8], event: &str, deleted: bool) {
    notify(ctx.fx, t, ctx.conn.db, ZSET, event, key);
    if deleted {
        notify(ctx.fx, t, ctx.conn.db, GENERIC, "del", key);
    }
}

/// Members, with their scores when asked: pairs nested in RESP3, flat in RESP2.
fn reply_pairs<M: AsRef<[u8]>>(w: &mut ReplyWriter<'_>, pairs: &[(M, f64)], withscores: bool) {
    let resp3 = w.proto() == ProtocolVersion::Resp3;
    if withscores && resp3 {
        w.array(pairs.len());
        for (m, s) in pairs {
            w.array(2);
            w.bulk(m.as_ref());
            reply_score(w, *s);
        }
    } else {
        w.array(if withscores {
            pairs.len() * 2
        } else {
            pairs.len()
        });
        for (m, s) in pairs {
            w.bulk(m.as_ref());
            if withscores {
                reply_score(w, *s);
            }
        }
    }
}

/// Pairs always nested (ZMPOP, BZMPOP).
fn reply_nested(w: &mut ReplyWriter<'_>, pairs: &[Pair]) {
    w.array(pairs.len());
    for (m, s) in pairs {
        w.array(2);
        w.bulk(m);
        reply_score(w, *s);
    }
}

/// The bound to reserve before adding `members` to the sorted set at `key`.
fn bound_for<'a>(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    members: impl Iterator<Item = &'a [u8]> + Clone,
) -> Result<u64, CmdError> {
    let (n, bytes, longest) = members.fold((0, 0, 0), |(n, b, l), m| {
        (n + 1, b + m.len(), l.max(m.len()))
    });
    Ok(
        peek::<Zset, u64>(ctx, t, key, |z| z.grow_bound(n, bytes, longest))?
            .unwrap_or_else(|| Zset::default().grow_bound(n, bytes, longest)),
    )
}

// ---------------------------------------------------------------------------------------------
// ZADD, ZINCRBY.

#[derive(Debug, Default, Clone, Copy)]
struct AddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// What ZADD did.
#[derive(Debug, Default)]
struct AddOutcome {
    added: usize,
    updated: usize,
    /// INCR: the new score, `None` when a condition stopped it.
    score: Option<f64>,
    nan: bool,
}

fn zadd_core(ctx: &mut Ctx<'_>, key: &[u8], f: AddFlags, pairs: &[(f64, &[u8])]) -> CmdResult {
    let t = ctx.t()?;
    let exists = check_type::<Zset>(ctx, t, key)?;
    if !exists && f.xx {
        if f.incr {
            ctx.w.null();
        } else {
            ctx.w.integer(0);
        }
        return Ok(());
    }
    let bound = bound_for(ctx, t, key, pairs.iter().map(|(_, m)| *m))?;
    let (out, _) = write::<Zset, AddOutcome>(ctx, t, key, bound, true, |z| {
        let mut o = AddOutcome::default();
        for &(score, m) in pairs {
            match z.score(m) {
                Some(cur) => {
                    if f.nx {
                        o.score = None;
                        continue;
                    }
                    let new = if f.incr { cur + score } else { score };
                    if new.is_nan() {
                        o.nan = true;
                        return o;
                    }
                    if (f.gt && new <= cur) || (f.lt && new >= cur) {
                        o.score = None;
                        continue;
                    }
                    if new != cur {
                        z.set(m, new);
                        o.updated += 1;
                    }
                    o.score = Some(new);
                }
                None => {
                    if f.xx {
                        o.score = None;
                        continue;
                    }
                    z.insert(m, score);
                    o.added += 1;
                    o.score = Some(score);
                }
            }
        }
        o
    })?
    .expect("created");
    if out.nan {
        return Err(CmdError::msg("ERR resulting score is not a number (NaN)"));
    }
    if out.added + out.updated > 0 {
        touched(ctx, t, key);
        events(ctx, t, key, if f.incr { "zincr" } else { "zadd" }, false);
    }
    if f.incr {
        match out.score {
            Some(s) => reply_score(&mut ctx.w, s),
            None => ctx.w.null(),
        }
    } else {
        let n = out.added + if f.ch { out.updated } else { 0 };
        ctx.w.integer(n as i64);
    }
    Ok(())
}

/// `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]`
pub fn zadd(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let mut f = AddFlags::default();
    let mut i = 2;
    while i < a.len() {
        let w = &a[i];
        if is(w, "nx") {
            f.nx = true;
        } else if is(w, "xx") {
            f.xx = true;
        } else if is(w, "gt") {
            f.gt = true;
        } else if is(w, "lt") {
            f.lt = true;
        } else if is(w, "ch") {
            f.ch = true;
        } else if is(w, "incr") {
            f.incr = true;
        } else {
            break;
        }
        i += 1;
    }
    let rest = a.len() - i;
    if rest == 0 || !rest.is_multiple_of(2) {
        return Err(CmdError::Syntax);
    }
    if f.nx && f.xx {
        return Err(CmdError::msg(
            "ERR XX and NX options at the same time are not compatible",
        ));
    }
    if (f.nx && (f.gt || f.lt)) || (f.gt && f.lt) {
        return Err(CmdError::msg(
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if f.incr && rest > 2 {
        return Err(CmdError::msg(
            "ERR INCR option supports a single increment-element pair",
        ));
    }
    let mut pairs = Vec::with_capacity(rest / 2);
    for c in a[i..].chunks(2) {
        pairs.push((parse_score(&c[0]).ok_or(CmdError::NotFloat)?, &c[1][..]));
    }
    zadd_core(ctx, &a[1], f, &pairs)
}

/// `ZINCRBY key increment member`
pub fn zincrby(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let by = parse_score(&a[2]).ok_or(CmdError::NotFloat)?;
    let f = AddFlags {
        incr: true,
        ..AddFlags::default()
    };
    zadd_core(ctx, &a[1], f, &[(by, &a[3][..])])
}

// ---------------------------------------------------------------------------------------------
// Reads.

/// `ZCARD key`
pub fn zcard(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let n = read::<Zset, usize>(ctx, t, &a[1], Zset::len)?.unwrap_or(0);
    ctx.w.integer(n as i64);
    Ok(())
}

/// `ZSCORE key member`
pub fn zscore(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    match read::<Zset, Option<f64>>(ctx, t, &a[1], |z| z.score(&a[2]))?.flatten() {
        Some(s) => reply_score(&mut ctx.w, s),
        None => ctx.w.null(),
    }
    Ok(())
}

/// `ZMSCORE key member [member ...]`
pub fn zmscore(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let scores = read::<Zset, Vec<Option<f64>>>(ctx, t, &a[1], |z| {
        a[2..].iter().map(|m| z.score(m)).collect()
    })?
    .unwrap_or_else(|| vec![None; a.len() - 2]);
    ctx.w.array(scores.len());
    for s in scores {
        match s {
            Some(s) => reply_score(&mut ctx.w, s),
            None => ctx.w.null(),
        }
    }
    Ok(())
}

fn rank_generic(ctx: &mut Ctx<'_>, a: Args<'_, '_>, rev: bool) -> CmdResult {
    let t = ctx.t()?;
    let r = read::<Zset, Option<usize>>(ctx, t, &a[1], |z| {
        z.rank(&a[2])
            .map(|(r, _)| if rev { z.len() - 1 - r } else { r })
    })?
    .flatten();
    match r {
        Some(r) => ctx.w.integer(r as i64),
        None => ctx.w.null(),
    }
    Ok(())
}

/// `ZRANK key member`
pub fn zrank(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    rank_generic(ctx, a, false)
}

/// `ZREVRANK key member`
pub fn zrevrank(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    rank_generic(ctx, a, true)
}

/// `ZCOUNT key min max`
pub fn zcount(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let r = Range::Score(ScoreRange::parse(&a[2], &a[3])?);
    count_range(ctx, a, &r)
}

/// `ZLEXCOUNT key min max`
pub fn zlexcount(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let r = Range::Lex(LexRange::parse(&a[2], &a[3])?);
    count_range(ctx, a, &r)
}

fn count_range(ctx: &mut Ctx<'_>, a: Args<'_, '_>, r: &Range) -> CmdResult {
    let t = ctx.t()?;
    let n = read::<Zset, usize>(ctx, t, &a[1], |z| {
        let (lo, hi) = ranks(z, r, false);
        hi - lo
    })?
    .unwrap_or(0);
    ctx.w.integer(n as i64);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The ZRANGE family.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Auto,
    Rank,
    Score,
    Lex,
}

/// A parsed ZRANGE-family request.
struct RangeReq {
    range: Range,
    rev: bool,
    withscores: bool,
    limit: Option<(i64, i64)>,
}

/// Parses a ZRANGE-family command as Redis 7.0's `zrangeGenericCommand` does: `at` is the
/// source key's position; `kind` and `rev` are preset by the older commands.
fn parse_range_req(
    a: Args<'_, '_>,
    at: usize,
    mut kind: Kind,
    preset_rev: Option<bool>,
    store: bool,
) -> Result<RangeReq, CmdError> {
    let mut rev = preset_rev;
    let (mut withscores, mut lim_off, mut lim_cnt) = (false, 0i64, -1i64);
    let mut j = at + 3;
    while j < a.len() {
        let left = a.len() - j - 1;
        if !store && is(&a[j], "withscores") {
            withscores = true;
        } else if is(&a[j], "limit") && left >= 2 {
            lim_off = int_arg(&a[j + 1])?;
            lim_cnt = int_arg(&a[j + 2])?;
            j += 2;
        } else if rev.is_none() && is(&a[j], "rev") {
            rev = Some(true);
        } else if kind == Kind::Auto && is(&a[j], "bylex") {
            kind = Kind::Lex;
        } else if kind == Kind::Auto && is(&a[j], "byscore") {
            kind = Kind::Score;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    let rev = rev.unwrap_or(false);
    if kind == Kind::Auto {
        kind = Kind::Rank;
    }
    if lim_cnt != -1 && kind == Kind::Rank {
        return Err(CmdError::msg(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if withscores && kind == Kind::Lex {
        return Err(CmdError::msg(
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    let (mut lo, mut hi) = (&a[at + 1][..], &a[at + 2][..]);
    if rev && kind != Kind::Rank {
        std::mem::swap(&mut lo, &mut hi);
    }
    let range = match kind {
        Kind::Score => Range::Score(ScoreRange::parse(lo, hi)?),
        Kind::Lex => Range::Lex(LexRange::parse(lo, hi)?),
        _ => Range::Rank(int_arg(lo)?, int_arg(hi)?),
    };
    let limit = (kind != Kind::Rank).then_some((lim_off, lim_cnt));
    Ok(RangeReq {
        range,
        rev,
        withscores,
        limit,
    })
}

/// The members a request selects from `z`, in the order asked.
fn select(z: &Zset, q: &RangeReq) -> Vec<Pair> {
    let (lo, hi) = ranks(z, &q.range, q.rev);
    let (lo, hi) = limit(lo, hi, q.rev, q.limit);
    z.range(lo, hi, q.rev)
}

fn range_reply(ctx: &mut Ctx<'_>, a: Args<'_, '_>, q: &RangeReq) -> CmdResult {
    let t = ctx.t()?;
    let items = read::<Zset, Vec<Pair>>(ctx, t, &a[1], |z| select(z, q))?.unwrap_or_default();
    reply_pairs(&mut ctx.w, &items, q.withscores);
    Ok(())
}

/// `ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]`
pub fn zrange(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let q = parse_range_req(a, 1, Kind::Auto, None, false)?;
    range_reply(ctx, a, &q)
}

/// `ZREVRANGE key start stop [WITHSCORES]`
pub fn zrevrange(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let q = parse_range_req(a, 1, Kind::Rank, Some(true), false)?;
    range_reply(ctx, a, &q)
}

/// `ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]`
pub fn zrangebyscore(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let q = parse_range_req(a, 1, Kind::Score, Some(false), false)?;
    range_reply(ctx, a, &q)
}

/// `ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count]`
pub fn zrevrangebyscore(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let q = parse_range_req(a, 1, Kind::Score, Some(true), false)?;
    range_reply(ctx, a, &q)
}

/// `ZRANGEBYLEX key min max [LIMIT offset count]`
pub fn zrangebylex(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let q = parse_range_req(a, 1, Kind::Lex, Some(false), false)?;
    range_reply(ctx, a, &q)
}

/// `ZREVRANGEBYLEX key max min [LIMIT offset count]`
pub fn zrevrangebylex(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let q = parse_range_req(a, 1, Kind::Lex, Some(true), false)?;
    range_reply(ctx, a, &q)
}

/// Stores `pairs` at `dst` as a sorted set (replacing any value and TTL); an empty result
/// deletes `dst`. Touches and notifies `event` (or `del`) when something changed.
fn store_result(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    dst: &[u8],
    pairs: &[Pair],
    event: &str,
) -> CmdResult {
    if pairs.is_empty() {
        if ctx.eng.delete(t, dst) {
            touched(ctx, t, dst);
            notify(ctx.fx, t, ctx.conn.db, GENERIC, "del", dst);
        }
    } else {
        super::store(ctx, t, dst, Box::new(Zset::from_pairs(pairs)))?;
        touched(ctx, t, dst);
        events(ctx, t, dst, event, false);
    }
    ctx.w.integer(pairs.len() as i64);
    Ok(())
}

/// `ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]`
pub fn zrangestore(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let q = parse_range_req(a, 2, Kind::Auto, None, true)?;
    let t = ctx.t()?;
    let items = read::<Zset, Vec<Pair>>(ctx, t, &a[2], |z| select(z, &q))?.unwrap_or_default();
    store_result(ctx, t, &a[1], &items, "zrangestore")
}

// ---------------------------------------------------------------------------------------------
// Removals.

/// `ZREM key member [member ...]`
pub fn zrem(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let t = ctx.t()?;
    let r = write::<Zset, usize>(ctx, t, &a[1], 0, false, |z| {
        a[2..].iter().filter(|m| z.remove(m).is_some()).count()
    })?;
    let (n, deleted) = r.map_or((0, false), |(n, w)| (n, w.deleted));
    if n > 0 {
        touched(ctx, t, &a[1]);
        events(ctx, t, &a[1], "zrem", deleted);
    }
    ctx.w.integer(n as i64);
    Ok(())
}

fn remrange(ctx: &mut Ctx<'_>, a: Args<'_, '_>, r: Range, event: &str) -> CmdResult {
    let t = ctx.t()?;
    let res = write::<Zset, usize>(ctx, t, &a[1], 0, false, |z| {
        let (lo, hi) = ranks(z, &r, false);
        z.remove_ranks(lo, hi)
    })?;
    let (n, deleted) = res.map_or((0, false), |(n, w)| (n, w.deleted));
    if n > 0 {
        touched(ctx, t, &a[1]);
        events(ctx, t, &a[1], event, deleted);
    }
    ctx.w.integer(n as i64);
    Ok(())
}

/// `ZREMRANGEBYRANK key start stop`
pub fn zremrangebyrank(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let r = Range::Rank(int_arg(&a[2])?, int_arg(&a[3])?);
    remrange(ctx, a, r, "zremrangebyrank")
}

/// `ZREMRANGEBYSCORE key min max`
pub fn zremrangebyscore(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let r = Range::Score(ScoreRange::parse(&a[2], &a[3])?);
    remrange(ctx, a, r, "zremrangebyscore")
}

/// `ZREMRANGEBYLEX key min max`
pub fn zremrangebylex(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let r = Range::Lex(LexRange::parse(&a[2], &a[3])?);
    remrange(ctx, a, r, "zremrangebylex")
}

// ---------------------------------------------------------------------------------------------
// Pops.

/// Pops up to `count` members from the lowest (`max` false) or highest end of `key`; `None`
/// when absent. Touches and notifies.
fn pop_n(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    key: &[u8],
    max: bool,
    count: usize,
) -> Result<Option<Vec<Pair>>, CmdError> {
    let r = write::<Zset, Vec<Pair>>(ctx, t, key, 0, false, |z| z.pop(max, count))?;
    let Some((items, w)) = r else {
        return Ok(None);
    };
    if !items.is_empty() {
        touched(ctx, t, key);
        events(
            ctx,
            t,
            key,
            if max { "zpopmax" } else { "zpopmin" },
            w.deleted,
        );
    }
    Ok(Some(items))
}

fn zpop(ctx: &mut Ctx<'_>, a: Args<'_, '_>, max: bool) -> CmdResult {
    if a.len() > 3 {
        return Err(CmdError::Syntax);
    }
    let count = match a.get(2) {
        Some(c) => Some(
            parse_i64(c)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(|| CmdError::msg("ERR value is out of range, must be positive"))?,
        ),
        None => None,
    };
    let t = ctx.t()?;
    let items = if count == Some(0) {
        check_type::<Zset>(ctx, t, &a[1])?;
        Vec::new()
    } else {
        pop_n(ctx, t, &a[1], max, count.unwrap_or(1))?.unwrap_or_default()
    };
    if count.is_some() {
        reply_pairs(&mut ctx.w, &items, true);
    } else {
        // One member: a flat pair in both protocols.
        ctx.w.array(items.len() * 2);
        for (m, s) in &items {
            ctx.w.bulk(m);
            reply_score(&mut ctx.w, *s);
        }
    }
    Ok(())
}

/// `ZPOPMIN key [count]`
pub fn zpopmin(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    zpop(ctx, a, false)
}

/// `ZPOPMAX key [count]`
pub fn zpopmax(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    zpop(ctx, a, true)
}

/// ZMPOP's MIN|MAX: true for MAX.
fn min_max(w: &[u8]) -> Result<bool, CmdError> {
    if is(w, "min") {
        Ok(false)
    } else if is(w, "max") {
        Ok(true)
    } else {
        Err(CmdError::Syntax)
    }
}

/// A key and the members popped from it.
type Popped = (Vec<u8>, Vec<Pair>);

/// Pops from the first of `keys` holding a non-empty sorted set.
fn mpop(
    ctx: &mut Ctx<'_>,
    t: TenantId,
    keys: &[&[u8]],
    max: bool,
    count: usize,
) -> Result<Option<Popped>, CmdError> {
    for &k in keys {
        if !check_type::<Zset>(ctx, t, k)? {
            continue;
        }
        if let Some(items) = pop_n(ctx, t, k, max, count)?
            && !items.is_empty()
        {
            return Ok(Some((k.to_vec(), items)));
        }
    }
    Ok(None)
}

fn reply_key_pairs(ctx: &mut Ctx<'_>, key: &[u8], items: &[Pair]) {
    ctx.w.array(2);
    ctx.w.bulk(key);
    reply_nested(&mut ctx.w, items);
}

/// `ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]`
pub fn zmpop(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let (keys, max, count) = mpop_args(a, 1, min_max)?;
    let t = ctx.t()?;
    match mpop(ctx, t, &keys, max, count)? {
        Some((k, items)) => reply_key_pairs(ctx, &k, &items),
        None => ctx.w.null_array(),
    }
    Ok(())
}

fn bzpop(ctx: &mut Ctx<'_>, a: Args<'_, '_>, max: bool) -> CmdResult {
    let timeout = blocking::parse_timeout(&a[a.len() - 1])?;
    let t = ctx.t()?;
    let keys: Vec<&[u8]> = a[1..a.len() - 1].iter().map(|k| &k[..]).collect();
    if let Some((k, items)) = mpop(ctx, t, &keys, max, 1)?
        && let Some((m, s)) = items.first()
    {
        ctx.w.array(3);
        ctx.w.bulk(&k);
        ctx.w.bulk(m);
        reply_score(&mut ctx.w, *s);
        return Ok(());
    }
    blocking::block(ctx, a, &keys, KIND, timeout, blocking::Denied::NullArray)
}

/// `BZPOPMIN key [key ...] timeout`
pub fn bzpopmin(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    bzpop(ctx, a, false)
}

/// `BZPOPMAX key [key ...] timeout`
pub fn bzpopmax(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    bzpop(ctx, a, true)
}

/// `BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]`
pub fn bzmpop(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let timeout = blocking::parse_timeout(&a[1])?;
    let (keys, max, count) = mpop_args(a, 2, min_max)?;
    let t = ctx.t()?;
    match mpop(ctx, t, &keys, max, count)? {
        Some((k, items)) => {
            reply_key_pairs(ctx, &k, &items);
            Ok(())
        }
        None => blocking::block(ctx, a, &keys, KIND, timeout, blocking::Denied::NullArray),
    }
}

// ---------------------------------------------------------------------------------------------
// ZUNION, ZINTER, ZDIFF, ZINTERCARD.

/// Checks one input of ZUNION/ZINTER/ZDIFF, touched as a read: a sorted set, a plain set (every
/// score 1, as in Redis) or absent.
///
/// # Errors
/// WRONGTYPE for a string, list or hash.
fn check_input(ctx: &mut Ctx<'_>, t: TenantId, key: &[u8]) -> Result<(), CmdError> {
    match ctx.eng.get_value(t, key) {
        None => Ok(()),
        Some(ValueRef::Obj(o)) if o.as_any().is::<Zset>() || o.as_any().is::<Set>() => Ok(()),
        Some(_) => Err(CmdError::WrongType),
    }
}

/// One input, borrowed from the engine.
#[derive(Clone, Copy)]
enum Input<'a> {
    Zset(&'a Zset),
    Set(&'a Set),
}

impl<'a> Input<'a> {
    fn len(self) -> usize {
        match self {
            Input::Zset(z) => z.len(),
            Input::Set(s) => s.len(),
        }
    }

    /// The score of `m`, 1 for a member of a plain set.
    fn score(self, m: &[u8]) -> Option<f64> {
        match self {
            Input::Zset(z) => z.score(m),
            Input::Set(s) => s.contains(m).then_some(1.0),
        }
    }

    /// Calls `f` on every (member, score) in order (a plain set's integers formatted).
    fn each(self, mut f: impl FnMut(Cow<'a, [u8]>, f64)) {
        match self {
            Input::Zset(z) => z.visit_all(|m, s| f(Cow::Borrowed(m), s)),
            Input::Set(s) => s.iter().for_each(|m| match m {
                Member::Str(b) => f(Cow::Borrowed(b), 1.0),
                Member::Int(i) => f(
                    Cow::Owned(itoa::Buffer::new().format(i).as_bytes().to_vec()),
                    1.0,
                ),
            }),
        }
    }
}

/// The inputs at `keys`, borrowed together (`None` for an absent key); each was checked by
/// [`check_input`].
fn borrow_inputs<'e>(
    eng: &'e mut locus_engine::Engine,
    t: TenantId,
    keys: &[&[u8]],
) -> Vec<Option<Input<'e>>> {
    eng.peek_values(t, keys)
        .into_iter()
        .map(|v| match v {
            Some(ValueRef::Obj(o)) => {
                let any = o.as_any();
                any.downcast_ref::<Zset>()
                    .map(Input::Zset)
                    .or_else(|| any.downcast_ref::<Set>().map(Input::Set))
            }
            _ => None,
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SetOp {
    Union,
    Inter,
    Diff,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Agg {
    Sum,
    Min,
    Max,
}

/// Folds `v` into `acc` as Redis's `zunionInterAggregate` does (a NaN sum is 0; MIN and MAX
/// keep `acc` unless `v` is strictly beyond it).
fn aggregate(agg: Agg, acc: f64, v: f64) -> f64 {
    match agg {
        Agg::Sum => {
            let r = acc + v;
            if r.is_nan() { 0.0 } else { r }
        }
        Agg::Min => {
            if v < acc {
                v
            } else {
                acc
            }
        }
        Agg::Max => {
            if v > acc {
                v
            } else {
                acc
            }
        }
    }
}

/// The weights of the arguments naming one input, and their common value when they are all
/// the same nonzero weight (a key named many times without WEIGHTS).
struct Weights {
    all: Vec<f64>,
    same: Option<f64>,
}

/// Below this every integer is a double, and a sum of integers stays exact.
const EXACT_INT: f64 = 9_007_199_254_740_992.0;

/// Folds `v` times each of `weights` into `acc`, in order, as [`aggregate`] would one by one,
/// with the aggregate chosen once outside the loop. When the weights are all one value `w`
/// (`same`), the folds collapse without changing a bit of the result: MIN and MAX of the same
/// `x = v * w` again change nothing, and a sum of integer-valued doubles below 2^53 is exact,
/// so `acc + x + ... + x` (n times) is `acc + n * x`.
fn fold(agg: Agg, mut acc: f64, v: f64, weights: &[f64], same: Option<f64>) -> f64 {
    if let (Some(w), n @ 2..) = (same, weights.len()) {
        let x = v * w;
        match agg {
            Agg::Min => return if x < acc { x } else { acc },
            Agg::Max => return if x > acc { x } else { acc },
            Agg::Sum => {
                let nf = n as f64;
                if x != 0.0
                    && x.fract() == 0.0
                    && acc.fract() == 0.0
                    && acc.abs() + nf * x.abs() < EXACT_INT
                {
                    return acc + nf * x;
                }
            }
        }
    }
    match agg {
        Agg::Sum => {
            for &w in weights {
                acc += v * w;
                if acc.is_nan() {
                    acc = 0.0;
                }
            }
        }
        Agg::Min => {
            for &w in weights {
                let x = v * w;
                if x < acc {
                    acc = x;
                }
            }
        }
        Agg::Max => {
            for &w in weights {
                let x = v * w;
                if x > acc {
                    acc = x;
                }
            }
        }
    }
    acc
}

/// A parsed ZUNION/ZINTER/ZDIFF/ZINTERCARD: its keys (checked), weights and options.
struct SetOpReq<'x> {
    /// The distinct keys, in the order first named, and each key argument's index among them.
    uniq: Vec<&'x [u8]>,
    at: Vec<usize>,
    weights: Vec<f64>,
    agg: Agg,
    withscores: bool,
    limit: usize,
}

/// Parses from `numkeys` at `at` as Redis 7.0's `zunionInterDiffGenericCommand` does: the
/// count, the keys (read, WRONGTYPE before any option is looked at), then the options.
fn parse_setop<'x>(
    ctx: &mut Ctx<'_>,
    a: Args<'x, '_>,
    at: usize,
    op: SetOp,
    store: bool,
    card: bool,
    name: &str,
) -> Result<SetOpReq<'x>, CmdError> {
    let n = int_arg(&a[at])?;
    if n < 1 {
        return Err(CmdError::msg(format!(
            "ERR at least 1 input key is needed for '{name}' command"
        )));
    }
    if n as u64 > (a.len() - at - 1) as u64 {
        return Err(CmdError::Syntax);
    }
    let n = n as usize;
    let t = ctx.t()?;
    let keys: Vec<&[u8]> = a[at + 1..at + 1 + n].iter().map(|k| &k[..]).collect();
    // Each distinct key checked once, in the order first named (as set algebra's lookup).
    let (uniq, at_uniq) = super::set::distinct(&keys);
    for k in &uniq {
        check_input(ctx, t, k)?;
    }
    let mut q = SetOpReq {
        uniq,
        at: at_uniq,
        weights: vec![1.0; n],
        agg: Agg::Sum,
        withscores: false,
        limit: 0,
    };
    let mut j = at + 1 + n;
    while j < a.len() {
        let rem = a.len() - j;
        if op != SetOp::Diff && !card && rem > n && is(&a[j], "weights") {
            for i in 0..n {
                q.weights[i] = parse_score(&a[j + 1 + i])
                    .ok_or_else(|| CmdError::msg("ERR weight value is not a float"))?;
            }
            j += 1 + n;
        } else if op != SetOp::Diff && !card && rem >= 2 && is(&a[j], "aggregate") {
            let v = &a[j + 1];
            q.agg = if is(v, "sum") {
                Agg::Sum
            } else if is(v, "min") {
                Agg::Min
            } else if is(v, "max") {
                Agg::Max
            } else {
                return Err(CmdError::Syntax);
            };
            j += 2;
        } else if !store && !card && is(&a[j], "withscores") {
            q.withscores = true;
            j += 1;
        } else if card && rem >= 2 && is(&a[j], "limit") {
            q.limit = parse_i64(&a[j + 1])
                .and_then(|l| usize::try_from(l).ok())
                .ok_or_else(|| CmdError::msg("ERR LIMIT can't be negative"))?;
            j += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    Ok(q)
}

fn weighted(s: f64, w: f64) -> f64 {
    let v = s * w;
    if v.is_nan() { 0.0 } else { v }
}

/// A result member with its score; borrowed from an input where it can be.
type Scored<'a> = (Cow<'a, [u8]>, f64);

/// The inputs in the order Redis folds them (smallest first, as its `zuiCompareByCardinality`
/// sort), each distinct key once with the weights of every argument naming it, in order: a key
/// named 400 times is iterated or looked up once and its score folded 400 times, which gives
/// the scores Redis gives (the same folds, in an order its sort may also choose).
fn groups<'a>(
    inputs: &[Option<Input<'a>>],
    at: &[usize],
    weights: &[f64],
) -> Vec<(Option<Input<'a>>, Weights)> {
    let mut args: Vec<usize> = (0..at.len()).collect();
    args.sort_by_key(|&i| (inputs[at[i]].map_or(0, Input::len), at[i]));
    let mut out: Vec<(usize, Vec<f64>)> = Vec::new();
    for i in args {
        match out.last_mut() {
            Some((d, ws)) if *d == at[i] => ws.push(weights[i]),
            _ => out.push((at[i], vec![weights[i]])),
        }
    }
    out.into_iter()
        .map(|(d, all)| {
            let w0 = all[0];
            let same =
                (w0 != 0.0 && all.iter().all(|&w| w.to_bits() == w0.to_bits())).then_some(w0);
            (inputs[d], Weights { all, same })
        })
        .collect()
}

/// ZINTER's members with their scores, or only their count when `card` (stopping at `limit`,
/// 0: none), as Redis's `zunionInterDiffGenericCommand`: each member of the smallest input
/// looked up in the others, smallest first, so a miss comes early.
fn inter_scored<'a>(
    groups: &[(Option<Input<'a>>, Weights)],
    agg: Agg,
    card: bool,
    limit: usize,
) -> (Vec<Scored<'a>>, usize) {
    let mut out = Vec::new();
    let mut count = 0usize;
    if groups.iter().any(|(i, _)| i.is_none_or(|i| i.len() == 0)) {
        return (out, 0);
    }
    let Some(((Some(first), ws0), rest)) = groups.split_first() else {
        return (out, 0);
    };
    let rest: Vec<(Input<'a>, &Weights)> = rest
        .iter()
        .filter_map(|(i, ws)| i.map(|i| (i, ws)))
        .collect();
    let mut done = false;
    first.each(|m, s| {
        if done {
            return;
        }
        if card {
            // Only the count: no score is folded.
            if rest.iter().all(|(inp, _)| inp.score(&m).is_some()) {
                count += 1;
                done = count == limit;
            }
            return;
        }
        // Redis zeroes a NaN only in the first input's weighted score; later ones are folded
        // as they come (a NaN sum becomes 0 there).
        let mut score = fold(agg, weighted(s, ws0.all[0]), s, &ws0.all[1..], ws0.same);
        for (inp, ws) in &rest {
            let Some(v) = inp.score(&m) else {
                return;
            };
            score = fold(agg, score, v, &ws.all, ws.same);
        }
        count += 1;
        out.push((m, score));
    });
    (out, count)
}

/// ZUNION's members with their scores: every input folded into one map, smallest first.
fn union_scored<'a>(groups: &[(Option<Input<'a>>, Weights)], agg: Agg) -> Vec<Scored<'a>> {
    let largest = groups
        .iter()
        .filter_map(|(i, _)| i.map(Input::len))
        .max()
        .unwrap_or(0);
    let mut acc: HashMap<Cow<'a, [u8]>, f64, RandomState> =
        HashMap::with_capacity_and_hasher(largest, RandomState::new());
    for (inp, ws) in groups {
        let Some(inp) = inp else { continue };
        let ws = &ws.all;
        inp.each(|m, s| match acc.get_mut(&m[..]) {
            Some(cur) => {
                for &w in ws.iter() {
                    *cur = aggregate(agg, *cur, weighted(s, w));
                }
            }
            None => {
                let mut v = weighted(s, ws[0]);
                for &w in &ws[1..] {
                    v = aggregate(agg, v, weighted(s, w));
                }
                acc.insert(m, v);
            }
        });
    }
    acc.into_iter().collect()
}

/// ZDIFF's members with their scores (the first input's), by the cheaper of Redis's two
/// algorithms: each member of the first looked up in the others, largest first, or a copy of
/// the first with the others' members removed (stopping once it is empty). A later key naming
/// the first input removes everything.
fn diff_scored<'a>(inputs: &[Option<Input<'a>>], at: &[usize]) -> Vec<Scored<'a>> {
    let first = at[0];
    let Some(f) = inputs[first] else {
        return Vec::new();
    };
    if at[1..].contains(&first) {
        return Vec::new();
    }
    let mut others: Vec<Input<'a>> = inputs
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != first)
        .filter_map(|(_, i)| *i)
        .collect();
    let one = f.len() as u64 * (others.len() as u64 + 1) / 2;
    let two: u64 = f.len() as u64 + others.iter().map(|i| i.len() as u64).sum::<u64>();
    let mut out = Vec::new();
    if one <= two {
        others.sort_by_key(|i| std::cmp::Reverse(i.len()));
        f.each(|m, s| {
            if !others.iter().any(|o| o.score(&m).is_some()) {
                out.push((m, s));
            }
        });
    } else {
        let mut acc: HashMap<Cow<'a, [u8]>, f64, RandomState> =
            HashMap::with_capacity_and_hasher(f.len(), RandomState::new());
        f.each(|m, s| {
            acc.insert(m, s);
        });
        for o in &others {
            if acc.is_empty() {
                break;
            }
            o.each(|m, _| {
                acc.remove(&m[..]);
            });
        }
        out.extend(acc);
    }
    out
}

/// Sorts a result into a sorted set's order: by score, then by member.
fn sort_scored(out: &mut [Scored<'_>]) {
    out.sort_unstable_by(|a, b| {
        a.1.partial_cmp(&b.1)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| a.0.cmp(&b.0))
    });
}

/// Runs `op` over the checked keys of `q` with every input borrowed at once; `f` gets the
/// result in order (or only the count, for `card`).
fn run_setop<R>(
    eng: &mut locus_engine::Engine,
    t: TenantId,
    op: SetOp,
    q: &SetOpReq<'_>,
    card: bool,
    f: impl FnOnce(&[Scored<'_>], usize) -> R,
) -> R {
    let (uniq, at) = (&q.uniq, &q.at);
    let inputs = borrow_inputs(eng, t, uniq);
    let (mut out, count) = match op {
        SetOp::Inter => inter_scored(&groups(&inputs, at, &q.weights), q.agg, card, q.limit),
        SetOp::Union => {
            let v = union_scored(&groups(&inputs, at, &q.weights), q.agg);
            let n = v.len();
            (v, n)
        }
        SetOp::Diff => {
            let v = diff_scored(&inputs, at);
            let n = v.len();
            (v, n)
        }
    };
    sort_scored(&mut out);
    f(&out, count)
}

fn setop(ctx: &mut Ctx<'_>, a: Args<'_, '_>, op: SetOp, store: bool) -> CmdResult {
    let name = String::from_utf8_lossy(&a[0]).to_ascii_lowercase();
    let at = if store { 2 } else { 1 };
    let q = parse_setop(ctx, a, at, op, store, false, &name)?;
    let t = ctx.t()?;
    if store {
        let res: Vec<Pair> = run_setop(ctx.eng, t, op, &q, false, |out, _| {
            out.iter().map(|(m, s)| (m.to_vec(), *s)).collect()
        });
        let event = match op {
            SetOp::Union => "zunionstore",
            SetOp::Inter => "zinterstore",
            SetOp::Diff => "zdiffstore",
        };
        store_result(ctx, t, &a[1], &res, event)
    } else {
        let w = &mut ctx.w;
        run_setop(ctx.eng, t, op, &q, false, |out, _| {
            reply_pairs(w, out, q.withscores)
        });
        Ok(())
    }
}

/// `ZUNION numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]`
pub fn zunion(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    setop(ctx, a, SetOp::Union, false)
}

/// `ZINTER numkeys key [key ...] [WEIGHTS weight ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]`
pub fn zinter(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    setop(ctx, a, SetOp::Inter, false)
}

/// `ZDIFF numkeys key [key ...] [WITHSCORES]`
pub fn zdiff(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    setop(ctx, a, SetOp::Diff, false)
}

/// `ZUNIONSTORE destination numkeys key [key ...] [WEIGHTS ...] [AGGREGATE ...]`
pub fn zunionstore(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    setop(ctx, a, SetOp::Union, true)
}

/// `ZINTERSTORE destination numkeys key [key ...] [WEIGHTS ...] [AGGREGATE ...]`
pub fn zinterstore(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    setop(ctx, a, SetOp::Inter, true)
}

/// `ZDIFFSTORE destination numkeys key [key ...]`
pub fn zdiffstore(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    setop(ctx, a, SetOp::Diff, true)
}

/// `ZINTERCARD numkeys key [key ...] [LIMIT limit]`: counts without building the result, and
/// stops at the limit.
pub fn zintercard(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let q = parse_setop(ctx, a, 1, SetOp::Inter, false, true, "zintercard")?;
    let t = ctx.t()?;
    let n = run_setop(ctx.eng, t, SetOp::Inter, &q, true, |_, n| n);
    ctx.w.integer(n as i64);
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// ZRANDMEMBER, ZSCAN.

/// `ZRANDMEMBER key [count [WITHSCORES]]`
pub fn zrandmember(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let (count, withscores) = rand_args(a, "withscores")?;
    let t = ctx.t()?;
    let picked: Option<Vec<Pair>> = read::<Zset, _>(ctx, t, &a[1], |z| match count {
        Some(c) if c >= 0 && c as usize >= z.len() => z.pairs(),
        _ => random_picks(z.len(), count)
            .into_iter()
            .map(|i| z.range(i, i + 1, false).pop().unwrap_or_default())
            .collect(),
    })?;
    match (count, picked) {
        (None, None) => ctx.w.null(),
        (None, Some(p)) => ctx.w.bulk(&p[0].0),
        (Some(_), None) => ctx.w.array(0),
        (Some(_), Some(p)) => reply_pairs(&mut ctx.w, &p, withscores),
    }
    Ok(())
}

/// `ZSCAN key cursor [MATCH pattern] [COUNT count]`: a packed sorted set whole in one call
/// (cursor 0), as Redis answers for a listpack; a large one `COUNT` member slots a call (see
/// [`ZTree::scan_slots`]), so a large sorted set is never copied whole under the engine lock.
pub fn zscan(ctx: &mut Ctx<'_>, a: Args<'_, '_>) -> CmdResult {
    let sa = scan_args(a, 2)?;
    let t = ctx.t()?;
    let step = |z: &Zset| -> (u64, Vec<Pair>) {
        match z {
            Zset::Packed(_) => (
                0,
                z.pairs()
                    .into_iter()
                    .filter(|(m, _)| sa.matches(m))
                    .collect(),
            ),
            Zset::Skip(s) => {
                let mut out = Vec::new();
                let next = s.scan_slots(sa.cursor, sa.count, |m, sc| {
                    if sa.matches(m) {
                        out.push((m.to_vec(), sc));
                    }
                });
                (next, out)
            }
        }
    };
    let (next, pairs) = read::<Zset, _>(ctx, t, &a[1], step)?.unwrap_or_default();
    ctx.w.array(2);
    ctx.w.bulk(next.to_string().as_bytes());
    ctx.w.array(pairs.len() * 2);
    for (m, s) in &pairs {
        ctx.w.bulk(m);
        ctx.w.bulk(fmt_score(*s).as_bytes());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_print_as_redis_prints_them() {
        assert_eq!(fmt_score(1.1), "1.1000000000000001");
        assert_eq!(fmt_score(3.0), "3");
        assert_eq!(fmt_score(1.5), "1.5");
        assert_eq!(fmt_score(1e-5), "1.0000000000000001e-05");
        assert_eq!(fmt_score(0.1), "0.10000000000000001");
        assert_eq!(fmt_score(1e16), "10000000000000000");
        assert_eq!(fmt_score(1e17), "1e+17");
        assert_eq!(fmt_score(123456789012345678.0), "1.2345678901234568e+17");
        assert_eq!(fmt_score(1e300), "1.0000000000000001e+300");
        assert_eq!(fmt_score(-0.0), "-0");
        assert_eq!(fmt_score(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn packed_scores_round_trip() {
        for s in [
            0.0, 1.0, -1.0, 127.0, 128.0, -129.0, 1e15, -3.5, 0.1, 1e300, 9e15,
        ] {
            let mut b = [0u8; 8];
            let n = enc_score(s, &mut b);
            assert_eq!(dec_score(&b[..n]), s, "{s}");
        }
    }

    #[test]
    fn a_zset_converts_and_keeps_order() {
        let mut z = Zset::default();
        for i in 0..300u32 {
            let m = format!("m{i}");
            let before = z.charge();
            let bound = z.grow_bound(1, m.len(), m.len());
            z.set(m.as_bytes(), f64::from(i % 17));
            assert!(z.charge() <= before + bound, "member {i}");
        }
        assert_eq!(z.encoding(), "skiplist");
        let p = z.pairs();
        assert!(p.windows(2).all(|w| lt(w[0].1, &w[0].0, w[1].1, &w[1].0)));
        assert_eq!(z.rank(b"m0"), Some((0, 0.0)));
        assert_eq!(z.remove_ranks(0, 10), 10);
        assert_eq!(z.len(), 290);
    }
}
