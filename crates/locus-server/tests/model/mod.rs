//! A naive model of Redis's types for the typed-command tests: commands as values, the reply
//! each must get, and a minimal RESP2 reply parser.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use proptest::prelude::*;

/// A parsed RESP2 reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Reply>>),
}

/// Parses one whole RESP2 reply.
pub fn parse_reply(b: &[u8]) -> Option<Reply> {
    let (r, n) = parse_at(b, 0)?;
    (n == b.len()).then_some(r)
}

fn line(b: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let end = b[at..].windows(2).position(|w| w == b"\r\n")? + at;
    Some((&b[at..end], end + 2))
}

fn parse_at(b: &[u8], at: usize) -> Option<(Reply, usize)> {
    let (l, next) = line(b, at + 1)?;
    let text = std::str::from_utf8(l).ok()?;
    match b.get(at)? {
        b'+' => Some((Reply::Simple(text.into()), next)),
        b'-' => Some((Reply::Error(text.into()), next)),
        b':' => Some((Reply::Int(text.parse().ok()?), next)),
        b'$' => {
            let n: i64 = text.parse().ok()?;
            if n < 0 {
                return Some((Reply::Bulk(None), next));
            }
            let end = next + n as usize;
            Some((Reply::Bulk(Some(b.get(next..end)?.to_vec())), end + 2))
        }
        b'*' => {
            let n: i64 = text.parse().ok()?;
            if n < 0 {
                return Some((Reply::Array(None), next));
            }
            let mut items = Vec::new();
            let mut at = next;
            for _ in 0..n {
                let (r, nx) = parse_at(b, at)?;
                items.push(r);
                at = nx;
            }
            Some((Reply::Array(Some(items)), at))
        }
        _ => None,
    }
}

/// What the model expects.
#[derive(Debug, Clone)]
pub struct Expect {
    reply: Reply,
    /// Array elements (or pairs of them) in any order.
    unordered: Option<usize>,
}

impl Expect {
    fn exact(reply: Reply) -> Self {
        Self {
            reply,
            unordered: None,
        }
    }

    /// Whether `got` is this reply (errors: the same first word).
    pub fn matches(&self, got: &Reply) -> bool {
        match (&self.reply, got, self.unordered) {
            (Reply::Error(w), Reply::Error(g), _) => w.split(' ').next() == g.split(' ').next(),
            (Reply::Array(Some(w)), Reply::Array(Some(g)), Some(group)) => {
                let norm = |v: &[Reply]| {
                    let mut c: Vec<Vec<Reply>> = v.chunks(group).map(<[Reply]>::to_vec).collect();
                    c.sort_by_key(|x| format!("{x:?}"));
                    c
                };
                w.len() == g.len() && norm(w) == norm(g)
            }
            (w, g, _) => w == g,
        }
    }
}

fn int(n: i64) -> Expect {
    Expect::exact(Reply::Int(n))
}
fn ok() -> Expect {
    Expect::exact(Reply::Simple("OK".into()))
}
fn bulk(v: Option<&[u8]>) -> Expect {
    Expect::exact(Reply::Bulk(v.map(<[u8]>::to_vec)))
}
fn wrongtype() -> Expect {
    Expect::exact(Reply::Error("WRONGTYPE".into()))
}
fn err(w: &str) -> Expect {
    Expect::exact(Reply::Error(w.into()))
}
fn array(items: Vec<Vec<u8>>, unordered: Option<usize>) -> Expect {
    Expect {
        reply: Reply::Array(Some(
            items.into_iter().map(|x| Reply::Bulk(Some(x))).collect(),
        )),
        unordered,
    }
}

/// A stream's entries by ID (ms, seq), each its field-value pairs in order.
pub type Entries = BTreeMap<(u64, u64), Vec<(Vec<u8>, Vec<u8>)>>;

/// One value of the model.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Str(Vec<u8>),
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    List(VecDeque<Vec<u8>>),
    Set(BTreeSet<Vec<u8>>),
    ZSet(BTreeMap<Vec<u8>, i64>),
    /// Entries by ID (ms, seq), and the last ID the stream handed out (XDEL and XTRIM keep it).
    Stream(Entries, (u64, u64)),
}

