//! Redis's RDB value encoding (RDB version 10, Redis 7.0) for DUMP and RESTORE: a type byte,
//! the value, the RDB version (2 bytes, little-endian) and the CRC-64 of everything before it
//! (8 bytes, little-endian).
//!
//! ```text
//!  decode: payload ─► footer check (version <= 10, CRC) ─► type byte ─► value reader
//!            strings: raw | int8/16/32 | LZF          ─► bytes
//!            list (1), quicklist (14: ziplists; 18: listpacks and plain nodes), ziplist (10)
//!            set (2), intset (11)      hash (4), zipmap (9), ziplist (13), listpack (16)
//!            zset (3: text scores; 5: binary), ziplist (12), listpack (17)
//!            stream (15, 19: listpack nodes, groups, PELs, consumers)
//!          ─► a Locus object built through its own insert paths (encodings convert at the
//!             thresholds in force, exactly as the writes that build it would)
//!  encode: string (int or LZF when they pay), list as quicklist 2 of listpacks, set as intset or
//!          set, hash/zset as listpack or table (as Locus holds them), stream as listpacks 2
//! ```
//!
//! Decoding trusts no length in the payload: a count is checked against the bytes left before
//! anything is allocated for it, and every element consumes input, so a payload of N bytes
//! builds at most O(N) (bounded by LZF's expansion for compressed strings).

use std::collections::HashSet;

use locus_engine::{Object, ValueRef};

use super::crc64::crc64;
use super::lzf;
use super::pack::{self, El, LpWriter};
use crate::exec::types::hash::Hash;
use crate::exec::types::quicklist::{Elem, List};
use crate::exec::types::set::{Member, Set};
use crate::exec::types::stream::{Sid, Stream};
use crate::exec::types::zset::{Zset, fmt_score};

/// The RDB version DUMP writes and the highest RESTORE accepts (Redis 7.0's).
pub const RDB_VERSION: u16 = 10;

/// RDB object types.
pub mod ty {
    /// A string.
    pub const STRING: u8 = 0;
    /// A list of strings (before 3.2).
    pub const LIST: u8 = 1;
    /// A set of strings.
    pub const SET: u8 = 2;
    /// A sorted set with text scores (before 3.0).
    pub const ZSET: u8 = 3;
    /// A hash of strings.
    pub const HASH: u8 = 4;
    /// A sorted set with binary scores.
    pub const ZSET_2: u8 = 5;
    /// A zipmap hash (before 2.6).
    pub const HASH_ZIPMAP: u8 = 9;
    /// A ziplist list (before 3.2).
    pub const LIST_ZIPLIST: u8 = 10;
    /// An intset.
    pub const SET_INTSET: u8 = 11;
    /// A ziplist sorted set (before 7.0).
    pub const ZSET_ZIPLIST: u8 = 12;
    /// A ziplist hash (before 7.0).
    pub const HASH_ZIPLIST: u8 = 13;
    /// A quicklist of ziplists (3.2 to 6.2).
    pub const LIST_QUICKLIST: u8 = 14;
    /// A stream (5.0 to 6.2).
    pub const STREAM_LISTPACKS: u8 = 15;
    /// A listpack hash.
    pub const HASH_LISTPACK: u8 = 16;
    /// A listpack sorted set.
    pub const ZSET_LISTPACK: u8 = 17;
    /// A quicklist of listpacks and plain nodes (7.0).
    pub const LIST_QUICKLIST_2: u8 = 18;
    /// A stream with its first ID, deleted high mark, entries added and groups' read counters.
    pub const STREAM_LISTPACKS_2: u8 = 19;
}

/// Why a payload was refused. RESTORE answers Redis's two texts; the detail is for tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// Shorter than the footer, a version above [`RDB_VERSION`], or a wrong CRC.
    Footer,
    /// Anything wrong with the value.
    Bad(String),
    /// The value's bytes pass the limit given (it could not be stored).
    TooLarge,
}

