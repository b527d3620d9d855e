//! How each Redis type's value is written into, and read back from, an item record's body.
//! Adding a type is one [`Codec`] in [`CODECS`]: a tag, Redis's TYPE name, and an
//! encode/decode pair.
//!
//! A type without a codec makes SAVE and BGSAVE fail with "no snapshot codec for type '…'"
//! (loud, never a silently partial snapshot).

use locus_engine::Object;

use super::format::{Body, TAG_STRING, put_bytes, put_u32};
use crate::exec::types::hash::Hash;
use crate::exec::types::quicklist::List;
use crate::exec::types::set::Set;
use crate::exec::types::stream::{Sid, Stream};
use crate::exec::types::zset::Zset;

/// One type's tag and encode/decode pair.
pub struct Codec {
    /// The record tag (never [`TAG_STRING`] nor the end tag).
    pub tag: u8,
    /// Redis's TYPE name of the objects it encodes.
    pub type_name: &'static str,
    /// Appends the object's elements to a body (`None` when the object is not of this type).
    pub encode: fn(&dyn Object, &mut Vec<u8>) -> Option<()>,
    /// Reads the elements back (the rest of the body).
    pub decode: fn(&mut Body<'_>) -> Result<Box<dyn Object>, String>,
}

/// Every object type a snapshot holds (strings are [`TAG_STRING`], outside this table).
pub const CODECS: &[Codec] = &[
    Codec {
        tag: 2,
        type_name: "hash",
        encode: encode_hash,
        decode: decode_hash,
    },
    Codec {
        tag: 3,
        type_name: "list",
        encode: encode_list,
        decode: decode_list,
    },
    Codec {
        tag: 4,
        type_name: "set",
        encode: encode_set,
        decode: decode_set,
    },
    Codec {
        tag: 5,
        type_name: "zset",
        encode: encode_zset,
        decode: decode_zset,
    },
    Codec {
        tag: 6,
        type_name: "stream",
        encode: encode_stream,
        decode: decode_stream,
    },
];

/// The codec of an object's type.
pub fn codec_for(type_name: &str) -> Option<&'static Codec> {
    CODECS.iter().find(|c| c.type_name == type_name)
}

/// The codec of a record tag.
pub fn codec_of_tag(tag: u8) -> Option<&'static Codec> {
    debug_assert_ne!(tag, TAG_STRING);
    CODECS.iter().find(|c| c.tag == tag)
}

fn encode_hash(o: &dyn Object, out: &mut Vec<u8>) -> Option<()> {
    let h = o.as_any().downcast_ref::<Hash>()?;
    let pairs = h.pairs();
    put_u32(out, pairs.len() as u32);
    for (f, v) in pairs {
        put_bytes(out, f);
        put_bytes(out, v);
    }
    Some(())
}

fn decode_hash(b: &mut Body<'_>) -> Result<Box<dyn Object>, String> {
    let n = b.count(8)?;
    let mut h = Hash::default();
    for _ in 0..n {
        let f = b.bytes()?;
        let v = b.bytes()?;
        if !h.set(f, v) {
            return Err("a hash field appears twice".to_string());
        }
    }
    Ok(Box::new(h))
}

fn encode_list(o: &dyn Object, out: &mut Vec<u8>) -> Option<()> {
    let l = o.as_any().downcast_ref::<List>()?;
    put_u32(out, l.len() as u32);
    for e in l.iter() {
        put_bytes(out, &e.to_vec());
    }
    Some(())
}

fn decode_list(b: &mut Body<'_>) -> Result<Box<dyn Object>, String> {
    let n = b.count(4)?;
    let mut l = List::new();
    for _ in 0..n {
        l.push_back(b.bytes()?);
    }
    Ok(Box::new(l))
}

fn encode_set(o: &dyn Object, out: &mut Vec<u8>) -> Option<()> {
    let s = o.as_any().downcast_ref::<Set>()?;
    put_u32(out, s.len() as u32);
    for m in s.iter() {
        put_bytes(out, &m.to_vec());
    }
    Some(())
}

fn decode_set(b: &mut Body<'_>) -> Result<Box<dyn Object>, String> {
    let n = b.count(4)?;
    let mut s = Set::default();
    for _ in 0..n {
        if !s.add(b.bytes()?) {
            return Err("a set member appears twice".to_string());
        }
    }
    Ok(Box::new(s))
}