/// One command.
#[derive(Debug, Clone)]
pub enum Op {
    Set(u8, Vec<u8>),
    Get(u8),
    Append(u8, Vec<u8>),
    Del(u8),
    Type(u8),
    HSet(u8, Vec<(u8, Vec<u8>)>),
    HGet(u8, u8),
    HDel(u8, u8),
    HLen(u8),
    HGetAll(u8),
    HIncrBy(u8, u8, i64),
    LPush(u8, bool, Vec<Vec<u8>>),
    LPop(u8, bool),
    LRange(u8),
    LLen(u8),
    LIndex(u8, i64),
    SAdd(u8, Vec<u8>),
    SRem(u8, u8),
    SCard(u8),
    SIsMember(u8, u8),
    SMembers(u8),
    SMove(u8, u8, u8),
    /// SINTER/SUNION/SDIFF of two keys (`store`: into a destination, the STORE form).
    SAlgebra(SetOp, Option<u8>, u8, u8),
    ZAdd(u8, i64, u8),
    ZRem(u8, u8),
    ZScore(u8, u8),
    ZCard(u8),
    ZRangeWithScores(u8),
    ZIncrBy(u8, i64, u8),
    ZPopMin(u8),
    ZRank(u8, u8),
    ZCount(u8, i64, i64),
    /// `XADD key <ms>-* f v ...`: the next sequence number within `ms` (1..=20).
    XAdd(u8, u64, Vec<(u8, Vec<u8>)>),
    XLen(u8),
    /// `XRANGE key - +`.
    XRange(u8),
    /// `XDEL key <ms>-<seq>`.
    XDel(u8, u64, u64),
    /// `XTRIM key MAXLEN <n>` (exact).
    XTrim(u8, u64),
}

/// Which set algebra.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetOp {
    Inter,
    Union,
    Diff,
}

fn key(k: u8) -> Vec<u8> {
    format!("k{k}").into_bytes()
}
fn field(f: u8) -> Vec<u8> {
    format!("f{f}").into_bytes()
}
/// A set member: an integer for most, so that sets start as intsets and convert.
fn member(m: u8) -> Vec<u8> {
    if m % 4 == 3 {
        field(m)
    } else {
        (i64::from(m) * 1_000_003 - 100_000_000)
            .to_string()
            .into_bytes()
    }
}

impl Op {
    /// The command's words.
    pub fn words(&self) -> Vec<Vec<u8>> {
        let w = |s: &str| s.as_bytes().to_vec();
        let n = |x: i64| x.to_string().into_bytes();
        match self {
            Op::Set(k, v) => vec![w("SET"), key(*k), v.clone()],
            Op::Get(k) => vec![w("GET"), key(*k)],
            Op::Append(k, v) => vec![w("APPEND"), key(*k), v.clone()],
            Op::Del(k) => vec![w("DEL"), key(*k)],
            Op::Type(k) => vec![w("TYPE"), key(*k)],
            Op::HSet(k, pairs) => {
                let mut v = vec![w("HSET"), key(*k)];
                for (f, x) in pairs {
                    v.push(field(*f));
                    v.push(x.clone());
                }
                v
            }
            Op::HGet(k, f) => vec![w("HGET"), key(*k), field(*f)],
            Op::HDel(k, f) => vec![w("HDEL"), key(*k), field(*f)],
            Op::HLen(k) => vec![w("HLEN"), key(*k)],
            Op::HGetAll(k) => vec![w("HGETALL"), key(*k)],
            Op::HIncrBy(k, f, by) => vec![w("HINCRBY"), key(*k), field(*f), n(*by)],
            Op::LPush(k, left, els) => {
                let mut v = vec![w(if *left { "LPUSH" } else { "RPUSH" }), key(*k)];
                v.extend(els.iter().cloned());
                v
            }
            Op::LPop(k, left) => vec![w(if *left { "LPOP" } else { "RPOP" }), key(*k)],
            Op::LRange(k) => vec![w("LRANGE"), key(*k), w("0"), w("-1")],
            Op::LLen(k) => vec![w("LLEN"), key(*k)],
            Op::LIndex(k, i) => vec![w("LINDEX"), key(*k), n(*i)],
            Op::SAdd(k, ms) => {
                let mut v = vec![w("SADD"), key(*k)];
                v.extend(ms.iter().map(|m| member(*m)));
                v
            }
            Op::SRem(k, m) => vec![w("SREM"), key(*k), member(*m)],
            Op::SCard(k) => vec![w("SCARD"), key(*k)],
            Op::SIsMember(k, m) => vec![w("SISMEMBER"), key(*k), member(*m)],
            Op::SMembers(k) => vec![w("SMEMBERS"), key(*k)],
            Op::SMove(a, b, m) => vec![w("SMOVE"), key(*a), key(*b), member(*m)],
            Op::SAlgebra(op, dst, a, b) => {
                let name = match op {
                    SetOp::Inter => "SINTER",
                    SetOp::Union => "SUNION",
                    SetOp::Diff => "SDIFF",
                };
                match dst {
                    Some(d) => vec![w(&format!("{name}STORE")), key(*d), key(*a), key(*b)],
                    None => vec![w(name), key(*a), key(*b)],
                }
            }
            Op::ZAdd(k, s, m) => vec![w("ZADD"), key(*k), n(*s), field(*m)],
            Op::ZRem(k, m) => vec![w("ZREM"), key(*k), field(*m)],
            Op::ZScore(k, m) => vec![w("ZSCORE"), key(*k), field(*m)],
            Op::ZCard(k) => vec![w("ZCARD"), key(*k)],
            Op::ZRangeWithScores(k) => vec![w("ZRANGE"), key(*k), w("0"), w("-1"), w("WITHSCORES")],
            Op::ZIncrBy(k, by, m) => vec![w("ZINCRBY"), key(*k), n(*by), field(*m)],
            Op::ZPopMin(k) => vec![w("ZPOPMIN"), key(*k)],
            Op::ZRank(k, m) => vec![w("ZRANK"), key(*k), field(*m)],
            Op::ZCount(k, lo, hi) => vec![w("ZCOUNT"), key(*k), n(*lo), n(*hi)],
            Op::XAdd(k, ms, pairs) => {
                let mut v = vec![w("XADD"), key(*k), format!("{ms}-*").into_bytes()];
                for (f, x) in pairs {
                    v.push(field(*f));
                    v.push(x.clone());
                }
                v
            }
            Op::XLen(k) => vec![w("XLEN"), key(*k)],
            Op::XRange(k) => vec![w("XRANGE"), key(*k), w("-"), w("+")],
            Op::XDel(k, ms, seq) => vec![w("XDEL"), key(*k), format!("{ms}-{seq}").into_bytes()],
            Op::XTrim(k, max) => vec![w("XTRIM"), key(*k), w("MAXLEN"), n(*max as i64)],
        }
    }
}