impl From<pack::PackError> for DecodeError {
    fn from(e: pack::PackError) -> Self {
        DecodeError::Bad(e.to_string())
    }
}

fn bad<T>(why: &str) -> Result<T, DecodeError> {
    Err(DecodeError::Bad(why.to_string()))
}

/// A decoded value: a string's bytes or a collection.
#[derive(Debug)]
pub enum Decoded {
    /// A string.
    Str(Vec<u8>),
    /// A hash, list, set, sorted set or stream.
    Obj(Box<dyn Object>),
}

/// Checks a payload's footer (Redis's `verifyDumpPayload`) and returns the value's bytes.
///
/// # Errors
/// [`DecodeError::Footer`].
pub fn verify(payload: &[u8]) -> Result<&[u8], DecodeError> {
    if payload.len() < 10 {
        return Err(DecodeError::Footer);
    }
    let body = payload.len() - 10;
    let version = u16::from_le_bytes([payload[body], payload[body + 1]]);
    if version > RDB_VERSION {
        return Err(DecodeError::Footer);
    }
    let crc = u64::from_le_bytes(
        payload[body + 2..]
            .try_into()
            .map_err(|_| DecodeError::Footer)?,
    );
    if crc64(0, &payload[..body + 2]) != crc {
        return Err(DecodeError::Footer);
    }
    Ok(&payload[..body])
}

/// Decodes a whole DUMP payload.
///
/// # Errors
/// [`DecodeError`].
pub fn decode(payload: &[u8]) -> Result<Decoded, DecodeError> {
    decode_within(payload, u64::MAX)
}

/// Decodes a whole DUMP payload whose strings (after decompression) add up to at most `limit`
/// bytes: a value larger than the memory it could be stored in is refused before it is built.
///
/// # Errors
/// [`DecodeError`]; [`DecodeError::TooLarge`] past `limit`.
pub fn decode_within(payload: &[u8], limit: u64) -> Result<Decoded, DecodeError> {
    let body = verify(payload)?;
    let mut r = Reader {
        b: body,
        p: 0,
        budget: limit,
    };
    let t = r.u8()?;
    let v = r.value(t)?;
    if r.p != body.len() {
        return bad("bytes left after the value");
    }
    Ok(v)
}

/// Encodes a value as a DUMP payload; `None` for a type RDB has no encoding for here.
pub fn encode(v: ValueRef<'_>) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    match v {
        ValueRef::Str(s) => {
            out.push(ty::STRING);
            put_string(&mut out, s);
        }
        ValueRef::Obj(o) => encode_object(o, &mut out)?,
    }
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    Some(out)
}

struct Reader<'a> {
    b: &'a [u8],
    p: usize,
    /// String bytes the value may still produce.
    budget: u64,
}

enum Len {
    Plain(u64),
    Enc(u8),
}