fn encode_zset(o: &dyn Object, out: &mut Vec<u8>) -> Option<()> {
    let z = o.as_any().downcast_ref::<Zset>()?;
    let pairs = z.pairs();
    put_u32(out, pairs.len() as u32);
    for (m, score) in pairs {
        put_bytes(out, &m);
        out.extend_from_slice(&score.to_bits().to_le_bytes());
    }
    Some(())
}

fn decode_zset(b: &mut Body<'_>) -> Result<Box<dyn Object>, String> {
    let n = b.count(12)?;
    let mut pairs = Vec::with_capacity(n);
    let mut seen = std::collections::HashSet::with_capacity(n);
    for _ in 0..n {
        let m = b.bytes()?;
        let score = f64::from_bits(b.u64()?);
        if score.is_nan() {
            return Err("a sorted-set score is NaN".to_string());
        }
        if !seen.insert(m) {
            return Err("a sorted-set member appears twice".to_string());
        }
        pairs.push((m.to_vec(), score));
    }
    Ok(Box::new(Zset::from_pairs(&pairs)))
}

fn put_u64(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(&n.to_le_bytes());
}

fn put_id(out: &mut Vec<u8>, id: Sid) {
    put_u64(out, id.ms);
    put_u64(out, id.seq);
}

fn get_id(b: &mut Body<'_>) -> Result<Sid, String> {
    Ok(Sid::new(b.u64()?, b.u64()?))
}

/// A stream: its counters, its live entries, then each group with its consumers and pending
/// entries.
fn encode_stream(o: &dyn Object, out: &mut Vec<u8>) -> Option<()> {
    let s = o.as_any().downcast_ref::<Stream>()?;
    put_id(out, s.last_id);
    put_id(out, s.first_id);
    put_id(out, s.max_deleted);
    put_u64(out, s.entries_added);
    let entries = s.entries();
    put_u64(out, entries.len() as u64);
    for (id, fields) in &entries {
        put_id(out, *id);
        put_u32(out, fields.len() as u32);
        for (f, v) in fields {
            put_bytes(out, f);
            put_bytes(out, v);
        }
    }
    put_u32(out, s.groups.len() as u32);
    for (name, g) in &s.groups {
        put_bytes(out, name);
        put_id(out, g.last_id);
        put_u64(out, g.entries_read as u64);
        put_u32(out, g.consumers.len() as u32);
        for (c, cons) in &g.consumers {
            put_bytes(out, c);
            put_u64(out, cons.seen_time as u64);
        }
        put_u64(out, g.pel.len() as u64);
        for (id, n) in &g.pel {
            put_id(out, *id);
            put_bytes(out, &n.consumer);
            put_u64(out, n.delivery_time as u64);
            put_u64(out, n.delivery_count);
        }
    }
    Some(())
}

fn decode_stream(b: &mut Body<'_>) -> Result<Box<dyn Object>, String> {
    let last_id = get_id(b)?;
    let first_id = get_id(b)?;
    let max_deleted = get_id(b)?;
    let entries_added = b.u64()?;
    let n = usize::try_from(b.u64()?).map_err(|_| "a stream's length overflows".to_string())?;
    if n > b.remaining().len() / 20 {
        return Err("a stream's length passes its record".to_string());
    }
    let mut s = Stream::new();
    let mut fields = Vec::new();
    for _ in 0..n {
        let id = get_id(b)?;
        let nf = b.count(8)?;
        fields.clear();
        for _ in 0..nf {
            fields.push((b.bytes()?, b.bytes()?));
        }
        s.append(id, &fields)
            .map_err(|_| "stream entries out of order".to_string())?;
    }
    if last_id < s.last_id {
        return Err("a stream's last ID is below its last entry".to_string());
    }
    s.last_id = last_id;
    s.first_id = first_id;
    s.max_deleted = max_deleted;
    s.entries_added = entries_added;
    let groups = b.count(40)?;
    for _ in 0..groups {
        let name = b.bytes()?;
        let glast = get_id(b)?;
        let read = b.u64()? as i64;
        let nc = b.count(12)?;
        let mut consumers = Vec::with_capacity(nc);
        for _ in 0..nc {
            consumers.push((b.bytes()?, b.u64()? as i64));
        }
        let np = usize::try_from(b.u64()?).map_err(|_| "a PEL overflows".to_string())?;
        if np > b.remaining().len() / 36 {
            return Err("a PEL passes its record".to_string());
        }
        let mut pending = Vec::with_capacity(np);
        for _ in 0..np {
            let id = get_id(b)?;
            let c = b.bytes()?;
            pending.push((id, c, b.u64()? as i64, b.u64()?));
        }
        s.restore_group(name, glast, read, &consumers, &pending)?;
    }
    Ok(Box::new(s))
}