/// The model: every key of one tenant.
#[derive(Debug, Clone, Default)]
pub struct Model {
    keys: BTreeMap<u8, Val>,
}

macro_rules! typed {
    ($self:ident, $k:expr, $variant:ident, $new:expr) => {{
        match $self.keys.entry($k).or_insert_with(|| Val::$variant($new)) {
            Val::$variant(x) => x,
            _ => return wrongtype(),
        }
    }};
}

macro_rules! read {
    ($self:ident, $k:expr, $variant:ident, $absent:expr) => {{
        match $self.keys.get(&$k) {
            None => return $absent,
            Some(Val::$variant(x)) => x,
            Some(_) => return wrongtype(),
        }
    }};
}

impl Model {
    /// Applies `op`; the reply it must get.
    pub fn apply(&mut self, op: &Op) -> Expect {
        let r = self.apply_inner(op);
        // Redis deletes a collection left empty.
        self.keys.retain(|_, v| match v {
            Val::Str(_) => true,
            Val::Hash(h) => !h.is_empty(),
            Val::List(l) => !l.is_empty(),
            Val::Set(s) => !s.is_empty(),
            Val::ZSet(z) => !z.is_empty(),
            // A stream stays when its last entry goes (XDEL, XTRIM), as in Redis.
            Val::Stream(..) => true,
        });
        r
    }

    fn wrong(&self, k: u8, ok: fn(&Val) -> bool) -> bool {
        self.keys.get(&k).is_some_and(|v| !ok(v))
    }