impl<'a> Reader<'a> {
    fn left(&self) -> usize {
        self.b.len() - self.p
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.left() {
            return bad("payload truncated");
        }
        let s = &self.b[self.p..self.p + n];
        self.p += n;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    fn len_or_enc(&mut self) -> Result<Len, DecodeError> {
        let b = self.u8()?;
        Ok(match b >> 6 {
            0 => Len::Plain(u64::from(b & 0x3f)),
            1 => Len::Plain((u64::from(b & 0x3f) << 8) | u64::from(self.u8()?)),
            2 if b == 0x80 => Len::Plain(u64::from(u32::from_be_bytes(
                self.take(4)?.try_into().unwrap_or_default(),
            ))),
            2 if b == 0x81 => Len::Plain(u64::from_be_bytes(
                self.take(8)?.try_into().unwrap_or_default(),
            )),
            2 => return bad("unknown length encoding"),
            _ => Len::Enc(b & 0x3f),
        })
    }

    fn len(&mut self) -> Result<u64, DecodeError> {
        match self.len_or_enc()? {
            Len::Plain(n) => Ok(n),
            Len::Enc(_) => bad("an encoded value where a length belongs"),
        }
    }

    /// A count of elements each taking at least `min` bytes, checked against the bytes left.
    fn count(&mut self, min: usize) -> Result<usize, DecodeError> {
        let n = self.len()?;
        if n > (self.left() / min.max(1)) as u64 {
            return bad("a count larger than the payload holds");
        }
        Ok(n as usize)
    }

    fn spend(&mut self, n: usize) -> Result<(), DecodeError> {
        self.budget = self
            .budget
            .checked_sub(n as u64)
            .ok_or(DecodeError::TooLarge)?;
        Ok(())
    }

    fn string(&mut self) -> Result<Vec<u8>, DecodeError> {
        match self.len_or_enc()? {
            Len::Plain(n) => {
                let n = usize::try_from(n).unwrap_or(usize::MAX);
                let s = self.take(n)?;
                self.spend(n)?;
                Ok(s.to_vec())
            }
            Len::Enc(0) => Ok(itoa_vec(i64::from(self.u8()? as i8))),
            Len::Enc(1) => Ok(itoa_vec(i64::from(i16::from_le_bytes(
                self.take(2)?.try_into().unwrap_or_default(),
            )))),
            Len::Enc(2) => Ok(itoa_vec(i64::from(i32::from_le_bytes(
                self.take(4)?.try_into().unwrap_or_default(),
            )))),
            Len::Enc(3) => {
                let clen = usize::try_from(self.len()?).unwrap_or(usize::MAX);
                let ulen = usize::try_from(self.len()?).unwrap_or(usize::MAX);
                let c = self.take(clen)?;
                // LZF's best case is 264 bytes from a 3-byte reference: a longer claim is a
                // malformed string, whatever the budget.
                if ulen as u64 > (clen as u64).saturating_mul(88).saturating_add(264) {
                    return bad("an LZF string claims more than its input can make");
                }
                self.spend(ulen)?;
                lzf::decompress(c, ulen).map_err(|e| DecodeError::Bad(format!("LZF: {e:?}")))
            }
            Len::Enc(_) => bad("unknown string encoding"),
        }
    }

    fn u64_raw_le(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().unwrap_or_default(),
        ))
    }

    /// A text score of the old ZSET type: a length byte (253 nan, 254 +inf, 255 -inf).
    fn text_double(&mut self) -> Result<f64, DecodeError> {
        match self.u8()? {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            n => {
                let s = self.take(usize::from(n))?;
                parse_score(s).ok_or_else(|| DecodeError::Bad("a score is not a number".into()))
            }
        }
    }

    fn id(&mut self) -> Result<Sid, DecodeError> {
        let ms = self.len()?;
        let seq = self.len()?;
        Ok(Sid::new(ms, seq))
    }

    fn raw_id(&mut self) -> Result<Sid, DecodeError> {
        let b = self.take(16)?;
        Ok(raw_sid(b))
    }

    fn value(&mut self, t: u8) -> Result<Decoded, DecodeError> {
        let obj: Box<dyn Object> = match t {
            ty::STRING => return Ok(Decoded::Str(self.string()?)),
            ty::LIST => {
                let n = self.count(1)?;
                let mut l = List::new();
                for _ in 0..n {
                    l.push_back(&self.string()?);
                }
                Box::new(l)
            }
            ty::SET => {
                let n = self.count(1)?;
                let mut s = Set::default();
                for _ in 0..n {
                    if !s.add(&self.string()?) {
                        return bad("a set member appears twice");
                    }
                }
                Box::new(s)
            }
            ty::ZSET | ty::ZSET_2 => {
                let n = self.count(2)?;
                let mut pairs = Vec::with_capacity(n);
                for _ in 0..n {
                    let m = self.string()?;
                    let score = if t == ty::ZSET {
                        self.text_double()?
                    } else {
                        f64::from_bits(self.u64_raw_le()?)
                    };
                    pairs.push((m, score));
                }
                Box::new(zset_of(pairs)?)
            }
            ty::HASH => {
                let n = self.count(2)?;
                let mut h = Hash::default();
                for _ in 0..n {
                    let f = self.string()?;
                    let v = self.string()?;
                    if !h.set(&f, &v) {
                        return bad("a hash field appears twice");
                    }
                }
                Box::new(h)
            }
            ty::HASH_ZIPMAP => {
                let blob = self.string()?;
                let mut h = Hash::default();
                for (f, v) in pack::zipmap(&blob)? {
                    if !h.set(f, v) {
                        return bad("a hash field appears twice");
                    }
                }
                Box::new(h)
            }
            ty::LIST_ZIPLIST => {
                let blob = self.string()?;
                let mut l = List::new();
                push_all(&mut l, &pack::ziplist(&blob)?);
                Box::new(l)
            }
            ty::SET_INTSET => {
                let blob = self.string()?;
                let mut s = Set::default();
                let mut b = itoa::Buffer::new();
                for v in pack::intset(&blob)? {
                    s.add(b.format(v).as_bytes());
                }
                Box::new(s)
            }
            ty::ZSET_ZIPLIST | ty::ZSET_LISTPACK => {
                let blob = self.string()?;
                let els = pairs_of(&blob, t == ty::ZSET_ZIPLIST)?;
                let mut pairs = Vec::with_capacity(els.len() / 2);
                for p in els.chunks_exact(2) {
                    let score = match p[1] {
                        El::Int(i) => i as f64,
                        El::Str(s) => parse_score(s)
                            .ok_or_else(|| DecodeError::Bad("a score is not a number".into()))?,
                    };
                    pairs.push((p[0].to_vec(), score));
                }
                Box::new(zset_of(pairs)?)
            }
            ty::HASH_ZIPLIST | ty::HASH_LISTPACK => {
                let blob = self.string()?;
                let els = pairs_of(&blob, t == ty::HASH_ZIPLIST)?;
                let mut h = Hash::default();
                for p in els.chunks_exact(2) {
                    if !h.set(&p[0].to_vec(), &p[1].to_vec()) {
                        return bad("a hash field appears twice");
                    }
                }
                Box::new(h)
            }
            ty::LIST_QUICKLIST | ty::LIST_QUICKLIST_2 => {
                let nodes = self.count(2)?;
                let mut l = List::new();
                for _ in 0..nodes {
                    let container = if t == ty::LIST_QUICKLIST_2 {
                        self.len()?
                    } else {
                        2
                    };
                    let blob = self.string()?;
                    match container {
                        // A plain node: one element, the blob itself.
                        1 => l.push_back(&blob),
                        2 => {
                            let els = if t == ty::LIST_QUICKLIST {
                                pack::ziplist(&blob)?
                            } else {
                                pack::listpack(&blob)?
                            };
                            // Redis skips an empty node (and refuses the list if all are).
                            push_all(&mut l, &els);
                        }
                        _ => return bad("unknown quicklist container"),
                    }
                }
                Box::new(l)
            }
            ty::STREAM_LISTPACKS | ty::STREAM_LISTPACKS_2 => {
                return Ok(Decoded::Obj(Box::new(self.stream(t)?)));
            }
            _ => return bad("unknown or unsupported value type"),
        };
        if obj.is_empty() {
            return bad("an empty collection");
        }
        Ok(Decoded::Obj(obj))
    }

    fn stream(&mut self, t: u8) -> Result<Stream, DecodeError> {
        let nodes = self.count(2)?;
        let mut s = Stream::new();
        let mut live = 0u64;
        let mut fields: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for _ in 0..nodes {
            let key = self.string()?;
            if key.len() != 16 {
                return bad("a stream node key is not 16 bytes");
            }
            let master = raw_sid(&key);
            let blob = self.string()?;
            let els = pack::listpack(&blob)?;
            if els.is_empty() {
                return bad("an empty listpack inside a stream");
            }
            live += stream_node(&els, master, &mut |id, f| {
                fields.clear();
                fields.extend(f.iter().map(|(a, b)| (a.to_vec(), b.to_vec())));
                let refs: Vec<(&[u8], &[u8])> =
                    fields.iter().map(|(a, b)| (&a[..], &b[..])).collect();
                s.append(id, &refs)
                    .map_err(|_| DecodeError::Bad("stream entries out of order".into()))
            })?;
        }
        let length = self.len()?;
        if length != live {
            return bad("a stream's length differs from its entries");
        }
        let last_id = self.id()?;
        if last_id < s.last_id {
            return bad("a stream's last ID is below its last entry");
        }
        let first_seen = s.edge_id(false);
        s.last_id = last_id;
        if t == ty::STREAM_LISTPACKS_2 {
            s.first_id = self.id()?;
            s.max_deleted = self.id()?;
            s.entries_added = self.len()?;
        } else {
            // Before 7.0 these were not kept: Redis derives them as below.
            s.first_id = first_seen.unwrap_or(Sid::new(0, 0));
            s.max_deleted = Sid::new(0, 0);
            s.entries_added = length;
        }
        let groups = self.count(4)?;
        for _ in 0..groups {
            let name = self.string()?;
            let glast = self.id()?;
            let read = if t == ty::STREAM_LISTPACKS_2 {
                self.len()? as i64
            } else {
                s.estimate_read(glast).map_or(-1, |r| r as i64)
            };
            let np = self.count(17)?;
            let mut pel: Vec<(Sid, i64, u64)> = Vec::with_capacity(np);
            for _ in 0..np {
                let id = self.raw_id()?;
                let time = self.u64_raw_le()? as i64;
                let count = self.len()?;
                pel.push((id, time, count));
            }
            pel.sort_by_key(|p| p.0);
            if pel.windows(2).any(|w| w[0].0 == w[1].0) {
                return bad("a pending entry appears twice in a group");
            }
            let nc = self.count(10)?;
            let mut consumers: Vec<(Vec<u8>, i64)> = Vec::with_capacity(nc);
            let mut owner: Vec<Option<usize>> = vec![None; pel.len()];
            for ci in 0..nc {
                let cname = self.string()?;
                let seen = self.u64_raw_le()? as i64;
                consumers.push((cname, seen));
                let n = self.count(16)?;
                for _ in 0..n {
                    let id = self.raw_id()?;
                    let Ok(at) = pel.binary_search_by_key(&id, |p| p.0) else {
                        return bad("a consumer's pending entry is not in its group's");
                    };
                    if owner[at].replace(ci).is_some() {
                        return bad("a pending entry has two consumers");
                    }
                }
            }
            if owner.iter().any(Option::is_none) {
                return bad("a group's pending entry has no consumer");
            }
            let cons: Vec<(&[u8], i64)> = consumers.iter().map(|(c, t)| (&c[..], *t)).collect();
            let pending: Vec<(Sid, &[u8], i64, u64)> = pel
                .iter()
                .zip(&owner)
                .map(|(&(id, time, count), o)| (id, &consumers[o.unwrap_or(0)].0[..], time, count))
                .collect();
            s.restore_group(&name, glast, read, &cons, &pending)
                .map_err(DecodeError::Bad)?;
        }
        Ok(s)
    }
}

type FieldRefs<'a> = [(El<'a>, El<'a>)];

/// Walks one stream node's listpack (Redis's `streamValidateListpackIntegrity`): the master
/// entry, then each entry's flags, ID deltas, fields and element count, checking every count.
/// Calls `f` for each live entry; returns how many there were.
fn stream_node(
    els: &[El<'_>],
    master: Sid,
    f: &mut dyn FnMut(Sid, &FieldRefs<'_>) -> Result<(), DecodeError>,
) -> Result<u64, DecodeError> {
    const DELETED: i64 = 1;
    const SAMEFIELDS: i64 = 2;
    let mut i = 0;
    let int = |e: El<'_>| -> Result<i64, DecodeError> {
        e.int()
            .ok_or_else(|| DecodeError::Bad("stream node: an integer expected".into()))
    };
    let count = int(next(els, &mut i, "count")?)?;
    let deleted = int(next(els, &mut i, "deleted count")?)?;
    let nmaster = int(next(els, &mut i, "master field count")?)?;
    if nmaster < 0 || nmaster as usize > els.len() {
        return bad("stream node: bad master field count");
    }
    let mut mfields = Vec::with_capacity(nmaster as usize);
    for _ in 0..nmaster {
        mfields.push(next(els, &mut i, "master fields")?);
    }
    if int(next(els, &mut i, "master terminator")?)? != 0 {
        return bad("stream node: master entry not terminated");
    }
    let (mut live, mut dead) = (0i64, 0i64);
    let mut pairs: Vec<(El<'_>, El<'_>)> = Vec::new();
    while i < els.len() {
        let flags = int(next(els, &mut i, "flags")?)?;
        let ms = int(next(els, &mut i, "ID")?)?;
        let seq = int(next(els, &mut i, "ID")?)?;
        let id = Sid::new(
            master.ms.wrapping_add(ms as u64),
            master.seq.wrapping_add(seq as u64),
        );
        pairs.clear();
        let n = if flags & SAMEFIELDS != 0 {
            for &mf in &mfields {
                pairs.push((mf, next(els, &mut i, "values")?));
            }
            mfields.len() as i64 + 3
        } else {
            let nf = int(next(els, &mut i, "field count")?)?;
            if nf < 0 || nf as usize > els.len() {
                return bad("stream node: bad field count");
            }
            for _ in 0..nf {
                let k = next(els, &mut i, "fields")?;
                pairs.push((k, next(els, &mut i, "values")?));
            }
            2 * nf + 4
        };
        if int(next(els, &mut i, "entry count")?)? != n {
            return bad("stream node: an entry's element count is wrong");
        }
        if pairs.is_empty() {
            return bad("stream node: an entry without fields");
        }
        if flags & DELETED != 0 {
            dead += 1;
        } else {
            live += 1;
            f(id, &pairs)?;
        }
    }
    if live != count || dead != deleted {
        return bad("stream node: its counts differ from its entries");
    }
    Ok(live as u64)
}

fn next<'a>(els: &[El<'a>], i: &mut usize, what: &str) -> Result<El<'a>, DecodeError> {
    let e = els
        .get(*i)
        .copied()
        .ok_or_else(|| DecodeError::Bad(format!("stream node ends before its {what}")))?;
    *i += 1;
    Ok(e)
}