    fn apply_inner(&mut self, op: &Op) -> Expect {
        match op {
            Op::Set(k, v) => {
                self.keys.insert(*k, Val::Str(v.clone()));
                ok()
            }
            Op::Get(k) => bulk(read!(self, *k, Str, bulk(None)).as_slice().into()),
            Op::Append(k, v) => {
                let s = typed!(self, *k, Str, Vec::new());
                s.extend_from_slice(v);
                int(s.len() as i64)
            }
            Op::Del(k) => int(i64::from(self.keys.remove(k).is_some())),
            Op::Type(k) => Expect::exact(Reply::Simple(
                match self.keys.get(k) {
                    None => "none",
                    Some(Val::Str(_)) => "string",
                    Some(Val::Hash(_)) => "hash",
                    Some(Val::List(_)) => "list",
                    Some(Val::Set(_)) => "set",
                    Some(Val::ZSet(_)) => "zset",
                    Some(Val::Stream(..)) => "stream",
                }
                .into(),
            )),
            Op::HSet(k, pairs) => {
                let h = typed!(self, *k, Hash, BTreeMap::new());
                int(pairs
                    .iter()
                    .filter(|(f, v)| h.insert(field(*f), v.clone()).is_none())
                    .count() as i64)
            }
            Op::HGet(k, f) => {
                let h = read!(self, *k, Hash, bulk(None));
                bulk(h.get(&field(*f)).map(Vec::as_slice))
            }
            Op::HDel(k, f) => {
                if self.wrong(*k, |v| matches!(v, Val::Hash(_))) {
                    return wrongtype();
                }
                match self.keys.get_mut(k) {
                    Some(Val::Hash(h)) => int(i64::from(h.remove(&field(*f)).is_some())),
                    _ => int(0),
                }
            }
            Op::HLen(k) => int(read!(self, *k, Hash, int(0)).len() as i64),
            Op::HGetAll(k) => {
                let h = read!(self, *k, Hash, array(vec![], None));
                array(
                    h.iter().flat_map(|(f, v)| [f.clone(), v.clone()]).collect(),
                    Some(2),
                )
            }
            Op::HIncrBy(k, f, by) => {
                if self.wrong(*k, |v| matches!(v, Val::Hash(_))) {
                    return wrongtype();
                }
                let cur = match self.keys.get(k) {
                    Some(Val::Hash(h)) => h.get(&field(*f)).cloned(),
                    _ => None,
                };
                let cur = match cur {
                    None => 0,
                    Some(v) => match std::str::from_utf8(&v)
                        .ok()
                        .and_then(|s| s.parse::<i64>().ok())
                    {
                        Some(n) if n.to_string().as_bytes() == v.as_slice() => n,
                        _ => return err("ERR"),
                    },
                };
                let Some(n) = cur.checked_add(*by) else {
                    return err("ERR");
                };
                let h = typed!(self, *k, Hash, BTreeMap::new());
                h.insert(field(*f), n.to_string().into_bytes());
                int(n)
            }
            Op::LPush(k, left, els) => {
                let l = typed!(self, *k, List, VecDeque::new());
                for e in els {
                    if *left {
                        l.push_front(e.clone());
                    } else {
                        l.push_back(e.clone());
                    }
                }
                int(l.len() as i64)
            }
            Op::LPop(k, left) => {
                if self.wrong(*k, |v| matches!(v, Val::List(_))) {
                    return wrongtype();
                }
                match self.keys.get_mut(k) {
                    Some(Val::List(l)) => {
                        bulk(if *left { l.pop_front() } else { l.pop_back() }.as_deref())
                    }
                    _ => bulk(None),
                }
            }
            Op::LRange(k) => {
                let l = read!(self, *k, List, array(vec![], None));
                array(l.iter().cloned().collect(), None)
            }
            Op::LLen(k) => int(read!(self, *k, List, int(0)).len() as i64),
            Op::LIndex(k, i) => {
                let l = read!(self, *k, List, bulk(None));
                let idx = if *i < 0 { l.len() as i64 + i } else { *i };
                bulk(
                    usize::try_from(idx)
                        .ok()
                        .and_then(|i| l.get(i))
                        .map(Vec::as_slice),
                )
            }
            Op::SAdd(k, ms) => {
                let s = typed!(self, *k, Set, BTreeSet::new());
                int(ms.iter().filter(|m| s.insert(member(**m))).count() as i64)
            }
            Op::SRem(k, m) => {
                if self.wrong(*k, |v| matches!(v, Val::Set(_))) {
                    return wrongtype();
                }
                match self.keys.get_mut(k) {
                    Some(Val::Set(s)) => int(i64::from(s.remove(&member(*m)))),
                    _ => int(0),
                }
            }
            Op::SCard(k) => int(read!(self, *k, Set, int(0)).len() as i64),
            Op::SIsMember(k, m) => int(i64::from(
                read!(self, *k, Set, int(0)).contains(&member(*m)),
            )),
            Op::SMembers(k) => {
                let s = read!(self, *k, Set, array(vec![], None));
                array(s.iter().cloned().collect(), Some(1))
            }
            Op::SMove(a, b, m) => {
                // An absent source answers 0 before either type is checked.
                let Some(src) = self.keys.get(a) else {
                    return int(0);
                };
                if !matches!(src, Val::Set(_)) || self.wrong(*b, |v| matches!(v, Val::Set(_))) {
                    return wrongtype();
                }
                let m = member(*m);
                let Some(Val::Set(src)) = self.keys.get_mut(a) else {
                    return int(0);
                };
                if a == b {
                    return int(i64::from(src.contains(&m)));
                }
                if !src.remove(&m) {
                    return int(0);
                }
                typed!(self, *b, Set, BTreeSet::new()).insert(m);
                int(1)
            }
            Op::SAlgebra(op, dst, a, b) => {
                let mut sets = Vec::new();
                for k in [a, b] {
                    match self.keys.get(k) {
                        None => sets.push(None),
                        Some(Val::Set(s)) => sets.push(Some(s.clone())),
                        Some(_) => return wrongtype(),
                    }
                }
                let empty = BTreeSet::new();
                let (x, y) = (
                    sets[0].as_ref().unwrap_or(&empty),
                    sets[1].as_ref().unwrap_or(&empty),
                );
                let out: BTreeSet<Vec<u8>> = match op {
                    SetOp::Inter => x.intersection(y).cloned().collect(),
                    SetOp::Union => x.union(y).cloned().collect(),
                    SetOp::Diff => x.difference(y).cloned().collect(),
                };
                match dst {
                    None => array(out.into_iter().collect(), Some(1)),
                    Some(d) => {
                        let n = out.len();
                        self.keys.insert(*d, Val::Set(out));
                        int(n as i64)
                    }
                }
            }
            Op::ZAdd(k, sc, m) => {
                let z = typed!(self, *k, ZSet, BTreeMap::new());
                int(i64::from(z.insert(field(*m), *sc).is_none()))
            }
            Op::ZRem(k, m) => {
                if self.wrong(*k, |v| matches!(v, Val::ZSet(_))) {
                    return wrongtype();
                }
                match self.keys.get_mut(k) {
                    Some(Val::ZSet(z)) => int(i64::from(z.remove(&field(*m)).is_some())),
                    _ => int(0),
                }
            }
            Op::ZScore(k, m) => {
                let z = read!(self, *k, ZSet, bulk(None));
                bulk(
                    z.get(&field(*m))
                        .map(|s| s.to_string().into_bytes())
                        .as_deref(),
                )
            }
            Op::ZCard(k) => int(read!(self, *k, ZSet, int(0)).len() as i64),
            Op::ZRangeWithScores(k) => {
                let z = read!(self, *k, ZSet, array(vec![], None));
                let mut by: Vec<(i64, &Vec<u8>)> = z.iter().map(|(m, s)| (*s, m)).collect();
                by.sort();
                array(
                    by.into_iter()
                        .flat_map(|(s, m)| [m.clone(), s.to_string().into_bytes()])
                        .collect(),
                    None,
                )
            }
            Op::ZIncrBy(k, by, m) => {
                let z = typed!(self, *k, ZSet, BTreeMap::new());
                let s = z.entry(field(*m)).or_insert(0);
                *s += by;
                bulk(Some(s.to_string().as_bytes()))
            }
            Op::ZPopMin(k) => {
                if self.wrong(*k, |v| matches!(v, Val::ZSet(_))) {
                    return wrongtype();
                }
                let Some(Val::ZSet(z)) = self.keys.get_mut(k) else {
                    return array(vec![], None);
                };
                let Some((m, s)) = z
                    .iter()
                    .map(|(m, s)| (m.clone(), *s))
                    .min_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)))
                else {
                    return array(vec![], None);
                };
                z.remove(&m);
                array(vec![m, s.to_string().into_bytes()], None)
            }
            Op::ZRank(k, m) => {
                let z = read!(self, *k, ZSet, bulk(None));
                let f = field(*m);
                match z.get(&f) {
                    None => bulk(None),
                    Some(&s) => {
                        int(z.iter().filter(|(om, os)| (**os, *om) < (s, &f)).count() as i64)
                    }
                }
            }
            Op::ZCount(k, lo, hi) => {
                let z = read!(self, *k, ZSet, int(0));
                int(z.values().filter(|s| (*lo..=*hi).contains(*s)).count() as i64)
            }
            Op::XAdd(k, ms, pairs) => {
                if self.wrong(*k, |v| matches!(v, Val::Stream(..))) {
                    return wrongtype();
                }
                let Val::Stream(entries, last) = self
                    .keys
                    .entry(*k)
                    .or_insert_with(|| Val::Stream(BTreeMap::new(), (0, 0)))
                else {
                    return wrongtype();
                };
                // `<ms>-*`: the next sequence number within ms, 0 in a later ms.
                let id = match (*ms).cmp(&last.0) {
                    // Below the last ID (a new stream's is 0-0, and ms is at least 1).
                    std::cmp::Ordering::Less => return err("ERR"),
                    std::cmp::Ordering::Equal if *last != (0, 0) => (*ms, last.1 + 1),
                    _ => (*ms, 0),
                };
                entries.insert(
                    id,
                    pairs.iter().map(|(f, v)| (field(*f), v.clone())).collect(),
                );
                *last = id;
                bulk(Some(format!("{}-{}", id.0, id.1).as_bytes()))
            }
            Op::XLen(k) => match self.keys.get(k) {
                None => int(0),
                Some(Val::Stream(e, _)) => int(e.len() as i64),
                Some(_) => wrongtype(),
            },
            Op::XRange(k) => match self.keys.get(k) {
                None => Expect::exact(Reply::Array(Some(vec![]))),
                Some(Val::Stream(e, _)) => Expect::exact(Reply::Array(Some(
                    e.iter()
                        .map(|((ms, seq), pairs)| {
                            Reply::Array(Some(vec![
                                Reply::Bulk(Some(format!("{ms}-{seq}").into_bytes())),
                                Reply::Array(Some(
                                    pairs
                                        .iter()
                                        .flat_map(|(f, v)| {
                                            [
                                                Reply::Bulk(Some(f.clone())),
                                                Reply::Bulk(Some(v.clone())),
                                            ]
                                        })
                                        .collect(),
                                )),
                            ]))
                        })
                        .collect(),
                ))),
                Some(_) => wrongtype(),
            },
            Op::XDel(k, ms, seq) => match self.keys.get_mut(k) {
                None => int(0),
                Some(Val::Stream(e, _)) => int(i64::from(e.remove(&(*ms, *seq)).is_some())),
                Some(_) => wrongtype(),
            },
            Op::XTrim(k, max) => match self.keys.get_mut(k) {
                None => int(0),
                Some(Val::Stream(e, _)) => {
                    let mut removed = 0;
                    while e.len() as u64 > *max {
                        e.pop_first();
                        removed += 1;
                    }
                    int(removed)
                }
                Some(_) => wrongtype(),
            },
        }
    }

    /// A read per key that shows its whole value (for checking a tenant left alone).
    pub fn dump_ops(&self) -> Vec<(u8, Op)> {
        self.keys
            .iter()
            .map(|(k, v)| {
                let op = match v {
                    Val::Str(_) => Op::Get(*k),
                    Val::Hash(_) => Op::HGetAll(*k),
                    Val::List(_) => Op::LRange(*k),
                    Val::Set(_) => Op::SMembers(*k),
                    Val::ZSet(_) => Op::ZRangeWithScores(*k),
                    Val::Stream(..) => Op::XRange(*k),
                };
                (*k, op)
            })
            .collect()
    }
}