fn raw_sid(b: &[u8]) -> Sid {
    let ms = u64::from_be_bytes(b[..8].try_into().unwrap_or_default());
    let seq = u64::from_be_bytes(b[8..16].try_into().unwrap_or_default());
    Sid::new(ms, seq)
}

fn itoa_vec(i: i64) -> Vec<u8> {
    itoa::Buffer::new().format(i).as_bytes().to_vec()
}

fn parse_score(s: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(s).ok()?;
    s.parse::<f64>().ok()
}

/// The elements of a packed hash or sorted set (a ziplist or a listpack): an even count.
fn pairs_of(blob: &[u8], ziplist: bool) -> Result<Vec<El<'_>>, DecodeError> {
    let els = if ziplist {
        pack::ziplist(blob)?
    } else {
        pack::listpack(blob)?
    };
    if els.len() % 2 != 0 {
        return bad("a packed hash or sorted set with an odd element count");
    }
    Ok(els)
}

fn push_all(l: &mut List, els: &[El<'_>]) {
    for e in els {
        l.push_back(&e.to_vec());
    }
}

fn zset_of(pairs: Vec<(Vec<u8>, f64)>) -> Result<Zset, DecodeError> {
    let mut seen = HashSet::with_capacity(pairs.len());
    for (m, s) in &pairs {
        if s.is_nan() {
            return bad("a sorted-set score is NaN");
        }
        if !seen.insert(&m[..]) {
            return bad("a sorted-set member appears twice");
        }
    }
    Ok(Zset::from_pairs(&pairs))
}

// ---- encoding ----

fn put_len(out: &mut Vec<u8>, n: u64) {
    if n < 1 << 6 {
        out.push(n as u8);
    } else if n < 1 << 14 {
        out.push(0x40 | (n >> 8) as u8);
        out.push((n & 0xff) as u8);
    } else if n <= u64::from(u32::MAX) {
        out.push(0x80);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// A string as Redis's `rdbSaveRawString` writes it: as an 8, 16 or 32-bit integer when it is
/// one (at most 11 characters), LZF-compressed when longer than 20 bytes and that saves at least
/// 4 bytes, else raw.
pub fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    if s.len() <= 11
        && let Some(v) = crate::exec::parse_i64(s)
    {
        if let Ok(b) = i8::try_from(v) {
            out.push(0xc0);
            out.push(b as u8);
            return;
        }
        if let Ok(h) = i16::try_from(v) {
            out.push(0xc1);
            out.extend_from_slice(&h.to_le_bytes());
            return;
        }
        if let Ok(w) = i32::try_from(v) {
            out.push(0xc2);
            out.extend_from_slice(&w.to_le_bytes());
            return;
        }
    }
    if s.len() > 20
        && let Some(c) = lzf::compress(s, s.len() - 4)
    {
        out.push(0xc3);
        put_len(out, c.len() as u64);
        put_len(out, s.len() as u64);
        out.extend_from_slice(&c);
        return;
    }
    put_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// Bytes after which a list's listpack node is closed (Redis's default, 8 KiB).
const LIST_NODE_BYTES: usize = 8192;

fn encode_object(o: &dyn Object, out: &mut Vec<u8>) -> Option<()> {
    let any = o.as_any();
    if let Some(h) = any.downcast_ref::<Hash>() {
        let pairs = h.pairs();
        if matches!(h, Hash::Packed(_)) {
            out.push(ty::HASH_LISTPACK);
            let mut w = LpWriter::new();
            for (f, v) in pairs {
                w.push(f);
                w.push(v);
            }
            put_string(out, &w.finish());
        } else {
            out.push(ty::HASH);
            put_len(out, pairs.len() as u64);
            for (f, v) in pairs {
                put_string(out, f);
                put_string(out, v);
            }
        }
    } else if let Some(l) = any.downcast_ref::<List>() {
        out.push(ty::LIST_QUICKLIST_2);
        let mut nodes: Vec<Vec<u8>> = Vec::new();
        let mut w = LpWriter::new();
        for e in l.iter() {
            match e {
                Elem::Int(i) => w.push_int(i),
                Elem::Str(s) => w.push(s),
            }
            if w.len() >= LIST_NODE_BYTES {
                nodes.push(std::mem::take(&mut w).finish());
            }
        }
        if !w.is_empty() {
            nodes.push(w.finish());
        }
        put_len(out, nodes.len() as u64);
        for n in nodes {
            put_len(out, 2);
            put_string(out, &n);
        }
    } else if let Some(s) = any.downcast_ref::<Set>() {
        if let Set::Ints(ints) = s {
            out.push(ty::SET_INTSET);
            let vals: Vec<i64> = ints.iter().collect();
            put_string(out, &pack::write_intset(&vals));
        } else {
            out.push(ty::SET);
            put_len(out, s.len() as u64);
            for m in s.iter() {
                match m {
                    Member::Str(b) => put_string(out, b),
                    Member::Int(i) => put_string(out, &itoa_vec(i)),
                }
            }
        }
    } else if let Some(z) = any.downcast_ref::<Zset>() {
        let pairs = z.pairs();
        if matches!(z, Zset::Packed(_)) {
            out.push(ty::ZSET_LISTPACK);
            let mut w = LpWriter::new();
            for (m, s) in &pairs {
                w.push(m);
                w.push(fmt_score(*s).as_bytes());
            }
            put_string(out, &w.finish());
        } else {
            out.push(ty::ZSET_2);
            put_len(out, pairs.len() as u64);
            // Highest score first, as Redis writes them (each load then appends at the head).
            for (m, s) in pairs.iter().rev() {
                put_string(out, m);
                out.extend_from_slice(&s.to_bits().to_le_bytes());
            }
        }
    } else if let Some(s) = any.downcast_ref::<Stream>() {
        out.push(ty::STREAM_LISTPACKS_2);
        encode_stream(s, out);
    } else {
        return None;
    }
    Some(())
}

fn put_raw_id(out: &mut Vec<u8>, id: Sid) {
    out.extend_from_slice(&id.ms.to_be_bytes());
    out.extend_from_slice(&id.seq.to_be_bytes());
}

fn put_id(out: &mut Vec<u8>, id: Sid) {
    put_len(out, id.ms);
    put_len(out, id.seq);
}

/// Entries per stream node DUMP writes (Redis's `stream-node-max-entries` default).
const STREAM_NODE_ENTRIES: usize = 100;

fn encode_stream(s: &Stream, out: &mut Vec<u8>) {
    let entries = s.entries();
    let chunks: Vec<_> = entries.chunks(STREAM_NODE_ENTRIES).collect();
    put_len(out, chunks.len() as u64);
    for chunk in &chunks {
        let (master, mfields) = (chunk[0].0, &chunk[0].1);
        let mut w = LpWriter::new();
        w.push_int(chunk.len() as i64);
        w.push_int(0);
        w.push_int(mfields.len() as i64);
        for (f, _) in mfields {
            w.push(f);
        }
        w.push_int(0);
        for (id, fields) in *chunk {
            let same = fields.len() == mfields.len()
                && fields.iter().zip(mfields).all(|(a, b)| a.0 == b.0);
            w.push_int(if same { 2 } else { 0 });
            w.push_int(id.ms.wrapping_sub(master.ms) as i64);
            w.push_int(id.seq.wrapping_sub(master.seq) as i64);
            if same {
                for (_, v) in fields {
                    w.push(v);
                }
                w.push_int(fields.len() as i64 + 3);
            } else {
                w.push_int(fields.len() as i64);
                for (f, v) in fields {
                    w.push(f);
                    w.push(v);
                }
                w.push_int(2 * fields.len() as i64 + 4);
            }
        }
        let mut key = Vec::with_capacity(16);
        put_raw_id(&mut key, master);
        put_string(out, &key);
        put_string(out, &w.finish());
    }
    put_len(out, entries.len() as u64);
    put_id(out, s.last_id);
    put_id(out, s.first_id);
    put_id(out, s.max_deleted);
    put_len(out, s.entries_added);
    put_len(out, s.groups.len() as u64);
    for (name, g) in &s.groups {
        put_string(out, name);
        put_id(out, g.last_id);
        put_len(out, g.entries_read as u64);
        put_len(out, g.pel.len() as u64);
        for (id, n) in &g.pel {
            put_raw_id(out, *id);
            out.extend_from_slice(&n.delivery_time.to_le_bytes());
            put_len(out, n.delivery_count);
        }
        put_len(out, g.consumers.len() as u64);
        for (cname, c) in &g.consumers {
            put_string(out, cname);
            out.extend_from_slice(&c.seen_time.to_le_bytes());
            put_len(out, c.pel.len() as u64);
            for id in &c.pel {
                put_raw_id(out, *id);
            }
        }
    }
}