/// The types the generated commands cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Str,
    Hash,
    List,
    Set,
    ZSet,
    Stream,
}

/// Every type Locus implements (and the model checks).
pub const KINDS: &[Kind] = &[
    Kind::Str,
    Kind::Hash,
    Kind::List,
    Kind::Set,
    Kind::ZSet,
    Kind::Stream,
];

fn value(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(b"abcxyz019".to_vec()), 0..max)
}

fn op_of(kind: Kind, vmax: usize, fields: u8) -> BoxedStrategy<Op> {
    let k = 0u8..5;
    let f = 0u8..fields;
    match kind {
        Kind::Str => prop_oneof![
            (k.clone(), value(vmax)).prop_map(|(k, v)| Op::Set(k, v)),
            k.clone().prop_map(Op::Get),
            (k.clone(), value(vmax)).prop_map(|(k, v)| Op::Append(k, v)),
            k.clone().prop_map(Op::Del),
            k.prop_map(Op::Type),
        ]
        .boxed(),
        Kind::Hash => prop_oneof![
            (
                k.clone(),
                prop::collection::vec((f.clone(), value(vmax)), 1..6)
            )
                .prop_map(|(k, p)| Op::HSet(k, p)),
            (k.clone(), f.clone()).prop_map(|(k, f)| Op::HGet(k, f)),
            (k.clone(), f.clone()).prop_map(|(k, f)| Op::HDel(k, f)),
            k.clone().prop_map(Op::HLen),
            k.clone().prop_map(Op::HGetAll),
            (k, f, -5i64..5).prop_map(|(k, f, b)| Op::HIncrBy(k, f, b)),
        ]
        .boxed(),
        Kind::List => prop_oneof![
            (
                k.clone(),
                any::<bool>(),
                prop::collection::vec(value(vmax), 1..5)
            )
                .prop_map(|(k, l, e)| Op::LPush(k, l, e)),
            (k.clone(), any::<bool>()).prop_map(|(k, l)| Op::LPop(k, l)),
            k.clone().prop_map(Op::LRange),
            k.clone().prop_map(Op::LLen),
            (k, -6i64..6).prop_map(|(k, i)| Op::LIndex(k, i)),
        ]
        .boxed(),
        Kind::Set => prop_oneof![
            (k.clone(), prop::collection::vec(f.clone(), 1..5)).prop_map(|(k, m)| Op::SAdd(k, m)),
            (k.clone(), f.clone()).prop_map(|(k, m)| Op::SRem(k, m)),
            k.clone().prop_map(Op::SCard),
            (k.clone(), f.clone()).prop_map(|(k, m)| Op::SIsMember(k, m)),
            k.clone().prop_map(Op::SMembers),
            (k.clone(), k.clone(), f).prop_map(|(a, b, m)| Op::SMove(a, b, m)),
            (
                prop::sample::select(vec![SetOp::Inter, SetOp::Union, SetOp::Diff]),
                prop::option::of(k.clone()),
                k.clone(),
                k
            )
                .prop_map(|(op, d, a, b)| Op::SAlgebra(op, d, a, b)),
        ]
        .boxed(),
        Kind::ZSet => prop_oneof![
            (k.clone(), -50i64..50, f.clone()).prop_map(|(k, s, m)| Op::ZAdd(k, s, m)),
            (k.clone(), f.clone()).prop_map(|(k, m)| Op::ZRem(k, m)),
            (k.clone(), f.clone()).prop_map(|(k, m)| Op::ZScore(k, m)),
            k.clone().prop_map(Op::ZCard),
            k.clone().prop_map(Op::ZRangeWithScores),
            (k.clone(), -5i64..5, f.clone()).prop_map(|(k, b, m)| Op::ZIncrBy(k, b, m)),
            k.clone().prop_map(Op::ZPopMin),
            (k.clone(), f).prop_map(|(k, m)| Op::ZRank(k, m)),
            (k, -60i64..60, -60i64..60).prop_map(|(k, lo, hi)| Op::ZCount(k, lo, hi)),
        ]
        .boxed(),
        Kind::Stream => prop_oneof![
            (
                k.clone(),
                1u64..=20,
                prop::collection::vec((f.clone(), value(vmax)), 1..4)
            )
                .prop_map(|(k, ms, p)| Op::XAdd(k, ms, p)),
            k.clone().prop_map(Op::XLen),
            k.clone().prop_map(Op::XRange),
            (k.clone(), 1u64..=20, 0u64..3).prop_map(|(k, ms, seq)| Op::XDel(k, ms, seq)),
            (k, 0u64..6).prop_map(|(k, n)| Op::XTrim(k, n)),
        ]
        .boxed(),
    }
}

/// A command of any implemented type, small values.
pub fn op() -> impl Strategy<Value = Op> {
    let s: Vec<BoxedStrategy<Op>> = KINDS.iter().map(|&k| op_of(k, 12, 8)).collect();
    prop::strategy::Union::new(s)
}

/// A command of any implemented type with values up to 2 KiB and many fields (to fill a budget).
pub fn big_op() -> impl Strategy<Value = Op> {
    let s: Vec<BoxedStrategy<Op>> = KINDS.iter().map(|&k| op_of(k, 2048, 200)).collect();
    prop::strategy::Union::new(s)
}

/// A command decoded from fuzzer bytes (`None` when they run out): the same commands as the
/// strategies, of the implemented types.
pub fn op_from_bytes(b: &mut &[u8]) -> Option<Op> {
    let mut take = || -> Option<u8> {
        let (&x, rest) = b.split_first()?;
        *b = rest;
        Some(x)
    };
    let kind = KINDS[take()? as usize % KINDS.len()];
    let which = take()?;
    let k = take()? % 5;
    let f = take()? % 16;
    let len = take()? as usize % 64;
    let val: Vec<u8> = (0..len)
        .map(|i| b"abcxyz019"[(i + usize::from(which)) % 9])
        .collect();
    let small = i64::from(take()? as i8 % 8);
    Some(match (kind, which % 9) {
        (Kind::Str, 0) => Op::Set(k, val),
        (Kind::Str, 1) => Op::Get(k),
        (Kind::Str, 2) => Op::Append(k, val),
        (Kind::Str, 3) => Op::Del(k),
        (Kind::Str, _) => Op::Type(k),
        (Kind::Hash, 0) => Op::HSet(k, vec![(f, val)]),
        (Kind::Hash, 1) => Op::HGet(k, f),
        (Kind::Hash, 2) => Op::HDel(k, f),
        (Kind::Hash, 3) => Op::HLen(k),
        (Kind::Hash, 4) => Op::HGetAll(k),
        (Kind::Hash, _) => Op::HIncrBy(k, f, small),
        (Kind::List, 0) => Op::LPush(k, which & 64 != 0, vec![val]),
        (Kind::List, 1) => Op::LPop(k, which & 64 != 0),
        (Kind::List, 2) => Op::LRange(k),
        (Kind::List, 3) => Op::LLen(k),
        (Kind::List, _) => Op::LIndex(k, small),
        (Kind::Set, 0) => Op::SAdd(k, vec![f]),
        (Kind::Set, 1) => Op::SRem(k, f),
        (Kind::Set, 2) => Op::SCard(k),
        (Kind::Set, 3) => Op::SIsMember(k, f),
        (Kind::Set, 4) => Op::SMembers(k),
        (Kind::Set, _) if which & 8 != 0 => Op::SMove(k, f % 5, f),
        (Kind::Set, _) => Op::SAlgebra(
            [SetOp::Inter, SetOp::Union, SetOp::Diff][usize::from(which >> 6) % 3],
            (which & 16 != 0).then_some(which % 5),
            k,
            f % 5,
        ),
        (Kind::ZSet, 0) => Op::ZAdd(k, small, f),
        (Kind::ZSet, 1) => Op::ZRem(k, f),
        (Kind::ZSet, 2) => Op::ZScore(k, f),
        (Kind::ZSet, 3) => Op::ZCard(k),
        (Kind::ZSet, 4) => Op::ZRangeWithScores(k),
        (Kind::ZSet, 5) => Op::ZIncrBy(k, small, f),
        (Kind::ZSet, 6) => Op::ZPopMin(k),
        (Kind::ZSet, 7) => Op::ZRank(k, f),
        (Kind::ZSet, _) => Op::ZCount(k, small * 8, small * 8 + i64::from(which % 32)),
        (Kind::Stream, 0..=3) => Op::XAdd(k, 1 + u64::from(f), vec![(f, val)]),
        (Kind::Stream, 4) => Op::XLen(k),
        (Kind::Stream, 5) => Op::XRange(k),
        (Kind::Stream, 6 | 7) => Op::XDel(k, 1 + u64::from(f), u64::from(which >> 6)),
        (Kind::Stream, _) => Op::XTrim(k, u64::from(which >> 5)),
    })
}

/// The bystander tenant's content: a key of every implemented type.
pub fn bystander_ops() -> Vec<Op> {
    let mut v = vec![Op::Set(0, b"bystander".to_vec())];
    for &k in KINDS {
        match k {
            Kind::Str => {}
            Kind::Hash => v.push(Op::HSet(
                1,
                vec![(1, b"one".to_vec()), (2, b"two".to_vec())],
            )),
            Kind::List => v.push(Op::LPush(2, false, vec![b"x".to_vec(), b"y".to_vec()])),
            Kind::Set => v.push(Op::SAdd(3, vec![1, 2, 3])),
            Kind::ZSet => v.push(Op::ZAdd(4, 7, 1)),
            Kind::Stream => v.push(Op::XAdd(
                5,
                3,
                vec![(1, b"one".to_vec()), (2, b"two".to_vec())],
            )),
        }
    }
    v
}
